"""What the property-based fuzzers share (issue #15): hostile values, mutations of real fixture
lines, random JSON, and the hypothesis settings that bound the run.

Mutating real lines finds the deep bugs: a bundle line that is valid but for one value reaches
the code behind the parser, where a random object never gets. Random objects find what the
parser itself assumes about shapes. Both are drawn from the same hostile values: what broke a
project in the adversarial pass (NaN, 1e400, NUL, lone surrogates, deep nesting, integers beyond
a column, over-long ids, lists where strings go) and their neighbours at the limits.

Budgets: the `fuzz` profile (the default, what `make test` runs) is derandomized, so a run
takes about the same time and finds the same things every time; CLAIMDESK_FUZZ=long runs 20
times the examples, randomized, to look further:

    CLAIMDESK_FUZZ=long .venv/bin/python -m pytest -k fuzz
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from typing import Any

from django.db import transaction
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from annotate.imports.lines import BundleInvalid

settings.register_profile(
    "fuzz",
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.function_scoped_fixture,
    ],
)
settings.register_profile("long", parent=settings.get_profile("fuzz"), derandomize=False)
PROFILE = os.environ.get("CLAIMDESK_FUZZ", "fuzz")
SCALE = 20 if PROFILE == "long" else 1


def fuzz(examples: int) -> settings:
    """The profile's settings with this test's example budget."""
    return settings(settings.get_profile(PROFILE), max_examples=examples * SCALE)


class Raw(str):
    """JSON text to put into a line as it is: what json.dumps would never write."""


RAW_TOKENS = [
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1e999",
    "1" + "0" * 400,
    "9" * 5000,
    '"\\ud800"',
    '"tail \\udfff"',
    '"a\\u0000b"',
    '"\\u0007"',
    '"\\u001b[31mred"',
    "[" * 33 + "]" * 33,
    "[" * 3000 + "]" * 3000,
    '{"a": 1, "a": 2}',
]
PLAIN_HOSTILE: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    2,
    3,
    1.5,
    -0.0,
    1e308,
    2**31 - 1,
    2**31,
    2**63,
    "",
    " ",
    "²",
    "٢",
    "🙂",
    "tab\tnew\nline\r",
    "x" * 201,
    "x" * 256,
    "x" * 20_001,
    "x" * 200_001,
    [],
    {},
    [1, 2],
    ["a", "a"],
    [[1]],
    [{}],
    {"a": []},
    {"": None},
    "supported",
    "unsupported",
    "citation_not_found",
    "notes-17",
]
HOSTILE = st.one_of(
    st.sampled_from(PLAIN_HOSTILE),
    st.sampled_from([Raw(t) for t in RAW_TOKENS]),
    st.text(max_size=20),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12) | HOSTILE,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


def dumps(value: Any) -> str:
    """json.dumps, with Raw values written as their text (NaN and floats beyond range as the
    tokens Python writes for them, which is what a careless exporter does)."""
    raws: list[str] = []

    def swap(v):
        if isinstance(v, Raw):
            raws.append(str(v))
            return f"@@raw{len(raws) - 1}@@"
        if isinstance(v, dict):
            return {k: swap(x) for k, x in v.items()}
        if isinstance(v, list):
            return [swap(x) for x in v]
        return v

    text = json.dumps(swap(value))
    for i, raw in enumerate(raws):
        text = text.replace(f'"@@raw{i}@@"', raw, 1)
    return text


def _paths(value: Any, *, max_depth: int = 8) -> list[tuple]:
    """Every (path to a container, key) in a JSON value down to max_depth: where a value can
    be replaced. Iterative, since a line mutated before may hold thousands of levels."""
    out = []
    stack: list[tuple[Any, tuple]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if len(path) >= max_depth:
            continue
        pairs = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in pairs:
            out.append((path, key))
            if isinstance(child, (dict, list)):
                stack.append((child, (*path, key)))
    return out


def _at(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


def mutate_object(obj: dict, data: st.DataObject, field_names: list[str]) -> dict:
    """One to three changes to a copy of a fixture line's object: a value replaced by a hostile
    one (anywhere, however deep), a key removed, a key added."""
    obj = json.loads(json.dumps(obj))
    for _ in range(data.draw(st.integers(1, 3), label="changes")):
        how = data.draw(st.sampled_from(["set", "set", "set", "delete", "add"]), label="how")
        paths = _paths(obj)
        if how == "add" or not paths:
            key = data.draw(st.sampled_from([*field_names, "zzz"]), label="key")
            container_path = data.draw(
                st.sampled_from(
                    [()] + [p + (k,) for p, k in paths if isinstance(_at(obj, p)[k], dict)]
                ),
                label="into",
            )
            _at(obj, container_path)[key] = copy.deepcopy(data.draw(HOSTILE, label="value"))
            continue
        parent, key = data.draw(st.sampled_from(paths), label="path")
        container = _at(obj, parent)
        if how == "delete":
            del container[key]
        else:
            # a copy: a later change may go inside it, and the sampled constant must stay
            container[key] = copy.deepcopy(data.draw(HOSTILE, label="value"))
    return obj


def mutate_lines(
    lines: list[str], data: st.DataObject, field_names: list[str], *, keep_first: bool = False
) -> list[bytes | str]:
    """A fixture file with some lines mutated: values inside objects (mutate_object), or the
    line as text (cut short, not UTF-8, a key given twice, a byte-order mark, blank), or lines
    duplicated, dropped or swapped. Given as bytes or str, as files and API bodies are."""
    lines = list(lines)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        start = 1 if keep_first and len(lines) > 1 else 0
        i = data.draw(st.integers(start, len(lines) - 1), label="line")
        how = data.draw(
            st.sampled_from(
                ["object"] * 6 + ["cut", "bytes", "twice", "bom", "blank", "dup", "drop", "swap"]
            ),
            label="mutation",
        )
        line = lines[i]
        if how == "object":
            try:
                obj = json.loads(line)
            except (ValueError, TypeError, RecursionError):
                continue
            if isinstance(obj, dict):
                try:
                    lines[i] = dumps(mutate_object(obj, data, field_names))
                except RecursionError:  # a line made thousands of levels deep before
                    continue
        elif how == "cut" and isinstance(line, str):
            lines[i] = line[: data.draw(st.integers(0, max(0, len(line) - 1)), label="at")]
        elif how == "bytes":
            lines[i] = (line.encode() if isinstance(line, str) else line) + b"\xff\xfe"
        elif how == "twice" and isinstance(line, str) and line.startswith("{"):
            lines[i] = '{"type": "passage", ' + line[1:]
        elif how == "bom" and isinstance(line, str):
            lines[i] = "\ufeff" + line
        elif how == "blank":
            lines[i] = ""
        elif how == "dup":
            lines.insert(i, line)
        elif how == "drop" and len(lines) > 1:
            del lines[i]
        elif how == "swap":
            j = data.draw(st.integers(0, len(lines) - 1), label="with")
            lines[i], lines[j] = lines[j], lines[i]
    as_bytes = data.draw(st.booleans(), label="bytes")
    return [
        (line.encode("utf-8", "surrogatepass") if as_bytes and isinstance(line, str) else line)
        for line in lines
    ]


def random_objects(field_names: list[str], types: list[str]) -> st.SearchStrategy[list[str]]:
    """Lines of random objects whose keys are mostly the format's own field names."""
    value = st.one_of(HOSTILE, JSON_VALUES)
    obj = st.fixed_dictionaries(
        {"type": st.one_of(st.sampled_from(types), HOSTILE)},
        optional={name: value for name in field_names if name != "type"},
    )
    return st.lists(obj.map(dumps), min_size=1, max_size=6)


def check_refusal(exc: BundleInvalid) -> None:
    """A refusal says what and where: every error on a line (0 for the file as a whole), with
    a message that can be shown and sent (encodable, not an echo of a huge value)."""
    assert exc.errors
    for error in exc.errors:
        assert isinstance(error.line, int) and error.line >= 0
        assert isinstance(error.message, str) and error.message.strip()
        str(error).encode("utf-8")  # no lone surrogate came back in a message
        assert len(error.message) <= 1_000, error.message[:200]
    exc.grouped()


class Rollback(Exception):
    pass


def in_savepoint(run: Callable[[], None]) -> None:
    """Run one example and undo it: the test's transaction holds every example, and each must
    start from the same project."""
    try:
        with transaction.atomic():
            run()
            raise Rollback
    except Rollback:
        pass
