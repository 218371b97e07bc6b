"""Gold rows as Parquet, with typed columns: written by pyarrow's ParquetWriter one row group
per batch of rows, so an export holds one batch in memory whatever its size.

The columns are the CSV's (exports.GOLD_CSV_COLUMNS), each with one type in every file, so
files of different releases or splits read as one dataset: strings, integers (int64),
booleans, lists of strings, and the nested objects (`gold`, `gold_source`, `rationale`,
`reviewer_a`, `reviewer_b`, `other_reviewers`, `imported`, `human_kappa`) as their JSON text,
sorted as the CSV writes them: their keys differ from claim rows to answer rows and from one
label schema to another, which no single struct type holds without turning an absent field
into a null.
A value that is null, or a column a row does not carry, is null."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable
from typing import IO, Any

from annotate.gold.exports import GOLD_CSV_COLUMNS

PARQUET_BATCH = 5000  # rows per row group: about a few MB of claim rows
INTEGER_COLUMNS = ("task_number", "claim_index", "claim_start", "claim_end", "label", "label_sets")
BOOLEAN_COLUMNS = ("answerable", "adversarial", "decided")
LIST_COLUMNS = ("retrieved_context_ids", "retrieved_contexts", "in_prompt_ids", "citations")
JSON_COLUMNS = (
    "gold",
    "gold_source",
    "rationale",
    "reviewer_a",
    "reviewer_b",
    "other_reviewers",
    "imported",
    "human_kappa",
)


def column_type(name: str) -> str:
    """A column's type as docs/gold-export.md names it."""
    if name in INTEGER_COLUMNS:
        return "int64"
    if name in BOOLEAN_COLUMNS:
        return "bool"
    if name in LIST_COLUMNS:
        return "list<string>"
    if name in JSON_COLUMNS:
        return "string (JSON)"
    return "string"


def arrow_schema():
    # late import: heavy library (memory)
    import pyarrow as pa

    types = {"int64": pa.int64(), "bool": pa.bool_(), "list<string>": pa.list_(pa.string())}
    return pa.schema(
        [pa.field(name, types.get(column_type(name), pa.string())) for name in GOLD_CSV_COLUMNS],
        metadata={"claimdesk": "gold rows (docs/gold-export.md)"},
    )


def _cell(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name in JSON_COLUMNS:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return value


def _batch(rows: list[dict], schema):
    # late import: heavy library (memory)
    import pyarrow as pa

    return pa.RecordBatch.from_arrays(
        [pa.array([_cell(f.name, row.get(f.name)) for row in rows], type=f.type) for f in schema],
        schema=schema,
    )


class GoldParquetWriter:
    """Rows in, row groups out: `write(row)` keeps a batch and writes it once full; `close()`
    writes the rest and the footer. A file with no rows still has every column."""

    def __init__(self, sink: str | IO[bytes], *, batch_rows: int = PARQUET_BATCH):
        # late import: heavy library (memory)
        import pyarrow.parquet as pq

        self.schema = arrow_schema()
        self.batch_rows = batch_rows
        self.rows = 0
        self._buffer: list[dict] = []
        self._writer = pq.ParquetWriter(sink, self.schema, compression="zstd")

    def write(self, row: dict) -> None:
        self._buffer.append(row)
        if len(self._buffer) >= self.batch_rows:
            self._flush()

    def _flush(self) -> None:
        if self._buffer:
            self._writer.write_batch(_batch(self._buffer, self.schema))
            self.rows += len(self._buffer)
            self._buffer = []

    def close(self) -> None:
        self._flush()
        self._writer.close()

    def __enter__(self) -> GoldParquetWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def write_parquet(rows: Iterable[dict], sink: str | IO[bytes], *, batch_rows: int = PARQUET_BATCH):
    """Write gold rows to `sink` (a path or a binary file) as one Parquet file; returns how
    many rows it holds."""
    with GoldParquetWriter(sink, batch_rows=batch_rows) as writer:
        for row in rows:
            writer.write(row)
    return writer.rows


def parquet_file(rows: Iterable[dict]):
    """The rows as a Parquet file in a temporary file, rewound, for a response to send (a
    Parquet file cannot stream as it is written: its footer, which readers start from, comes
    last). The caller closes it; FileResponse does."""
    out = tempfile.TemporaryFile()  # noqa: SIM115 (returned open: the response closes it)
    write_parquet(rows, out)
    out.seek(0)
    return out
