"""Model instances from hand-written SQL, for the reads every labelling request makes.

Through the ORM, a draft save's task lookup took 1.2 ms in process and its claim read 1.4 ms,
of which the database needed about 0.1 ms each: the rest was Python building and compiling
the queries, at every request. Written out, the same statements take 0.2 and 0.3 ms. So the
task views' reads (annotate.labelling.selectors.reviewer_task, claim_to_save) are SQL run through
`connection.cursor()`, and this module turns their rows back into what the ORM would have
returned, with Django's public API only: `Model.from_db` builds each instance, and each value
is read as its field documents.

A row holds several models joined (an assignment with its answer and project, as select_related
returns them; a claim with its label, once per citation). The columns come from the models'
metadata (the `_meta` API), so a field added to a model is read here too. What the database
driver returns is already the ORM's type for most fields: integers, text, floats, and booleans
(SQLite's driver reads a column declared `bool` as one, for Django). Two kinds need a step:

- a field with `from_db_value` (JSONField: the database returns its text) passes through it,
  as the ORM passes it;
- a datetime arrives naive from a database without time zones (SQLite): Django stores it in
  the database's TIME_ZONE, UTC unless DATABASES sets one (Django's documentation, "TIME_ZONE"
  under DATABASES), so it is made aware in that zone. PostgreSQL returns it aware.

Any other kind of field (a date, a decimal, a UUID: none read here yet, and some come back
as text from SQLite) is refused when a statement's columns are declared, at import, rather
than read with a type nobody checked. tests/annotate/test_rows.py holds the ORM queries
these statements replace and checks that both return the same values of the same types, for
every person and every kind of task, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import datetime
import zoneinfo
from collections.abc import Callable

from django.conf import settings
from django.db import connection, models
from django.db.models import Model
from django.utils import timezone

# Fields whose value the driver returns as the ORM's type on SQLite and PostgreSQL alike (the
# kinds tests/annotate/test_rows.py reads on both).
AS_RETURNED = (
    models.AutoField,  # and BigAutoField, SmallAutoField
    models.BooleanField,
    models.CharField,  # and SlugField, EmailField
    models.FloatField,
    models.IntegerField,  # and every integer field
    models.TextField,
)


class Columns:
    """The SELECT list of a statement that joins `models`, given as (alias, model) or (alias,
    model, fields left out), and how to turn its rows into instances. Columns after the
    models' (`extra`) are returned as they are."""

    def __init__(self, *joined: tuple):
        self.parts = []
        self.names = []
        self.readers: list[tuple[int, Callable]] = []
        for alias, model, *rest in joined:
            left_out = set(rest[0]) if rest else set()
            fields = [f for f in model._meta.concrete_fields if f.attname not in left_out]
            names = [f.attname for f in fields]
            self.parts.append((model, names, names.index(model._meta.pk.attname)))
            for field in fields:
                reader = _reader(field)
                if reader is not None:
                    self.readers.append((len(self.names), reader))
                # Both databases take an identifier in double quotes, as Django writes it.
                self.names.append(f'{alias}."{field.column}"')

    def __str__(self) -> str:
        """The list itself."""
        return ", ".join(self.names)

    def read(self, rows) -> list[tuple[list[Model | None], list]]:
        """For each row: one instance per model (None for a model whose primary key is NULL,
        a LEFT JOIN that matched nothing), and the extra columns."""
        return [self._split(self._convert(row)) for row in rows]

    def _convert(self, row) -> list:
        row = list(row)
        for index, reader in self.readers:
            if row[index] is not None:
                row[index] = reader(row[index])
        return row

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


def _reader(field) -> Callable | None:
    """What a (non-NULL) value of `field` goes through, or None when it is read as returned."""
    if hasattr(field, "from_db_value"):
        return lambda value: field.from_db_value(value, field, connection)
    if isinstance(field, models.DateTimeField):
        return _aware if settings.USE_TZ else None
    if isinstance(field, models.ForeignKey):
        # The key's value is its target's, and the project's keys all point at primary keys.
        return _reader(field.related_model._meta.pk)
    if isinstance(field, AS_RETURNED):
        return None
    raise TypeError(
        f"annotate.labelling.rows does not read {type(field).__name__} ({field}): its value may "
        "differ from the ORM's on some database; read the model through the ORM, or teach "
        "annotate.labelling.rows the field and extend tests/annotate/test_rows.py to it."
    )


def _aware(value: datetime.datetime) -> datetime.datetime:
    if timezone.is_aware(value):
        return value
    zone = settings.DATABASES[connection.alias].get("TIME_ZONE")
    return timezone.make_aware(value, zoneinfo.ZoneInfo(zone) if zone else datetime.UTC)
