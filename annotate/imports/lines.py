"""Reading an upload line by line, and saying what is wrong with it, the same way for every
importer (bundles, Ragas datasets, labels, gold, members, judge runs).

JsonLines yields each line's JSON object and turns every unreadable line into a BundleError
numbered like the file; BundleInvalid carries all of them, so a lead gets the whole list at
once and nothing is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from annotate.common import safe_json

PROGRESS_EVERY = 5000
# A line longer than this is refused before it is parsed. The per-field limits below are what
# a lead meets; this one only keeps a pathological line from costing minutes to parse.
MAX_LINE = 5_000_000


MAX_MESSAGE = 1_000


@dataclass(frozen=True, slots=True)
class BundleError:
    line: int
    message: str
    # "row" for CSV files, whose records a spreadsheet numbers (header = row 1) and whose
    # quoted cells may span several lines of text.
    unit: str = "line"

    def __post_init__(self) -> None:
        # A message that quotes a value ("unknown answer_id '...'") is cut short, whichever
        # importer wrote it: the value may be 200,000 characters, and every error is listed.
        if len(self.message) > MAX_MESSAGE:
            cut = f"{self.message[: MAX_MESSAGE - 40]}… ({len(self.message):,} characters)"
            object.__setattr__(self, "message", cut)

    def __str__(self) -> str:
        return f"{self.unit} {self.line}: {self.message}" if self.line else self.message


class BundleInvalid(Exception):
    """Raised with every problem found; nothing has been written."""

    def __init__(self, errors: list[BundleError]):
        # By line, and within a line in the order found: reading comes before the checks that
        # follow from it ("not valid JSON" before "no corpus_version" on line 1).
        self.errors = sorted(errors, key=lambda e: e.line)
        super().__init__(f"{len(self.errors)} problem(s) in the bundle")

    def grouped(self, *, show_lines: int = 3) -> list[str]:
        """The errors for people: one entry per distinct message, naming its lines
        ("lines 3, 5, 9 and 17 more: ..."), in the order the messages first occur. Twenty
        copies of one mistake read as one mistake to fix, not twenty."""
        lines: dict[str, list[int]] = {}
        units: dict[str, str] = {}
        for error in self.errors:
            lines.setdefault(error.message, []).append(error.line)
            units.setdefault(error.message, error.unit)
        out = []
        for message, numbers in lines.items():
            numbers = sorted({n for n in numbers if n})
            unit = units[message]
            if not numbers:
                out.append(message)
                continue
            if len(numbers) == 1:
                out.append(f"{unit} {numbers[0]}: {message}")
                continue
            shown = ", ".join(map(str, numbers[:show_lines]))
            rest = len(numbers) - show_lines
            if rest > 0:
                where = f"{unit}s {shown} and {rest} more"
            else:
                head, last = numbers[:-1], numbers[-1]
                where = f"{unit}s {', '.join(map(str, head))} and {last}"
            out.append(f"{where}: {message}")
        return out


_LONE_CR = re.compile(r"(?<=\r)(?!\n)")


def line_ends(lines: Iterable[bytes | str]) -> Iterator[bytes | str]:
    """The lines again, each also split at a lone carriage return: a line ends at \\n, \\r\\n
    or \\r, as Django's File reads an upload (the pages and the API store uploads and read them
    back through it), while a file opened by a command, or a raw request body, splits at
    \\n only. Without this, a file saved with old Mac line endings imported from a page and
    was one unreadable line to the command."""
    for raw in lines:
        if isinstance(raw, bytes):
            # bytes.splitlines ends lines at LF, CRLF and CR only (str's also at U+2028 ...)
            yield from raw.splitlines(keepends=True) if b"\r" in raw else (raw,)
        elif "\r" in raw:
            yield from (piece for piece in _LONE_CR.split(raw) if piece)
        else:
            yield raw


class JsonLines:
    """Iterate (line number, object) over a JSONL stream. Lines that are not UTF-8, not JSON,
    not an object, or that carry what no field may hold (annotate.common.safe_json: NaN, numbers out
    of range, nesting deeper than 32 levels, control characters, lone surrogates, a key given
    twice), become errors numbered like the file -- blank lines counted but skipped, a line
    ended by \\n, \\r\\n or \\r (line_ends) -- so every importer reports them the same way,
    never stores them, and keeps going to find the rest."""

    def __init__(
        self,
        lines: Iterable[bytes | str],
        errors: list[BundleError],
        *,
        progress: Callable[[int], None] | None = None,
    ):
        self.lines, self.errors, self.progress = lines, errors, progress
        self.count = 0

    def __iter__(self):
        for number, raw in enumerate(line_ends(self.lines), start=1):
            self.count = number
            if self.progress and number % PROGRESS_EVERY == 0:
                self.progress(number)
            if isinstance(raw, bytes):
                try:
                    raw = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    self.errors.append(
                        BundleError(number, f"not UTF-8 ({exc.reason} at byte {exc.start})")
                    )
                    continue
            if number == 1:
                raw = raw.removeprefix("\ufeff")  # a byte-order mark, as spreadsheets write
            if not raw.strip():
                continue
            if len(raw) > MAX_LINE:
                self.errors.append(
                    BundleError(
                        number,
                        f"the line is {len(raw):,} characters long; at most {MAX_LINE:,} are read",
                    )
                )
                continue
            try:
                obj = safe_json.loads(raw)
            except json.JSONDecodeError as exc:
                self.errors.append(
                    BundleError(
                        # json's "Invalid control character at" already ends in "at"
                        number,
                        f"not valid JSON ({exc.msg.removesuffix(' at')} at column {exc.colno})",
                    )
                )
                continue
            except safe_json.UnsafeJSON as exc:
                self.errors.extend(BundleError(number, p.text()) for p in exc.problems)
                if exc.more:
                    self.errors.append(
                        BundleError(number, f"{exc.more} more problem(s) of these kinds")
                    )
                continue
            if not isinstance(obj, dict):
                self.errors.append(
                    BundleError(number, f"expected a JSON object, got {kind_of(obj)}")
                )
                continue
            yield number, obj


def too_long(key: str, value: str, limit: int) -> str:
    """Without echoing the value: it is the part of the line nobody wants to read again."""
    return f"'{key}' is {len(value):,} characters long; at most {limit:,} are allowed"


def kind_of(value: Any) -> str:
    """How a JSON value reads in an error message: 'a string', 'a list', 'null' …"""
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )
