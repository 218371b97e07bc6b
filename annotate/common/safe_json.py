"""Reading JSON that comes from outside: a bundle line, a judge's verdict, an API body.

Python's `json` accepts more than JSON and more than a database can store, and each excess has
broken a project for good or answered 500:

- `NaN`, `Infinity` and `-Infinity` are not JSON, and `1e400` silently becomes infinity; a
  non-finite number then fails every report that averages it, and an export writes `NaN`,
  which no JSON reader accepts;
- an integer of thousands of digits exceeds any column (and Python refuses to convert one of
  more than 4,300 digits);
- deep nesting raises RecursionError inside `json.loads`, or later in whatever walks the value;
- `\\u0000` decodes to a NUL character, which PostgreSQL text and jsonb cannot hold, and other C0
  control characters are invisible in every screen that shows them;
- `\\ud800` decodes to a lone surrogate, which cannot be encoded as UTF-8 at all;
- a key given twice keeps only its last value, silently dropping the first.

`loads` refuses all of these and says where: every problem comes with the path of the value
(`claims[1].text`, or `claims.1.text` for an API body), and several problems of one document
are reported together. Nothing here knows about bundles or fields: per-field limits (lengths,
column ranges) are the callers' job.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 32
# The widest integer column is a 64-bit bigint; no field of any file claimdesk reads has a
# meaning beyond it. Fields check their own column's narrower range.
MAX_INTEGER = 2**63 - 1
MAX_PROBLEMS = 10  # per document: the first few say what to fix; a thousand would drown them

# C0 control characters except tab, newline and carriage return, and the surrogate range:
# a surrogate left in a decoded str is always a lone one (a valid pair decodes to one char).
_BAD_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Problem:
    path: tuple[str | int, ...]
    message: str

    def where(self, *, style: str = "bundle") -> str:
        return format_path(self.path, style=style)

    def text(self, *, style: str = "bundle") -> str:
        where = self.where(style=style)
        return f"{where}: {self.message}" if where else self.message


class UnsafeJSON(ValueError):
    """Valid JSON syntax (or nearly) carrying values claimdesk refuses; `problems` says which
    and where."""

    def __init__(self, problems: list[Problem], more: int = 0):
        self.problems, self.more = problems, more
        super().__init__("; ".join(p.text() for p in problems))


def format_path(path: tuple[str | int, ...], *, style: str = "bundle") -> str:
    """("claims", 1, "text") as `claims[1].text` (bundle messages) or `claims.1.text` (the
    API's field paths)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]" if style == "bundle" else f".{part}"
        elif style == "bundle" and not part.isidentifier():
            out += f"[{_quote(part)}]"
        else:
            # A key is echoed escaped when it holds what it may not: a message must itself be
            # printable and encodable.
            key = json.dumps(part)[1:-1] if _BAD_CHAR.search(part) else part
            out += f".{key}" if out else key
    return out.removeprefix(".")


class _Marks(threading.local):
    """How many problem values (_NonFinite, _HugeInt, _DuplicateKeys) this thread's parses
    have made: `loads` compares before and after, and walks the value only when it has one,
    or when its text could hide another problem (_may_have_problems)."""

    made = 0


_marks = _Marks()


class _NonFinite:
    """What json handed us for NaN, Infinity, -Infinity or a float literal beyond the double
    range; kept as the text written so the message can quote it."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text
        _marks.made += 1


class _HugeInt(_NonFinite):
    __slots__ = ()


class _DuplicateKeys(dict):
    __slots__ = ("duplicates",)


def _parse_float(text: str):
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def _parse_int(text: str):
    # int() of more than 4,300 digits raises ValueError; anything over 20 is out of range.
    if len(text) > 20:
        return _HugeInt(text)
    value = int(text)
    return value if -MAX_INTEGER - 1 <= value <= MAX_INTEGER else _HugeInt(text)


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    duplicates = []
    for key, _ in pairs:
        if key in seen and key not in duplicates:
            duplicates.append(key)
        seen.add(key)
    out = _DuplicateKeys(obj)
    out.duplicates = duplicates
    _marks.made += 1
    return out


def loads(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads` for input from outside. Raises `json.JSONDecodeError` for text that is not
    JSON, and UnsafeJSON (with every problem's path, up to MAX_PROBLEMS) for non-finite or
    out-of-range numbers, nesting deeper than `max_depth`, control characters other than tab,
    newline and carriage return, lone surrogates, and keys given twice in one object."""
    made = _marks.made
    try:
        value = json.loads(
            text,
            parse_constant=_NonFinite,
            parse_float=_parse_float,
            parse_int=_parse_int,
            object_pairs_hook=_pairs,
        )
    except RecursionError:
        raise UnsafeJSON([Problem((), f"nested deeper than {max_depth} levels")]) from None
    if not _may_have_problems(text, made, max_depth):
        return value
    problems = list(_problems(value, max_depth))
    if problems:
        shown = problems[:MAX_PROBLEMS]
        raise UnsafeJSON(shown, more=len(problems) - len(shown))
    return value


def _may_have_problems(text: str, made: int, max_depth: int) -> bool:
    """Whether walking the value parsed from `text` could find a problem (`made`: the
    thread's count of problem values before the parse). Most documents are clean, and the
    walk visited every value of every line again in Python (6% of a bundle import's CPU).
    It can find nothing unless the parse made a problem value (a non-finite or
    out-of-range number, a key given twice); or the text holds a backslash (an escape may
    decode to a control character or a surrogate) or a surrogate; or the nesting goes deeper
    than `max_depth`. A raw control character cannot be in a text json parsed: strict json
    refuses one in a string, and outside strings only JSON's whitespace may stand. Nor can a
    surrogate be in an ASCII text, which str knows without reading it: most lines skip the
    search (a sixth of a bundle import's JSON time)."""
    if _marks.made != made or "\\" in text:
        return True
    if not text.isascii() and _BAD_CHAR.search(text):
        return True
    return _deeper_than(text, max_depth)


_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


def _deeper_than(text: str, max_depth: int) -> bool:
    """Whether containers nest deeper than `max_depth` (the outermost is at depth 1, as in
    _problems), for a text without backslashes that json has parsed. Without a backslash, a
    JSON string is a quote, anything but a quote, a quote: the text outside strings is every
    other piece between quotes."""
    if text.count("{") + text.count("[") <= max_depth:
        return False
    depth = 0
    for bracket in _NOT_BRACKETS.sub("", "".join(text.split('"')[0::2])):
        if bracket in "[{":
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False


def _problems(value: Any, max_depth: int) -> Iterator[Problem]:
    """Every problem, a container's own values before those nested deeper. Iterative: the
    value may be as deep as json's own recursion allowed, far beyond what a recursive walk
    could follow. Scalars are checked where they stand; only containers are stacked."""
    stack: list[tuple[Any, tuple[str | int, ...], int]] = [(value, (), 1)]
    while stack:
        item, path, depth = stack.pop()
        kind = type(item)
        if kind is str:
            if _BAD_CHAR.search(item):
                yield Problem(path, _string_problem(item))
            continue
        if kind is _NonFinite or kind is _HugeInt:
            yield Problem(path, _number_problem(item))
            continue
        if kind is not dict and kind is not _DuplicateKeys and kind is not list:
            continue
        if depth > max_depth:
            # Named by the field it starts in: the full path would be as deep as the value.
            yield Problem(path[:1], f"nested deeper than {max_depth} levels")
            continue
        if kind is _DuplicateKeys:
            for key in item.duplicates:
                yield Problem(
                    path, f"key {_quote(key)} appears twice (only one value could be kept)"
                )
        nested = []
        for key, child in enumerate(item) if kind is list else item.items():
            if kind is not list and _BAD_CHAR.search(key):
                yield Problem(path, f"key {_quote(key)}: {_string_problem(key)}")
            child_kind = type(child)
            if child_kind is str:
                if _BAD_CHAR.search(child):
                    yield Problem((*path, key), _string_problem(child))
            elif child_kind in _SCALARS:
                continue
            elif child_kind is _NonFinite or child_kind is _HugeInt:
                yield Problem((*path, key), _number_problem(child))
            else:
                nested.append((child, (*path, key), depth + 1))
        stack.extend(reversed(nested))


_SCALARS = frozenset({int, float, bool, type(None)})


def _number_problem(item: _NonFinite) -> str:
    if type(item) is _HugeInt:
        return (
            f"integer {_shorten(item.text)} is out of range (at most {MAX_INTEGER:,} in "
            "absolute value)"
        )
    return _non_finite(item.text)


def _non_finite(text: str) -> str:
    if text in ("NaN", "Infinity", "-Infinity"):
        return f"{text} is not a JSON number: write null, or a finite number"
    return f"number {_shorten(text)} is out of range (beyond ±1.8e308, the largest a float holds)"


def text_problem(text: str) -> str:
    """What makes a string unstorable or invisible (a control character, a lone surrogate),
    or "" -- for text that did not come through `loads`: a form field, a command's argument."""
    return _string_problem(text) if _BAD_CHAR.search(text) else ""


def printable(text: str) -> str:
    """The text without what `text_problem` names: for a label of our own making, such as an
    uploaded file's name, where refusing would help nobody."""
    return _BAD_CHAR.sub("", text)


def _string_problem(text: str) -> str:
    found = _BAD_CHAR.search(text)
    assert found is not None
    char, at = found.group(), found.start()
    if "\ud800" <= char <= "\udfff":
        return (
            f"lone surrogate U+{ord(char):04X} at character {at} (not a Unicode character: it "
            "cannot be stored as UTF-8)"
        )
    name = "NUL" if char == "\x00" else "control character"
    return (
        f"{name} U+{ord(char):04X} at character {at} is not allowed in text (tab, newline and "
        "carriage return are)"
    )


def _shorten(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def _quote(key: str) -> str:
    return json.dumps(_shorten(key, 40))
