"""Model instances from hand-written SQL, for the reads every labelling request makes.

Through the ORM, a draft save's task lookup took 1.2 ms in process and its claim read 1.4 ms,
of which the database needed about 0.1 ms each: the rest was Python building and compiling
the queries, at every request. Written out, the same statements take 0.2 and 0.3 ms. So the
task views' reads (annotate.selectors.reviewer_task, claim_to_save) are SQL, and this module
turns their rows back into what the ORM would have returned.

A row holds several models joined (an assignment with its answer and project, as select_related
returns them; a claim with its label, once per citation). The columns come from the models'
metadata, so a field added to a model is read here too; every value passes through the
converters Django's compiler applies (as RawQuerySet does), so the instances are typed as the
ORM's, on SQLite and PostgreSQL alike. tests/annotate/test_rows.py holds the ORM queries these
statements replace and checks that both return the same, for every person and every kind of
task.
"""

from __future__ import annotations

from django.db import connection
from django.db.models import Model
from django.db.models.sql import Query


class Columns:
    """The SELECT list of a statement that joins `models`, given as (alias, model) or (alias,
    model, fields left out), and how to turn its rows into instances. Columns after the
    models' (`extra`) are returned as they are."""

    def __init__(self, *models: tuple):
        self.parts = []
        self.cols = []
        for alias, model, *rest in models:
            left_out = set(rest[0]) if rest else set()
            fields = [f for f in model._meta.concrete_fields if f.attname not in left_out]
            names = [f.attname for f in fields]
            self.parts.append((model, names, names.index(model._meta.pk.attname)))
            self.cols += [field.get_col(alias) for field in fields]
        self._sql: dict[str, str] = {}

    def __str__(self) -> str:
        """The list itself, quoted for the connection's database."""
        vendor = connection.vendor
        if vendor not in self._sql:
            quote = connection.ops.quote_name
            names = (f"{col.alias}.{quote(col.target.column)}" for col in self.cols)
            self._sql[vendor] = ", ".join(names)
        return self._sql[vendor]

    def read(self, rows) -> list[tuple[list[Model | None], list]]:
        """For each row: one instance per model (None for a model whose primary key is NULL,
        a LEFT JOIN that matched nothing), and the extra columns."""
        compiler = connection.ops.compiler("SQLCompiler")(Query(None), connection, connection.alias)
        converters = compiler.get_converters(self.cols)
        return [self._split(row) for row in compiler.apply_converters(rows, converters)]

    def _split(self, row: list) -> tuple[list[Model | None], list]:
        found, start = [], 0
        for model, names, primary in self.parts:
            values = row[start : start + len(names)]
            start += len(names)
            if values[primary] is None:
                found.append(None)
            else:
                found.append(model.from_db(connection.alias, names, values))
        return found, row[start:]
