"""The project uses Django's public API only (STYLE.md): no edit of a database connection's
internals and no use of the ORM's compiler machinery, which the next Django release may
change without notice. Where the ORM is too slow, SQL through `connection.cursor()` is
fine, and `Model._meta`, `Model.from_db` and a field's `from_db_value` are documented.

A grep over the project's modules, with each pattern proven on a line it must catch. Two
habits of the same kind are caught too: clearing a prefetch cache, or a user's permission
cache, through their private attributes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("annotate", "evaluation", "jobs", "config", "sso")

# What each pattern finds, and a line it must catch.
PRIVATE = {
    r"\bvars\(\s*connection": (
        "Django's cached features or the connection's state edited through vars()",
        "flags = vars(connection.features)",
    ),
    r"\.features\.__dict__": (
        "Django's cached features edited",
        "connection.features.__dict__['uses_server_side_binding'] = True",
    ),
    r"\.features\.\w+\s*=[^=]": (
        "a feature flag assigned",
        "connection.features.uses_server_side_binding = True",
    ),
    r"\bcursor_factory\b": (
        "the driver connection's cursor class swapped",
        "raw.cursor_factory = ServerBindingCursor",
    ),
    r"\bconnection\.connection\b": (
        "the driver's connection under Django's",
        "raw = connection.connection",
    ),
    r"\bServerBindingCursor\b|django\.db\.backends\.\w+\.base\b": (
        "a database backend's internals imported",
        "from django.db.backends.postgresql.base import ServerBindingCursor",
    ),
    r"\bget_converters\b|\bapply_converters\b": (
        "the compiler's converters",
        "rows = compiler.apply_converters(rows, compiler.get_converters(cols))",
    ),
    r"\bops\.compiler\(|\.get_compiler\(": (
        "a SQL compiler built by hand",
        'compiler = connection.ops.compiler("SQLCompiler")(query, connection, "default")',
    ),
    r"\bQuery\(\s*None|django\.db\.models\.sql\b": (
        "the ORM's internal Query",
        "from django.db.models.sql import Query",
    ),
    r"\.get_col\(": (
        "a field's column expression for the compiler",
        "cols = [field.get_col(alias) for field in fields]",
    ),
    r"\b_prefetched_objects_cache\b": (
        "a prefetch cache read or cleared by hand (refresh_from_db(fields=[...]) drops one)",
        'cache = getattr(instance, "_prefetched_objects_cache", None)',
    ),
    r"\b_(user_)?perm_cache\b": (
        "Django's cache of a user's permissions edited (read the user again instead)",
        'for cache in ("_perm_cache", "_user_perm_cache"): user.__dict__.pop(cache, None)',
    ),
}


def offences(text: str) -> list[tuple[int, str, str]]:
    """(line number, line, what it does) for each line of `text` a pattern finds."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, (what, _) in PRIVATE.items():
            if re.search(pattern, line):
                found.append((number, line.strip(), what))
    return found


def test_no_project_module_reaches_into_django_s_private_state():
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for number, line, what in offences(path.read_text()):
                found.append(f"{path.relative_to(ROOT)}:{number}: {what}: {line}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("pattern", PRIVATE)
def test_each_pattern_catches_its_example(pattern):
    what, example = PRIVATE[pattern]
    assert re.search(pattern, example), what


def test_the_public_api_the_project_uses_is_not_caught():
    allowed = """
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
        if connection.vendor == "postgresql" and connection.features.has_native_uuid_field:
        fields = [f.attname for f in model._meta.concrete_fields]
        instance = model.from_db(connection.alias, names, values)
        value = field.from_db_value(value, field, connection)
        connection_created.connect(handler)
        instance.refresh_from_db(fields=["claims", "retrieved"])
        user = get_user_model().objects.get(pk=user.pk)
    """
    assert offences(allowed) == []
