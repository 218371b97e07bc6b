"""Fast bulk inserts for imports: ids allocated up front, rows written with COPY on PostgreSQL.

Django's bulk_create builds a model instance per row and a parameterised INSERT per batch;
for a 300,000-row bundle that is most of the import time. Here rows are plain tuples, ids
come from the table's own sequence (so foreign keys can be filled before anything is
written), and PostgreSQL receives them through COPY. SQLite, the zero-setup default, gets
executemany. Both run inside the caller's transaction.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import DatabaseError, connection, models, transaction

logger = logging.getLogger(__name__)


def allocate_ids(model: type[models.Model], count: int) -> list[int]:
    """Reserve `count` primary keys for `model`. Call inside a transaction."""
    if count <= 0:
        return []
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # The sequence is named once: `nextval(pg_get_serial_sequence(...))` in the
            # select list looked it up again for every row, 9x slower (0.68 s per 100,000).
            cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
            sequence = cursor.fetchone()[0]
            cursor.execute(
                "SELECT nextval(%s::regclass) FROM generate_series(1, %s)", [sequence, count]
            )
            return [row[0] for row in cursor.fetchall()]
        # SQLite: the import transaction holds the write lock (IMMEDIATE), so max(id) is stable.
        cursor.execute(f'SELECT COALESCE(MAX(id), 0) FROM "{table}"')
        first = cursor.fetchone()[0] + 1
        return list(range(first, first + count))


def _encoder(model: type[models.Model], columns: Sequence[str]):
    """A function turning a row into what the database takes: the JSON columns' values
    encoded, the rest as they are (the row itself when there is no JSON column)."""
    by_column = {f.column: f for f in model._meta.concrete_fields}
    json_at = [i for i, name in enumerate(columns) if isinstance(by_column[name], models.JSONField)]
    if not json_at:
        return lambda row: row

    def encode(row: Sequence[Any]) -> list[Any]:
        out = list(row)
        for i in json_at:
            if out[i] is not None:
                out[i] = json.dumps(out[i], ensure_ascii=False)
        return out

    return encode


def insert_rows(
    model: type[models.Model], columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> int:
    """Insert rows (tuples in `columns` order, values of JSON fields stored as JSON)."""
    table = model._meta.db_table
    column_list = ", ".join(f'"{name}"' for name in columns)
    encode = _encoder(model, columns)
    count = 0
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            raw = cursor.cursor  # the psycopg 3 cursor under Django's wrapper
            with raw.copy(f'COPY "{table}" ({column_list}) FROM STDIN') as copy:
                for row in rows:
                    copy.write_row(encode(row))
                    count += 1
            return count
        placeholders = ", ".join(["%s"] * len(columns))
        sql = f'INSERT INTO "{table}" ({column_list}) VALUES ({placeholders})'
        batch: list[list[Any]] = []
        for row in rows:
            batch.append(encode(row))
            if len(batch) >= 5000:
                cursor.executemany(sql, batch)
                count += len(batch)
                batch.clear()
        if batch:
            cursor.executemany(sql, batch)
            count += len(batch)
    return count


def insert_instances(model: type[models.Model], objs: Sequence[models.Model]) -> None:
    """Insert unsaved instances of `model` through insert_rows, each given its primary key
    first: what bulk_create does, without its per-value adaptation (on PostgreSQL, Django
    5.2 sends a batch as arrays that psycopg quotes value by value in Python: 2.7 s of a
    40,000-label import). Defaults are the constructor's; auto_now_add fields are stamped as
    save() would. No signals are sent and no audit record is made: for models without
    either."""
    if not objs:
        return
    fields = model._meta.concrete_fields
    for obj, pk in zip(objs, allocate_ids(model, len(objs)), strict=True):
        obj.pk = pk
        obj._state.adding = False
    # psycopg adapts Python values itself; SQLite takes Django's (a datetime as UTC text).
    adapted = {
        f.attname
        for f in fields
        if connection.vendor != "postgresql" and not isinstance(f, models.JSONField)
    }

    def row(obj) -> list[Any]:
        values = []
        for f in fields:
            value = f.pre_save(obj, add=True)
            values.append(f.get_db_prep_save(value, connection) if f.attname in adapted else value)
        return values

    insert_rows(model, [f.column for f in fields], (row(obj) for obj in objs))


def update_rows(
    model: type[models.Model],
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    by: Sequence[str] = (),
) -> int:
    """Set `columns` of existing rows: each row is (pk, *values in `columns` order), or
    (*values of the `by` columns, *values) to find rows by other columns than the key;
    plain values (no JSON field). One parameterised UPDATE run for every row (executemany:
    psycopg pipelines them). bulk_update builds a CASE expression over a batch's rows for
    each column instead, in Python: 4.7 s of CPU to number 10,000 answers."""
    table = model._meta.db_table
    keys = list(by) or [model._meta.pk.column]
    assignments = ", ".join(f'"{name}" = %s' for name in columns)
    where = " AND ".join(f'"{name}" = %s' for name in keys)
    sql = f'UPDATE "{table}" SET {assignments} WHERE {where}'
    params = [(*row[len(keys) :], *row[: len(keys)]) for row in rows]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)
    return len(params)


def after_commit(
    *, analyze: Iterable[type[models.Model]] = (), vacuum: Iterable[type[models.Model]] = ()
) -> None:
    """Once the caller's transaction commits, refresh the planner's statistics of the tables a
    bulk write filled (ANALYZE) and clear the dead rows of those it updated or deleted in bulk
    (VACUUM ANALYZE). Autovacuum would, a minute or so later -- and is off on some servers:
    until then PostgreSQL plans the labelling screen's reads against a table it believes
    empty, and an `open_labelling` that rewrote every answer left 20,000 dead rows behind.

    After commit, because VACUUM cannot run in a transaction and ANALYZE inside one would hold
    its locks to the end. Callers pass only the tables they changed: nothing when nothing was
    written. A no-op on SQLite."""
    analyze_tables = {m._meta.db_table for m in analyze}
    vacuum_tables = {m._meta.db_table for m in vacuum}
    if connection.vendor != "postgresql" or not (analyze_tables or vacuum_tables):
        return

    def run() -> None:
        # Looked up when it runs: tests/hooked_worker.py breaks the connection inside it.
        try:
            maintain(analyze_tables, vacuum_tables)
        except DatabaseError:
            # Upkeep of data already committed: the work that wrote it succeeded, and says so.
            # Autovacuum catches up later; a connection that died with it is replaced.
            logger.warning(
                "after-commit VACUUM/ANALYZE of %s failed; the committed write stands",
                ", ".join(sorted(analyze_tables | vacuum_tables)),
                exc_info=True,
            )
            connection.close_if_unusable_or_obsolete()

    transaction.on_commit(run)


def maintain(analyze_tables: set[str], vacuum_tables: set[str]) -> None:
    """VACUUM (ANALYZE) `vacuum_tables`, ANALYZE the rest of `analyze_tables`."""
    with connection.cursor() as cursor:
        for table in sorted(vacuum_tables):
            cursor.execute(f'VACUUM (ANALYZE) "{table}"')
        rest = sorted(analyze_tables - vacuum_tables)
        if rest:
            cursor.execute("ANALYZE " + ", ".join(f'"{t}"' for t in rest))
