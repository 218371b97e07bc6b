"""Model fields the apps share: jobs is at the bottom, so any app may use them."""

from __future__ import annotations

from django.db import models
from psycopg.types.json import Json


class OrderedJSONField(models.JSONField):
    """JSON kept as written, key order included: PostgreSQL's jsonb (JSONField's type there)
    reorders an object's keys by length, so a report read back listed its variants, slices and
    stages in another order than it was computed in, and a page showed them so. Stored in a
    ``json`` column on PostgreSQL, which keeps the text; nothing queries inside it."""

    def db_type(self, connection):
        return "json" if connection.vendor == "postgresql" else super().db_type(connection)

    def get_db_prep_value(self, value, connection, prepared=False):
        if connection.vendor != "postgresql" or value is None:
            return super().get_db_prep_value(value, connection, prepared)
        return Json(value if prepared else self.get_prep_value(value))

    def from_db_value(self, value, expression, connection):
        if value is not None and not isinstance(value, str):
            return value  # psycopg decodes a json column itself, keeping the order
        return super().from_db_value(value, expression, connection)
