"""`field__any=ids`: membership in a list of integer keys, as one parameter.

Django's `__in` prepares every value through the field and sends each as its own parameter,
which psycopg then adapts one by one. For the gold export's chunks (500 answers, 1,000
assignments) and the whole-project derivations behind the adjudication queue (20,000
assignments at 10,000 answers) that cost about a second of Python per 100,000 rows. On
PostgreSQL the list goes as one `bigint[]` parameter (`= ANY(%s)`, which uses the same
indexes as `IN`); elsewhere it is an `IN` list of plain parameters.

`field__among=ids` is the same membership for a chunk: a few hundred keys that sit together
in a large table (500 answers of a 10,000-answer project, their claims, labels and
citations). For 500 keys PostgreSQL 15 prices the index (a descent per key, then the rows'
pages) above one sequential scan of the table, so every chunk of an export read every
claim: 8.6 ms for a chunk's claims, against 1.1 ms through the index. `__among` adds the
list's bounds (`BETWEEN min AND max`). They change nothing in what is read (the index still
descends once per key; the bounds are redundant there), but the planner multiplies the two
conditions' selectivities, expects that share of the chunk's rows (248 of 5,000 for a
chunk a twentieth of the table), and takes the index.
The estimate is low on purpose, which is why `__among` is for chunks only: over a list that
spans a project it could pick nested loops where a hash join is the better plan.
"""

from __future__ import annotations

from django.db.models import Field, ForeignObject, Lookup


class AnyOf(Lookup):
    lookup_name = "any"
    prepare_rhs = False

    def as_sql(self, compiler, connection):
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = [int(value) for value in self.rhs]
        if connection.vendor == "postgresql":
            return f"{lhs} = ANY(%s::bigint[])", [*lhs_params, values]
        if not values:
            return "1 = 0", list(lhs_params)
        placeholders = ", ".join(["%s"] * len(values))
        return f"{lhs} IN ({placeholders})", [*lhs_params, *values]


class AmongOf(AnyOf):
    lookup_name = "among"

    def as_sql(self, compiler, connection):
        """`__any`'s condition, and on PostgreSQL the list's bounds."""
        sql, params = super().as_sql(compiler, connection)
        if connection.vendor != "postgresql" or not self.rhs:
            return sql, params
        lhs, lhs_params = self.process_lhs(compiler, connection)
        values = [int(value) for value in self.rhs]
        return (
            f"({sql} AND {lhs} BETWEEN %s AND %s)",
            [*params, *lhs_params, min(values), max(values)],
        )


for lookup in (AnyOf, AmongOf):
    Field.register_lookup(lookup)
    # A relation's lookups are its own (ForeignObject does not inherit Field's).
    ForeignObject.register_lookup(lookup)
