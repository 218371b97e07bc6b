"""No foreign key of ours keeps an index of its own when a unique constraint or an index of its
model starts with it: the composite index serves every lookup by the key alone, and each extra
index is one more write for every row an import copies in (0.2 of 5.7 s for the bench's
100,000-claim bundle) and every label a reviewer saves."""

from __future__ import annotations

from django.apps import apps
from django.db import models

APPS = ("annotate", "evaluation", "jobs")
# Kept on purpose, with the reason at the field.
KEPT = {"Answer.project"}


def leading_fields(model) -> set[str]:
    """The first field of each unconditional composite index or unique constraint."""
    meta = model._meta
    composites = [
        list(c.fields)
        for c in meta.constraints
        if isinstance(c, models.UniqueConstraint) and c.fields and c.condition is None
    ]
    composites += [list(i.fields) for i in meta.indexes if i.fields and i.condition is None]
    composites += [list(fields) for fields in meta.unique_together]
    return {fields[0].lstrip("-") for fields in composites if len(fields) > 1}


def test_no_foreign_key_index_is_covered_by_a_composite_one():
    covered = []
    for app in APPS:
        for model in apps.get_app_config(app).get_models():
            if model.__name__.startswith("Historical"):
                continue  # django-simple-history's tables, written once per audited change
            leading = leading_fields(model)
            for field in model._meta.concrete_fields:
                is_key = isinstance(field, models.ForeignKey)
                name = f"{model.__name__}.{field.name}"
                if is_key and field.db_index and field.name in leading and name not in KEPT:
                    covered.append(name)
    assert not covered, f"give these db_index=False: {covered}"


def test_the_check_finds_a_covered_index():
    from annotate.models import Claim

    assert "answer" in leading_fields(Claim)
