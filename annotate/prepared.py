"""Prepared statements for the labelling hot path, on PostgreSQL.

Every request plans its statements afresh, and the labelling page's are small: its task lookup
(the assignment with its answer, case, project and the reviewer's membership) takes PostgreSQL
0.8 ms to plan and 0.05 ms to run. Inside `prepared_statements()` the request's connection
binds parameters on the server and prepares each statement the first time it runs, so a kept
connection (CONN_MAX_AGE) reuses it: once PostgreSQL has seen five runs, it plans it no more
when a generic plan costs no more than the custom ones did.

Only the reviewer's task views use it. Their statements look rows up by keys (a session, a
user, a task number, an answer's claims), so one generic plan serves every project, and they
carry few parameters. Everywhere else Django's default stays: parameters bound in the client,
nothing prepared. A report filters by project, and a generic plan chosen after a big project's
runs would scan whole tables for a small one; and an import or a report may pass more values
in one IN list than the 65,535 parameters a statement bound on the server can take.

DATABASE_PREPARED_STATEMENTS=false turns it off, for a connection pooler in transaction mode
that does not carry prepared statements (PgBouncer before 1.21, or max_prepared_statements=0).
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import wraps

from django.conf import settings
from django.db import connection

# The cached property of Django's features that says where parameters are bound (see below).
FLAG = "uses_server_side_binding"
UNSET = object()


@contextmanager
def prepared_statements():
    """Statements run inside are bound on the server and prepared (PostgreSQL only)."""
    if connection.vendor != "postgresql" or not settings.DATABASE_PREPARED_STATEMENTS:
        yield
        return
    from django.db.backends.postgresql.base import ServerBindingCursor

    # As Django's own cursor() does before the first statement of a request: a connection the
    # server dropped is replaced now, so that it is the one set to prepare.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    raw = connection.connection
    # Django logs a statement (DEBUG, CaptureQueriesContext) from the SQL and its parameters
    # when this flag (a cached property) says they were bound on the server; else it reads
    # the text psycopg sent, which here holds $1, $2 in their place.
    flags = vars(connection.features)
    kept = raw.cursor_factory, raw.prepare_threshold, flags.get(FLAG, UNSET)
    # Django's cursor for OPTIONS server_side_binding; Django opens connections with
    # prepare_threshold None (never prepare), and 0 prepares each statement on its first run.
    raw.cursor_factory, raw.prepare_threshold, flags[FLAG] = ServerBindingCursor, 0, True
    try:
        yield
    finally:
        raw.cursor_factory, raw.prepare_threshold, flag = kept
        if flag is UNSET:
            flags.pop(FLAG, None)  # computed again from the settings when next read
        else:
            flags[FLAG] = flag


def with_prepared_statements(view):
    @wraps(view)
    def wrapper(*args, **kwargs):
        with prepared_statements():
            return view(*args, **kwargs)

    return wrapper
