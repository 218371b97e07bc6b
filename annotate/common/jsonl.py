"""Rows as JSON lines, for every JSONL the app streams (the bundle and gold exports)."""

from __future__ import annotations

import json
from collections.abc import Iterator


def jsonl(rows) -> Iterator[str]:
    for row in rows:
        # A gold row carries its JSON line already (encoded once, for its hash).
        line = getattr(row, "line", None)
        yield (line if line is not None else json.dumps(row, ensure_ascii=False)) + "\n"
