"""safe_json.loads walks a parsed document for problems only when its text could hold one
(_may_have_problems): the shortcut must refuse exactly what the walk refuses, with the same
messages. Hypothesis writes documents with escapes, control characters, surrogates,
non-finite and huge numbers, keys given twice and deep nesting, and compares loads with the
shortcut against loads that always walks."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotate.common import safe_json

ODD_TEXT = st.text(alphabet=st.sampled_from(["a", "é", " ", "\x00", "\x1f", "\t", "\ud800", '"']))
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    ODD_TEXT,
)
KEYS = st.one_of(st.sampled_from(["a", "b"]), st.text(max_size=4), ODD_TEXT)


@st.composite
def scalar_text(draw) -> str:
    if draw(st.booleans()):
        return draw(st.sampled_from(["1e400", "-1e999", "12345678901234567890123", "0.5"]))
    return json.dumps(draw(SCALARS), ensure_ascii=draw(st.booleans()))


def containers(children):
    key = KEYS.map(json.dumps)
    return st.one_of(
        st.lists(children, max_size=4).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.lists(st.tuples(key, children), max_size=4).map(
            lambda kvs: "{" + ",".join(f"{k}:{v}" for k, v in kvs) + "}"
        ),
        st.tuples(st.integers(0, 40), children).map(lambda nv: "[" * nv[0] + nv[1] + "]" * nv[0]),
    )


DOCUMENTS = st.recursive(scalar_text(), containers, max_leaves=12)


def outcome(text: str):
    try:
        return ("ok", safe_json.loads(text))
    except safe_json.UnsafeJSON as exc:
        return ("refused", [p.text() for p in exc.problems], exc.more)
    except json.JSONDecodeError as exc:
        return ("not json", exc.msg)


def walking_always(text: str):
    with mock.patch.object(safe_json, "_may_have_problems", lambda *args: True):
        return outcome(text)


@settings(max_examples=400, deadline=None)
@given(DOCUMENTS)
def test_loads_refuses_what_the_full_walk_refuses_and_nothing_else(text):
    assert outcome(text) == walking_always(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "\\u0000"}',  # an escape that decodes to NUL
        '{"a": "\\ud800"}',  # a lone surrogate, escaped
        '{"\\u0001": 1}',  # in a key
        '{"a": 1, "a": 2}',  # a key given twice
        '{"a": NaN}',
        '{"a": 1e400}',
        '{"a": 123456789012345678901234}',
        "[" * 40 + "]" * 40,  # deeper than 32
        '{"a": "' + "[" * 40 + '"}',  # brackets in a string are not nesting
        '{"a": "\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}',  # nor after an escaped quote
        '{"a": "é\ud800"}',  # a lone surrogate, raw: a str from a caller, no backslash
        '{"\udfff": 1}',  # in a key
        '{"a": "\u00e9\x00"}',  # a raw control character: not JSON
    ],
)
def test_the_shortcut_agrees_on_each_kind_of_problem(text):
    assert outcome(text) == walking_always(text)
    if "\ud800" in text or "\udfff" in text:
        assert outcome(text)[0] == "refused"


def test_a_clean_document_is_not_walked():
    claims = [{"text": "é", "start": 0, "end": 1}] * 40  # 41 brackets, nested two deep
    line = json.dumps({"claims": claims, "n": 1.5}, ensure_ascii=False)
    with mock.patch.object(safe_json, "_problems", side_effect=AssertionError("walked")):
        assert safe_json.loads(line)["n"] == 1.5
