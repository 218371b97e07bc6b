"""The gold export: gold rows (JSONL or CSV) streamed from iterator() queries in a fixed order,
so memory stays flat and the same data always gives the same bytes; its fingerprint and size,
and the gold page's counts (gold_counts)."""

from __future__ import annotations

import hashlib
import io
import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.db.models import Count, Max, Q

from annotate.common import csvsafe
from annotate.gold import pairs
from annotate.gold.imported import ImportedAlone, gold_for_project, imported_alone, imported_answers
from annotate.gold.pairs import ADJUDICATED, AGREED, IMPORTED, PENDING, Imported, row_state
from annotate.gold.splits import judge_split
from annotate.gold.summary import PairSummary, doubly_labelled, pair_summary
from annotate.models import (
    Answer,
    Assignment,
    Citation,
    Claim,
    Decision,
    GoldImport,
    ImportedGold,
    Project,
    RetrievedPassage,
)
from jobs import accept as jobs
from jobs.models import Job

GOLD_SCHEMA_VERSION = "claimdesk.gold/4"
GOLD_CHUNK = 500
ITEMS = ("all", "claim", "answer")
FORMATS = ("jsonl", "csv", "parquet")
_CONTENT_TYPES = {
    "jsonl": "application/x-ndjson; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}
JUDGE_SPLITS = ("all", "judge_dev", "judge_test")
# The columns that repeat an answer's texts: on answer rows always (they are the Ragas
# sample), on claim rows only when asked for (--with-context), or each of a project's 100,000
# claim rows would carry its answer's passages again.
CONTEXT_COLUMNS = (
    "user_input",
    "response",
    "retrieved_contexts",
    "reference",
    "doc",
)
GOLD_CSV_COLUMNS = (
    "schema_version",
    "export_id",
    "as_of",
    "project",
    "corpus_version",
    "item",
    "case_id",
    "answer_id",
    "variant",
    "task_number",
    "answerable",
    "adversarial",
    "split",
    "judge_split",
    "user_input",
    "response",
    "reference",
    "retrieved_context_ids",
    "retrieved_contexts",
    "in_prompt_ids",
    "claim_index",
    "claim",
    "claim_start",
    "claim_end",
    "citations",
    "doc",
    "label",
    "decided",
    "label_sets",
    "gold",
    "gold_source",
    "rationale",
    "reviewer_a",
    "reviewer_b",
    "other_reviewers",
    "imported",
    "calibration",
    "human_kappa",
    "content_hash",
)
# A claim label's keys, each with the schema field it belongs to.
_CLAIM_LABEL_FIELD = {
    "support": "support",
    "severity": "severity",
    "requires_evidence": "requires_evidence",
    "citations": "citations",
    "evidence_ids": "evidence",
    "evidence_quote": "evidence",
    "note": "note",
}


@dataclass(frozen=True)
class GoldFilter:
    """Which gold rows to export. `decided_only` keeps the rows no lead still has to decide
    anything on; `with_context` repeats the answer's texts on claim rows."""

    item: str = "all"
    split: str = "all"
    decided_only: bool = False
    with_context: bool = False

    def __post_init__(self):
        if self.item not in ITEMS:
            raise ValueError(f"item must be one of {', '.join(ITEMS)}, got {self.item!r}")
        if self.split not in JUDGE_SPLITS:
            raise ValueError(f"split must be one of {', '.join(JUDGE_SPLITS)}, got {self.split!r}")


def content_type(fmt: str) -> str:
    """A gold download's Content-Type: JSONL and CSV are UTF-8 text, Parquet is binary."""
    return _CONTENT_TYPES[fmt]


def gold_fingerprint(project: Project) -> tuple[str, str]:
    """(export id, as-of time). Both derive from the data, never from the clock, so exporting
    twice with nothing changed gives byte-identical files; any new submission, decision or
    import of gold changes both."""
    labels = Assignment.objects.filter(
        project=project, status="submitted", is_check=False
    ).aggregate(n=Count("pk"), last=Max("submitted_at"), revisions=Max("revision"))
    decisions = Decision.objects.filter(answer__project=project).aggregate(
        n=Count("pk"), last=Max("decided_at")
    )
    claims = Claim.objects.filter(answer__project=project).aggregate(n=Count("pk"), last=Max("pk"))
    # Imported gold: its rows' count and newest key (a replace writes new rows), and the time
    # of the latest import that wrote any.
    imported = ImportedGold.objects.filter(gold_import__project=project).aggregate(
        n=Count("pk"), last=Max("pk")
    )
    imported_at = GoldImport.objects.filter(project=project).aggregate(last=Max("imported_at"))
    # Calibration samples: the export carries each sampled answer's design and π. A design is
    # written whole, once: their count and newest key say which are in.
    designs = Project.objects.filter(pk=project.pk).aggregate(
        n=Count("judge_runs__designs"), last=Max("judge_runs__designs__pk")
    )
    times = [t for t in (labels["last"], decisions["last"], imported_at["last"]) if t is not None]
    as_of = max(times).isoformat() if times else ""
    key = json.dumps(
        [
            GOLD_SCHEMA_VERSION,
            project.slug,
            project.corpus_version,
            project.label_schema,
            labels["n"],
            labels["revisions"],
            decisions["n"],
            claims["n"],
            claims["last"],
            as_of,
            *((imported["n"], imported["last"]) if imported["n"] else ()),
            *(("designs", designs["n"], designs["last"]) if designs["n"] else ()),
        ],
        default=str,
        sort_keys=True,
    )
    return hashlib.sha256(key.encode()).hexdigest()[:16], as_of


def start_gold_export(*, project: Project, user, fmt: str, filters: dict[str, Any], rows: int):
    """Queue the gold set of `project` to be written to a file by a worker (annotate.tasks
    runs it; `rows` is how many it will hold, for the progress bar). An export of the same
    labels with the same filters that is waiting, running or done is reused: the file would
    be byte-for-byte the same. The job (jobs.models.Job)."""
    export_id, _ = gold_fingerprint(project)
    return jobs.start_job(
        kind=Job.Kind.GOLD_EXPORT,
        project=project,
        user=user,
        params={"format": fmt, "filters": filters, "export_id": export_id},
        rows=rows,
        reuse=True,
    )


def gold_size(project: Project) -> int:
    """How many rows the whole gold set holds (a claim row per claim and an answer row per
    answer of every doubly-labelled answer and every answer with imported gold): two counts,
    to decide whether an export streams from the request or is written by a worker."""
    doubly = doubly_labelled(project).order_by().values("answer_id")
    answers = Answer.objects.filter(project=project).filter(
        Q(pk__in=doubly) | Q(imported_gold__isnull=False)
    )
    return answers.count() + Claim.objects.filter(answer__in=answers).count()


def _pseudonyms(project: Project) -> dict[int, str]:
    """Reviewers as R1, R2 … in the order they joined the project: stable, not identifying."""
    members = (
        project.memberships.filter(role="reviewer").order_by("pk").values_list("user_id", flat=True)
    )
    return {user_id: f"R{i}" for i, user_id in enumerate(members, start=1)}


class GoldRow(dict):
    """A gold export row, and its JSON line: the row's content is encoded once, sorted and
    compact, for its hash, and the line is that encoding with the provenance appended, so the
    JSONL export does not encode each row a second time."""

    line: str


def _json_bytes(content: dict[str, Any]) -> bytes:
    """The content hash's encoding, as docs/gold-export.md gives it for anyone to recompute:
    `json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))`."""
    return json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()


def _orjson_bytes(content: dict[str, Any]) -> bytes:
    """The same bytes as _json_bytes, five times faster (it was a third of an export's time),
    for rows whose floats orjson writes as Python does; anything orjson refuses (an integer
    beyond 64 bits) goes through json."""
    try:
        return orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return _json_bytes(content)


def _row_encoder(floats: Iterable[float | None]) -> Callable[[dict[str, Any]], bytes]:
    """The encoder for an export whose rows hold these floats and no others (the human
    kappas; every other value is a string, an integer, a boolean or null). orjson writes a
    float below 1e-4 without an exponent (0.00001, where Python writes 1e-05) and NaN as
    null: an export with such a value is encoded by json, so the hashes never depend on
    which encoder ran."""
    agree = all(
        orjson.dumps(value) == json.dumps(value).encode()
        for value in floats
        if isinstance(value, float)
    )
    return _orjson_bytes if agree else _json_bytes


_PROVENANCE = ("export_id", "as_of")


def _hashed(
    row: GoldRow, provenance: dict[str, str], tail: str, encode: Callable[[dict], bytes]
) -> GoldRow:
    """The row (its content, without provenance) completed with its provenance and content
    hash, and its JSON line. `tail` is the provenance's encoding, the same for every row of
    an export: made once by the caller."""
    encoded = encode(row)
    digest = hashlib.sha256(encoded).hexdigest()
    row.update(provenance)
    row["content_hash"] = digest
    row.line = f'{encoded[:-1].decode()},{tail},"content_hash":"{digest}"}}'
    return row


def _provenance_tail(provenance: dict[str, str]) -> str:
    return ",".join(
        f'"{key}":{json.dumps(provenance[key], ensure_ascii=False)}' for key in _PROVENANCE
    )


def _gold_answers(project: Project, split: str) -> dict[int, int]:
    """The answers with two submitted label sets or more, and those with imported gold, in
    answer order, on the judge split asked, each with its number of label sets."""
    doubly = doubly_labelled(project).values_list("answer_id", "answer__case__case_id", "n")
    imported = imported_answers(project).values_list("answer_id", "answer__case__case_id", "n")
    chosen = {
        pk: n
        for pk, case_id, n in (*doubly, *imported)
        if split == "all" or judge_split(case_id) == split
    }
    return dict(sorted(chosen.items()))


def gold_rows(
    project: Project,
    *,
    item: str = "all",
    split: str = "all",
    decided_only: bool = False,
    with_context: bool = False,
) -> Iterator[dict[str, Any]]:
    """One row per claim and per answer of every doubly-labelled answer and every answer with
    imported gold, with provenance and the fields of the project's label schema (a field that
    is off is absent). Streams: the human kappas are one aggregate query, then each chunk of
    answers is read, turned into rows and dropped, so memory stays flat whatever the
    project's size. A row whose item has imported gold carries it with its provenance
    (`imported`); without a pair its reviewers are null and its gold all `imported`."""
    chosen = GoldFilter(item, split, decided_only, with_context)
    # numpy, through the agreement report: loaded when exporting, never by the pages that
    # import this module.
    # late import: heavy library (memory)
    from evaluation.reports.agreement import human_kappas

    schema = project.schema
    export_id, as_of = gold_fingerprint(project)
    names = _pseudonyms(project)
    kappas = human_kappas(project)
    claim_fields = pairs.claim_fields(schema)
    answer_fields = pairs.answer_fields(schema)
    claim_keys = tuple(k for k, f in _CLAIM_LABEL_FIELD.items() if schema.claim(f))
    answer_keys = (*answer_fields, "note")
    # The same for every row of the export (rows share these two mappings).
    claim_kappa = {f: kappas.get(f) for f in _claim_kappa_fields(schema)}
    answer_kappa = {f: kappas.get(f) for f in answer_fields if f in kappas}
    kappa_floats = [*claim_kappa.values(), *answer_kappa.values()]
    encode = _row_encoder(kappa_floats)
    base = {
        "schema_version": GOLD_SCHEMA_VERSION,
        "project": project.slug,
        "corpus_version": project.corpus_version,
    }
    provenance = {"export_id": export_id, "as_of": as_of}
    tail = _provenance_tail(provenance)
    # Claim rows carry the answer's texts only when asked; answer rows never carry `doc`.
    claim_drops = () if chosen.with_context else CONTEXT_COLUMNS
    label_sets = _gold_answers(project, chosen.split)
    answer_ids = list(label_sets)
    for start in range(0, len(answer_ids), GOLD_CHUNK):
        chunk = answer_ids[start : start + GOLD_CHUNK]
        answer_pairs, claim_pairs = gold_for_project(project, answer_ids=chunk)
        answers, claims = _gold_chunk(base, chunk)
        claims_of: dict[int, list] = {}
        for pair in claim_pairs:
            claims_of.setdefault(pair.answer_id, []).append(pair)
        for pair in answer_pairs:
            common = answers[pair.answer_id]
            # A sampled answer's π are floats too: its rows' encoder checks them as well.
            row_encode = (
                _row_encoder([*kappa_floats, *_calibration_floats(common)])
                if "calibration" in common
                else encode
            )
            if chosen.item in ("all", "claim"):
                claim_common = {k: v for k, v in common.items() if k not in claim_drops}
                for claim_pair in claims_of.get(pair.answer_id, []):
                    if chosen.decided_only and claim_pair.pending:
                        continue
                    row = _claim_row(
                        claim_common, claims[claim_pair.claim_id], claim_pair, claim_fields
                    )
                    row["reviewer_a"] = _reviewer(
                        claim_pair.reviewer_a, claim_pair.a, claim_keys, names
                    )
                    row["reviewer_b"] = _reviewer(
                        claim_pair.reviewer_b, claim_pair.b, claim_keys, names
                    )
                    if claim_pair.more:
                        row["other_reviewers"] = _others(claim_pair, claim_keys, names)
                    if claim_pair.imported is not None:
                        row["imported"] = _imported(claim_pair.imported, claim_keys)
                    row["human_kappa"] = claim_kappa
                    yield _hashed(row, provenance, tail, row_encode)
            if chosen.item not in ("all", "answer"):
                continue
            # support_binary from the answer's claims, in every schema: an answer is decided
            # only once its claims' support_binary and its own fields all are.
            answer_gold, answer_source = pairs.answer_gold(
                pair, claims_of.get(pair.answer_id, ()), answer_fields
            )
            decided = row_state(answer_source) != PENDING
            if not chosen.decided_only or decided:
                row = GoldRow((k, v) for k, v in common.items() if k != "doc")
                row.update(
                    item="answer",
                    # Every label set counts (an overlap above 2: other_reviewers).
                    label_sets=label_sets[pair.answer_id],
                    decided=decided,
                    gold=answer_gold,
                    gold_source=answer_source,
                    rationale=dict(pair.rationale),
                    reviewer_a=_reviewer(pair.reviewer_a, pair.a, answer_keys, names),
                    reviewer_b=_reviewer(pair.reviewer_b, pair.b, answer_keys, names),
                )
                if pair.more:
                    row["other_reviewers"] = _others(pair, answer_keys, names)
                if pair.imported is not None:
                    row["imported"] = _imported(pair.imported, answer_keys)
                row["human_kappa"] = answer_kappa
                yield _hashed(row, provenance, tail, row_encode)


def _claim_kappa_fields(schema) -> tuple[str, ...]:
    fields = ["support", "support_binary"]
    fields += [f for f in ("severity", "requires_evidence") if schema.claim(f)]
    if schema.claim("citations"):
        fields.append("citation")
    return tuple(fields)


# The gold page's columns, a gold row's states in order: a state a summary counts is a
# column here (the test of the page checks that its total is the sum of its columns).
GOLD_STATES = (AGREED, ADJUDICATED, PENDING, IMPORTED)
_SPLITS = JUDGE_SPLITS[1:]


@dataclass(frozen=True)
class GoldCountRow:
    """One line of the gold page's table: how many rows of the download are in each state."""

    label: str
    counts: Counter
    nested: bool = False  # a judge split's part of the line above

    @property
    def cells(self) -> list[int]:
        """The counts in GOLD_STATES order."""
        return [self.counts[state] for state in GOLD_STATES]

    @property
    def total(self) -> int:
        return self.counts.total()


@dataclass
class GoldCounts:
    """How much of the gold set is decided, by item and judge split (row_state): rows
    whose every field is agreed, rows a lead decided (some field adjudicated, none pending),
    rows still pending, and rows whose gold is imported from elsewhere with no second
    reviewer (`imported`). An answer row's support_binary is its claims' (pairs.answer_gold),
    so an answer is pending while one of its claims' support_binary is."""

    claims: Counter = field(default_factory=Counter)
    answers: Counter = field(default_factory=Counter)
    by_split: dict[str, Counter] = field(default_factory=dict)  # claims
    answers_by_split: dict[str, Counter] = field(default_factory=dict)
    beyond_two: int = 0  # answers with more than two label sets: agreed only where all agree
    imported_sources: tuple[str, ...] = ()  # where the imported rows' gold came from
    columns: tuple[str, ...] = GOLD_STATES

    @property
    def rows(self) -> list[GoldCountRow]:
        """The table's lines: claims, then answers, each followed by its judge splits."""
        rows = []
        for label, counts, by_split in (
            ("Claims", self.claims, self.by_split),
            ("Answers", self.answers, self.answers_by_split),
        ):
            rows.append(GoldCountRow(label, counts))
            rows += [
                GoldCountRow(f"of which {split}", by_split.get(split, Counter()), nested=True)
                for split in _SPLITS
            ]
        return rows

    @property
    def empty(self) -> bool:
        """No gold at all: every doubly-labelled answer, and every answer with imported
        gold, has an answer row."""
        return not self.answers.total()


def gold_counts(
    project: Project,
    *,
    summary: PairSummary | None = None,
    imported: ImportedAlone | None = None,
) -> GoldCounts:
    """The counts the gold page shows before its download buttons, from `summary`
    (pair_summary, derived here when not given; copied, as a kept one is shared) and
    the items whose gold is imported alone (imported_alone, two queries, when not
    given). An item that reviewers labelled too counts by their gold, which stands."""
    summary = summary if summary is not None else pair_summary(project)
    imported = imported if imported is not None else imported_alone(project)
    counts = GoldCounts(
        claims=Counter(summary.claims),
        answers=Counter(summary.answers),
        by_split={split: Counter(c) for split, c in summary.claims_by_split.items()},
        answers_by_split={split: Counter(c) for split, c in summary.answers_by_split.items()},
        beyond_two=summary.beyond_two,
        imported_sources=imported.sources,
    )
    if imported.answers:
        counts.answers[IMPORTED] = imported.answers
        counts.claims[IMPORTED] = imported.claims
        for split, n in imported.claims_by_split.items():
            counts.by_split.setdefault(split, Counter())[IMPORTED] = n
        for split, n in imported.answers_by_split.items():
            counts.answers_by_split.setdefault(split, Counter())[IMPORTED] = n
    return counts


def _gold_chunk(base: dict, answer_ids: list[int]) -> tuple[dict[int, dict], dict[int, dict]]:
    """(each answer's common fields, each claim's fields) for a chunk of answers, by pk. Flat
    value queries: model instances and nested prefetches were most of the export's time."""
    retrieved: dict[int, list[tuple[str, str, bool]]] = {pk: [] for pk in answer_ids}
    for answer_pk, *passage in (
        RetrievedPassage.objects.filter(answer_id__among=answer_ids)
        .order_by("answer_id", "rank")
        .values_list("answer_id", "passage__passage_id", "passage__text", "in_prompt")
    ):
        retrieved[answer_pk].append(tuple(passage))
    answers = {}
    for pk, *fields in (
        Answer.objects.filter(pk__among=answer_ids)
        .order_by("pk", "calibration_samples__design_id")
        .values_list(
            "pk",
            "case__case_id",
            "answer_id",
            "variant__name",
            "task_number",
            "case__answerable",
            "case__adversarial",
            "case__split",
            "case__question",
            "text",
            "case__reference",
            *_SAMPLE_FIELDS,
        )
    ):
        fields, sample = fields[: -len(_SAMPLE_FIELDS)], fields[-len(_SAMPLE_FIELDS) :]
        if pk not in answers:
            answers[pk] = _answer_fields(base, fields, retrieved[pk])
        if sample[0] is not None:  # a row per sample that drew the answer
            answers[pk].setdefault("calibration", []).append(
                dict(zip(_SAMPLE_KEYS, sample, strict=True))
            )
    citations: dict[int, list[str]] = {}
    for claim_pk, cited_id in (
        Citation.objects.filter(claim__answer_id__among=answer_ids)
        .order_by("claim_id", "ordinal")
        .values_list("claim_id", "cited_id")
    ):
        citations.setdefault(claim_pk, []).append(cited_id)
    claims = {
        pk: {
            "claim_index": ordinal,
            "claim": text,
            "claim_start": start,
            "claim_end": end,
            "citations": citations.get(pk, []),
        }
        for pk, ordinal, text, start, end in Claim.objects.filter(
            answer_id__among=answer_ids
        ).values_list("pk", "ordinal", "text", "start", "end")
    }
    return answers, claims


# The calibration samples that drew an answer (evaluation.judges.samples), joined to the
# answer's row in the chunk's query: a row per sample, one row when none drew it. The field
# is absent on the rows of answers no sample drew, so their content hashes do not depend on
# it; and a sample is drawn from answers nobody has labelled, so drawing one changes no row
# already exported (the rows it marks appear once labelled, and the export id with them).
_SAMPLE_KEYS = ("design", "judge", "kind", "pi", "expected", "frame_answers", "seed")
_SAMPLE_FIELDS = (
    "calibration_samples__design_id",
    "calibration_samples__design__run__name",
    "calibration_samples__design__kind",
    "calibration_samples__pi",
    "calibration_samples__design__budget",
    "calibration_samples__design__frame_answers",
    "calibration_samples__design__seed",
)


def _calibration_floats(common: dict) -> list[float]:
    return [entry[k] for entry in common.get("calibration", ()) for k in ("pi", "expected")]


def _answer_fields(base: dict, fields, retrieved) -> dict[str, Any]:
    (
        case_id,
        answer_id,
        variant,
        task_number,
        answerable,
        adversarial,
        split,
        question,
        text,
        reference,
    ) = fields
    row = {
        **base,
        "item": None,
        "case_id": case_id,
        "answer_id": answer_id,
        "variant": variant,
        "task_number": task_number,
        "answerable": answerable,
        "adversarial": adversarial,
        "split": split,
        "judge_split": judge_split(case_id),
        "user_input": question,
        "response": text,
        "retrieved_context_ids": [passage_id for passage_id, _, _ in retrieved],
        "retrieved_contexts": [passage_text for _, passage_text, _ in retrieved],
        "in_prompt_ids": [passage_id for passage_id, _, in_prompt in retrieved if in_prompt],
        "doc": "\n\n".join(passage_text for _, passage_text, in_prompt in retrieved if in_prompt),
    }
    if reference:
        row["reference"] = reference  # Ragas' name; absent when the case has none
    return row


def _reviewer(user_id: int | None, labels: dict, keys, names) -> dict[str, Any] | None:
    """A reviewer's labels, pseudonymous; None for an item no reviewer pair labelled."""
    if user_id is None:
        return None
    return {"reviewer": names.get(user_id, "R?"), **{k: labels.get(k) for k in keys}}


def _others(pair, keys, names) -> list[dict[str, Any]]:
    """The label sets after the first two, each as _reviewer gives it: only on the rows of
    items that have them, so the content hashes of the others do not depend on the key."""
    return [_reviewer(user_id, labels, keys, names) for user_id, labels in pair.more]


def _imported(imported: Imported, keys) -> dict[str, Any]:
    """An item's imported gold as a row carries it: its provenance and the label as
    imported, shaped as a reviewer's (the same keys)."""
    return {
        **imported.provenance.as_dict(),
        "labels": {k: imported.labels.get(k) for k in keys},
    }


def _claim_row(common: dict, claim, pair, fields) -> GoldRow:
    binary = pair.gold.get("support_binary")
    evidence = pair.gold.get("evidence") or {}
    values = {
        "support": pair.gold.get("support"),
        "support_binary": binary,
        "severity": pair.gold.get("severity"),
        "requires_evidence": pair.gold.get("requires_evidence"),
        "citations": pair.gold.get("citations"),
        "evidence_ids": evidence.get("evidence_ids"),
        "evidence_quote": evidence.get("evidence_quote"),
    }
    row = GoldRow(common)
    row.update(
        {
            "item": "claim",
            **claim,
            # LLM-AggreFact convention: 1 = supported, 0 = not; null while undecided.
            "label": None if binary is None else int(binary == "supported"),
            "decided": not pair.pending,
            "gold": {
                key: value
                for key, value in values.items()
                if _CLAIM_LABEL_FIELD.get(key, key) in fields
                or (key.startswith("evidence_") and "evidence" in fields)
            },
            "gold_source": dict(pair.source),
            "rationale": dict(pair.rationale),
        }
    )
    return row


def gold_csv(rows) -> Iterator[str]:
    """CSV lines: scalar columns as they are, nested values as JSON."""
    buffer = io.StringIO()
    writer = csvsafe.writer(buffer, lineterminator="\n")
    writer.writerow(GOLD_CSV_COLUMNS)
    for row in rows:
        writer.writerow(
            json.dumps(row.get(c), ensure_ascii=False, sort_keys=True)
            if isinstance(row.get(c), (dict, list))
            else ("" if row.get(c) is None else row.get(c))
            for c in GOLD_CSV_COLUMNS
        )
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
