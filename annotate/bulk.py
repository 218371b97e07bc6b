"""Fast bulk inserts for imports: ids allocated up front, rows written with COPY on PostgreSQL.

Django's bulk_create builds a model instance per row and a parameterised INSERT per batch;
for a 300,000-row bundle that is most of the import time. Here rows are plain tuples, ids
come from the table's own sequence (so foreign keys can be filled before anything is
written), and PostgreSQL receives them through COPY. SQLite, the zero-setup default, gets
executemany. Both run inside the caller's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, models


def allocate_ids(model: type[models.Model], count: int) -> list[int]:
    """Reserve `count` primary keys for `model`. Call inside a transaction."""
    if count <= 0:
        return []
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                [table, count],
            )
            return [row[0] for row in cursor.fetchall()]
        # SQLite: the import transaction holds the write lock (IMMEDIATE), so max(id) is stable.
        cursor.execute(f'SELECT COALESCE(MAX(id), 0) FROM "{table}"')
        first = cursor.fetchone()[0] + 1
        return list(range(first, first + count))


def _db_value(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return value


def insert_rows(
    model: type[models.Model], columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> int:
    """Insert rows (tuples in `columns` order, dict/list values stored as JSON)."""
    table = model._meta.db_table
    column_list = ", ".join(f'"{name}"' for name in columns)
    count = 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            raw = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
            with raw.copy(f'COPY "{table}" ({column_list}) FROM STDIN') as copy:
                for row in rows:
                    copy.write_row([_db_value(v) for v in row])
                    count += 1
            return count
        placeholders = ", ".join(["%s"] * len(columns))
        sql = f'INSERT INTO "{table}" ({column_list}) VALUES ({placeholders})'
        batch: list[list[Any]] = []
        for row in rows:
            batch.append([_db_value(v) for v in row])
            if len(batch) >= 5000:
                cursor.executemany(sql, batch)
                count += len(batch)
                batch.clear()
        if batch:
            cursor.executemany(sql, batch)
            count += len(batch)
    return count


def analyze(models_: Iterable[type[models.Model]]) -> None:
    """Refresh the planner's statistics after a bulk load. Autovacuum would, but only a minute
    or so later: until then PostgreSQL plans the labelling screen's reads against a table it
    believes empty (sequential scans where the foreign-key indexes should serve)."""
    if connection.vendor != "postgresql":
        return
    tables = ", ".join(f'"{model._meta.db_table}"' for model in models_)
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {tables}")
