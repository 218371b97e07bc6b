"""Prepared statements for the labelling hot path, on PostgreSQL.

Every request plans its statements afresh, and the labelling page's are small: its task lookup
(the assignment with its answer, case, project and the reviewer's membership) takes PostgreSQL
0.8 ms to plan and 0.05 ms to run. Inside `prepared_statements()` each statement is prepared on
the connection the first time it runs, so a kept connection (CONN_MAX_AGE) reuses it: once
PostgreSQL has seen five runs, it plans it no more when a generic plan costs no more than the
custom ones did.

Only the reviewer's task views use it. Their statements look rows up by keys (a session, a
user, a task number, an answer's claims), so a generic plan serves every project alike. A
report's statements filter by project, and a generic plan chosen after a big project's runs
would scan whole tables for a small one: everywhere else nothing is prepared (Django's default).

It needs server-side binding, which settings turn on for PostgreSQL unless
DATABASE_PREPARED_STATEMENTS=false: for a connection pooler in transaction mode that does not
carry prepared statements (PgBouncer before 1.21, or with max_prepared_statements = 0).
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import wraps

from django.db import connection


@contextmanager
def prepared_statements():
    """Statements run inside are prepared on the connection (when it binds on the server)."""
    if connection.vendor != "postgresql" or not connection.features.uses_server_side_binding:
        yield
        return
    # As Django's own cursor() does before the first statement of a request: a connection the
    # server dropped is replaced now, so that it is the one set to prepare.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    raw = connection.connection
    # Django opens connections with psycopg's prepare_threshold at None (never prepare); 0
    # prepares each statement on its first run.
    kept, raw.prepare_threshold = raw.prepare_threshold, 0
    try:
        yield
    finally:
        raw.prepare_threshold = kept


def with_prepared_statements(view):
    @wraps(view)
    def wrapper(*args, **kwargs):
        with prepared_statements():
            return view(*args, **kwargs)

    return wrapper
