"""Ragas evaluation datasets as claimdesk bundles. Pure: no ORM, and no Ragas import either
(reading a Ragas file must not need Ragas installed).

A Ragas `EvaluationDataset` of single-turn samples is a JSONL or CSV file with the columns
`user_input`, `response`, `retrieved_contexts`, `retrieved_context_ids` and `reference`
(ragas 0.4.3, `SingleTurnSample` in ragas/dataset_schema.py). `read_dataset` checks it and
collects every problem by the file's own line (JSONL) or row (CSV, the header being row 1, as
a spreadsheet numbers them); `to_bundle` turns the rows into bundle lines that
`services.import_bundle` then imports under its own rules. docs/ragas.md gives the mapping.

`EvaluationDataset.to_csv` writes list columns with Python's `str()` (`['a', "it's"]`), not
as JSON, so a list cell is read as JSON first and then as a Python literal.
"""

from __future__ import annotations

import ast
import csv
import difflib
import hashlib
import io
import json
from collections import defaultdict
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from annotate.imports.lines import BundleError, BundleInvalid, JsonLines, kind_of

# What claimdesk reads.
COLUMNS = ("user_input", "response", "retrieved_contexts", "retrieved_context_ids", "reference")
# The rest of SingleTurnSample (ragas 0.4.3) and the testset generator's synthesizer_name: a
# bundle has no place for them, so they are passed over and named in the import's result.
# reference_contexts are not turned into evidence: that would invent what a lead decides.
PASSED_OVER = (
    "reference_contexts",
    "reference_context_ids",
    "multi_responses",
    "rubrics",
    "persona_name",
    "query_style",
    "query_length",
    "synthesizer_name",
)
MAX_ID = 255  # the length of a passage_id column
MAX_VARIANT = 200
LIST_FORMS = "a JSON list or a Python list literal (as Ragas' to_csv writes it)"


def case_id_for(question: str, passage_ids: Sequence[str] | None = None) -> str:
    """A question's case. Named by the question alone when a file gives the question one set
    of retrieved contexts, so each variant's file answers the same cases even when their
    retrievers differ; by the question and its contexts' passage ids (in rank order) when a
    file gives it several, as one instruction over many sources does ("summarise this"):
    each source is its own case, never a sample of the others (`assign_cases`)."""
    if passage_ids is None:
        return "q:" + _digest(question)
    return "q:" + _digest(json.dumps([question, list(passage_ids)], ensure_ascii=False))


def passage_id_for(text: str) -> str:
    """A context without an id is named by its text, so the same text is one passage."""
    return "ctx:" + _digest(text)


def answer_id_for(case_id: str, variant: str, sample: int) -> str:
    return f"{case_id}/{variant}" + (f"/{sample}" if sample else "")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@dataclass(slots=True)
class RagasRow:
    line: int
    user_input: str
    response: str
    contexts: list[tuple[str, str]]  # (passage id, text), in rank order
    reference: str
    case_id: str = ""  # set by assign_cases once every row is read

    @property
    def context_ids(self) -> tuple[str, ...]:
        return tuple(pid for pid, _ in self.contexts)


@dataclass
class RagasDataset:
    format: str  # "jsonl" or "csv"
    rows: list[RagasRow] = field(default_factory=list)
    passed_over: list[str] = field(default_factory=list)  # columns present but not read

    @property
    def unit(self) -> str:
        return "row" if self.format == "csv" else "line"

    def passage_ids(self) -> list[str]:
        return list(dict.fromkeys(pid for row in self.rows for pid, _ in row.contexts))

    def corpus_version(self) -> str:
        """A new project's corpus_version: Ragas has none, so it is named after the passages
        this dataset retrieved, the same for every import of the same file."""
        return "ragas:" + _digest("\n".join(sorted(self.passage_ids())))


def sniff_format(lines: list[bytes | str]) -> str:
    """JSONL when the first non-blank line is an object, else CSV (a header row)."""
    for raw in lines:
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        text = text.lstrip("\ufeff").strip()
        if text:
            return "jsonl" if text.startswith("{") else "csv"
    return "jsonl"


def read_dataset(lines: Iterable[bytes | str]) -> RagasDataset:
    """Read and check a Ragas dataset, JSONL or CSV (told apart by `sniff_format`); raises
    BundleInvalid with every problem found."""
    lines = list(lines)
    dataset = RagasDataset(format=sniff_format(lines))
    errors: list[BundleError] = []
    passed_over: dict[str, None] = {}
    if dataset.format == "csv":
        records = _csv_records(lines, errors, passed_over)
    else:
        if lines and isinstance(lines[0], bytes):  # a byte-order mark, as Windows tools write
            lines[0] = lines[0].removeprefix(b"\xef\xbb\xbf")
        elif lines:
            lines[0] = lines[0].removeprefix("\ufeff")
        records = JsonLines(lines, errors)
    for number, values in records:
        _Sample(number, values, dataset, errors, passed_over).read()
    dataset.passed_over = list(passed_over)
    if not dataset.rows and not errors:
        errors.append(BundleError(0, "the file holds no samples", dataset.unit))
    assign_cases(dataset.rows)
    _check_across_rows(dataset, errors)
    if errors:
        raise BundleInvalid(errors)
    return dataset


# --- Reading the two file formats ------------------------------------------------------------


class _Cell(str):
    """A CSV cell: its list columns still need parsing, unlike a JSONL value."""


def _csv_records(lines, errors, passed_over) -> Iterable[tuple[int, dict[str, Any]]]:
    raw = b"".join(x if isinstance(x, bytes) else x.encode("utf-8") for x in lines)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        errors.append(BundleError(0, f"not UTF-8 ({exc.reason} on line {line} of the file)"))
        return
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    number = 0
    try:
        for number, cells in enumerate(reader, start=1):
            if not any(cell.strip() for cell in cells):
                continue
            if header is None:
                header = _csv_header(number, cells, errors, passed_over)
                if header is None:
                    return
                continue
            if len(cells) != len(header):
                errors.append(
                    BundleError(
                        number,
                        f"{len(cells)} cells, but the header names {len(header)} columns "
                        "(a quote left open in an earlier cell does this)",
                        "row",
                    )
                )
                continue
            yield (
                number,
                {name: _Cell(cell) for name, cell in zip(header, cells, strict=True) if name},
            )
    except csv.Error as exc:
        errors.append(BundleError(number + 1, f"not readable as CSV ({exc})", "row"))


def _csv_header(
    number: int, cells: list[str], errors: list[BundleError], passed_over: dict[str, None]
) -> list[str] | None:
    """The column names, or None when the rows cannot be read by them (every problem is
    reported here, once, rather than again on every row)."""
    header = [cell.strip() for cell in cells]
    problems = [
        f"the header row names no '{name}' column (a Ragas CSV's first row holds its column "
        f"names: {', '.join(COLUMNS)})"
        for name in ("user_input", "response")
        if name not in header
    ]
    for name in sorted({n for n in header if n and header.count(n) > 1}):
        problems.append(f"column '{name}' appears twice in the header")
    for name in dict.fromkeys(n for n in header if n):
        problem = _column_problem(name, passed_over)
        if problem:
            problems.append(problem)
    errors.extend(BundleError(number, p, "row") for p in problems)
    return None if problems else header


def _column_problem(name: str, passed_over: dict[str, None]) -> str | None:
    """Why a column cannot be read, or None (noting the Ragas columns a bundle has no place
    for). A misspelt column is an error: read past, it would silently drop the data."""
    if name in COLUMNS:
        return None
    if name in PASSED_OVER:
        passed_over.setdefault(name, None)
        return None
    if name == "type":
        return "a 'type' field: this looks like a claimdesk bundle; import it as a bundle"
    close = difflib.get_close_matches(name, COLUMNS + PASSED_OVER, n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return (
        f"unknown column '{name}'{hint}: claimdesk reads {', '.join(COLUMNS)} and passes "
        f"over Ragas' {', '.join(PASSED_OVER)}"
    )


# --- One sample ------------------------------------------------------------------------------


class _Sample:
    """One row's columns, checked; every problem is appended to `errors`."""

    def __init__(self, number, values, dataset: RagasDataset, errors, passed_over):
        self.number, self.values, self.dataset = number, values, dataset
        self.errors, self.passed_over = errors, passed_over
        self.ok = True

    def error(self, message: str) -> None:
        self.ok = False
        self.errors.append(BundleError(self.number, message, self.dataset.unit))

    def read(self) -> None:
        if self.dataset.format == "jsonl":  # a CSV's columns were checked on its header
            if "type" in self.values:  # one message, not one per missing column
                self.error(_column_problem("type", self.passed_over))
                return
            for name in self.values:
                problem = _column_problem(name, self.passed_over)
                if problem:
                    self.error(problem)
        question = self.text("user_input", why="every sample needs its question")
        response = self.text(
            "response", why="claimdesk labels the answer claim by claim, so it needs one"
        )
        contexts = self.strings("retrieved_contexts")
        ids = self.ids(len(contexts or [])) if contexts is not _INVALID else None
        reference = self.text("reference", required=False)
        if contexts is _INVALID or ids is _INVALID:
            return
        ranked = self.ranking(contexts or [], ids)
        if self.ok:
            self.dataset.rows.append(RagasRow(self.number, question, response, ranked, reference))

    def list_value(self, name: str) -> Any:
        """The column's list (a CSV cell parsed), None when absent, or _INVALID."""
        value = self.values.get(name)
        if isinstance(value, _Cell):
            return self.parse_list(name, value)
        return value

    def text(self, name: str, *, why: str = "", required: bool = True) -> str:
        value = self.values.get(name)
        if value is None or (isinstance(value, _Cell) and not value.strip()):
            if required:
                self.error(f"column '{name}' is missing: {why}")
            return ""
        if name == "user_input" and isinstance(value, list):
            self.error(
                "column 'user_input' is a list of messages (a multi-turn sample): claimdesk "
                "labels single-turn answers"
            )
            return ""
        if not isinstance(value, str):
            self.error(f"column '{name}' must be a string, got {kind_of(value)}")
            return ""
        if required and not value.strip():
            self.error(f"column '{name}' must not be empty: {why}")
        self.no_nul(name, value)
        return str(value)

    def no_nul(self, name: str, value: str) -> None:
        if "\x00" in value:
            self.error(f"{name} holds a NUL character (\\u0000), which cannot be stored")

    def parse_list(self, name: str, cell: str) -> Any:
        text = cell.strip()
        if not text:
            return None
        if not text.startswith("["):
            self.error(f"column '{name}' must be {LIST_FORMS}; this cell does not start with '['")
            return _INVALID
        try:
            # strict=False: a spreadsheet keeps a newline typed inside a context as it is.
            return json.loads(text, strict=False)
        except (ValueError, RecursionError):  # [[[[... nested past the interpreter's limit
            pass
        try:
            return ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            self.error(
                f"column '{name}' is neither a JSON list nor a Python list literal (as Ragas' "
                "to_csv writes it)"
            )
            return _INVALID

    def strings(self, name: str) -> Any:
        """A list of non-empty strings, None when absent, or _INVALID."""
        value = self.list_value(name)
        if value is None or value is _INVALID:
            return value
        if not isinstance(value, list):
            self.error(f"column '{name}' must be a list of strings, got {kind_of(value)}")
            return _INVALID
        for i, item in enumerate(value):
            if not isinstance(item, str):
                self.error(f"column '{name}' must be a list of strings; [{i}] is {kind_of(item)}")
                return _INVALID
            if not item.strip():
                self.error(f"{name}[{i}] is empty: a passage needs its text")
            self.no_nul(f"{name}[{i}]", item)
        return value

    def ids(self, n_contexts: int) -> Any:
        """The contexts' ids as strings, None when absent, or _INVALID."""
        name = "retrieved_context_ids"
        value = self.list_value(name)
        if value is None or value is _INVALID:
            return value
        # Ragas allows integer ids; they are passage ids all the same, written as text.
        if not isinstance(value, list) or not all(
            isinstance(v, (str, int)) and not isinstance(v, bool) for v in value
        ):
            self.error(f"column '{name}' must be a list of strings (or integers)")
            return _INVALID
        ids = [str(v) for v in value]
        if len(ids) != n_contexts:
            self.error(
                f"column '{name}' has {len(ids)} id(s) for {n_contexts} retrieved_contexts: "
                "one id per context, in the same order"
            )
            return _INVALID
        for i, pid in enumerate(ids):
            if not pid.strip():
                self.error(f"{name}[{i}] is empty")
            elif len(pid) > MAX_ID:
                self.error(f"{name}[{i}] is longer than {MAX_ID} characters")
            self.no_nul(f"{name}[{i}]", pid)
        return ids

    def ranking(self, contexts: list[str], ids: list[str] | None) -> list[tuple[str, str]]:
        ranked: list[tuple[str, str]] = []
        first: dict[str, int] = {}
        for i, text in enumerate(contexts):
            pid = ids[i] if ids is not None else passage_id_for(text)
            if pid in first:
                if ids is not None:
                    self.error(
                        f"retrieved_context_ids[{i}]: '{pid}' appears twice in this sample's "
                        f"ranking (first at [{first[pid]}]); a passage is ranked once"
                    )
                else:
                    self.error(
                        f"retrieved_contexts[{i}] repeats retrieved_contexts[{first[pid]}] "
                        "word for word; a passage is ranked once"
                    )
                continue
            first[pid] = i
            ranked.append((pid, text))
        return ranked


_INVALID = object()


def assign_cases(rows: Sequence[RagasRow]) -> None:
    """One case per sample unless both question and retrieved contexts are equal: rows that
    repeat a question with the same contexts are samples 0, 1, ... of one case (repeated
    generations); rows that share a question but not its contexts are cases apart, or their
    samples' differences would read as generation variance. Deterministic: a file imported
    again names the same cases."""
    contexts: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    for row in rows:
        contexts[row.user_input].add(row.context_ids)
    for row in rows:
        several = len(contexts[row.user_input]) > 1
        row.case_id = case_id_for(row.user_input, row.context_ids if several else None)


def _check_across_rows(dataset: RagasDataset, errors: list[BundleError]) -> None:
    """One passage id, one text; one case, one reference (where given)."""
    unit = dataset.unit
    passages: dict[str, tuple[str, int]] = {}
    references: dict[str, tuple[str, int]] = {}
    for row in dataset.rows:
        for i, (pid, text) in enumerate(row.contexts):
            seen = passages.setdefault(pid, (text, row.line))
            if seen[0] != text:
                errors.append(
                    BundleError(
                        row.line,
                        f"retrieved_contexts[{i}]: passage '{pid}' has another text on "
                        f"{unit} {seen[1]}; an id names one passage",
                        unit,
                    )
                )
        if row.reference:
            seen = references.setdefault(row.case_id, (row.reference, row.line))
            if seen[0] != row.reference:
                errors.append(
                    BundleError(
                        row.line,
                        f"column 'reference' differs from {unit} {seen[1]}'s for the same "
                        "user_input and retrieved_contexts; a case has one reference answer",
                        unit,
                    )
                )


# --- Into bundle lines -----------------------------------------------------------------------


@dataclass
class Conversion:
    """Bundle lines, and for each the dataset line or row it came from (0: the header)."""

    lines: list[str]
    origins: list[int]
    unit: str
    answers: dict[str, int]  # answer_id -> dataset line
    # Passages and cases the rows name that the project holds as they are, so no line was
    # written for them: the import counts them unchanged.
    held: dict[str, int] = field(default_factory=dict)

    def errors_in_dataset(self, exc: BundleInvalid) -> BundleInvalid:
        """The bundle importer's errors, numbered by the dataset's lines instead."""
        return BundleInvalid(
            [
                BundleError(self.origins[e.line - 1] if e.line else 0, e.message, self.unit)
                for e in exc.errors
            ]
        )


def check_variant(variant: str) -> str | None:
    """The variant's name as given to the import, or why it cannot be used."""
    if not variant.strip():
        return "name the variant (the system that wrote these answers), e.g. baseline"
    if len(variant) > MAX_VARIANT:
        return f"the variant name is longer than {MAX_VARIANT} characters"
    return None


def to_bundle(
    dataset: RagasDataset,
    *,
    variant: str,
    corpus_version: str | None,
    label_schema: Mapping[str, Any] | None = None,
    known_passages: Mapping[str, str] | None = None,
    known_cases: Container[str] = (),
) -> Conversion:
    """Bundle lines for a checked dataset: a header when `corpus_version` is given (a new
    project's, or the project's own to carry `label_schema`), the passages and cases the
    project does not already hold as they are here, and one answer per row. A case answered
    again by the variant (same question, same contexts) is its next sample.

    known_passages: passage_id -> text of the project's passages; known_cases: its case ids.
    """
    known_passages = known_passages or {}
    objects: list[tuple[int, dict[str, Any]]] = []
    if corpus_version is not None:
        header: dict[str, Any] = {"type": "bundle", "corpus_version": corpus_version}
        if label_schema is not None:
            header["label_schema"] = dict(label_schema)
        objects.append((0, header))
    passages: dict[str, int] = {}
    held_passages: set[str] = set()
    for row in dataset.rows:
        for pid, text in row.contexts:
            if pid in passages or pid in held_passages:
                continue
            if known_passages.get(pid) == text:
                held_passages.add(pid)
            else:
                passages[pid] = row.line
                objects.append((row.line, {"type": "passage", "passage_id": pid, "text": text}))
    cases: dict[str, int] = {}
    held_cases: set[str] = set()
    reference: dict[str, str] = {}  # read_dataset made sure a case has only one
    for row in dataset.rows:
        if row.reference:
            reference.setdefault(row.case_id, row.reference)
    for row in dataset.rows:
        case_id = row.case_id
        if case_id in cases:
            continue
        if case_id in known_cases and case_id not in reference:
            held_cases.add(case_id)  # nothing to say about a case the project holds
            continue
        cases[case_id] = row.line
        case = {
            "type": "case",
            "case_id": case_id,
            "question": row.user_input,
            "answerable": True,
            "adversarial": False,
        }
        if case_id in reference:
            case["reference"] = reference[case_id]
        objects.append((row.line, case))
    samples: dict[str, int] = {}
    answers: dict[str, int] = {}
    for row in dataset.rows:
        sample = samples.get(row.case_id, 0)
        samples[row.case_id] = sample + 1
        answer_id = answer_id_for(row.case_id, variant, sample)
        answers[answer_id] = row.line
        objects.append(
            (
                row.line,
                {
                    "type": "answer",
                    "answer_id": answer_id,
                    "case_id": row.case_id,
                    "variant": variant,
                    "sample": sample,
                    "text": row.response,
                    # Ragas' contexts are what the generator was given: all in the prompt.
                    "retrieved": [
                        {"passage_id": pid, "rank": rank, "in_prompt": True}
                        for rank, (pid, _) in enumerate(row.contexts, start=1)
                    ],
                },
            )
        )
    return Conversion(
        lines=[json.dumps(obj, ensure_ascii=False) for _, obj in objects],
        origins=[origin for origin, _ in objects],
        unit=dataset.unit,
        answers=answers,
        held={"passage": len(held_passages), "case": len(held_cases)},
    )
