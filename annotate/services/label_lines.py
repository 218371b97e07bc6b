"""One line of a label file checked as the browser checks a submission: the reviewer-label
format of SPEC.md, under the project's label schema. Shared by the two imports that read it,
reviewers' labels (import_labels) and gold from elsewhere (import_gold, the same format
without `reviewer`), so that a file either accepts is held to the same rules. Reads only:
what to write is each import's own business."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from annotate import collector
from annotate.models import Answer, Assignment, ClaimLabel, Project
from annotate.schema import LabelSchema
from annotate.services.labelling import (
    LabelErrors,
    check_answer_label,
    check_claim_label,
    default_citation_verdicts,
)

# The answer-level keys of a line, beside `answer_id` and `claims` (and a reviewer's name).
ANSWER_LABEL_FIELDS = {"relevance", "abstention", "failure_labels", "note"}
CLAIM_LABEL_FIELDS = {
    "index",
    "support",
    "severity",
    "requires_evidence",
    "evidence_ids",
    "evidence_quote",
    "citations",
    "note",
}

# Lines checked at a time: their answers are read together, then let go.
LINE_CHUNK = 500


def chunks(items: Iterable, size: int) -> Iterator[list]:
    chunk: list = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class NamedAnswers:
    """The project's answers a chunk of a label file names (`answers`, by answer_id), each
    with its claims, citations and passages to check the labels against. Each chunk reads
    its own answers, and what an earlier chunk read is let go: a file that names an answer
    twice, chunks apart, has it read twice, never every answer of the file held at once."""

    def __init__(self, project: Project):
        self.project = project
        self.answers: dict[str, Answer] = {}

    def read(self, answer_ids: Iterable) -> list[Answer]:
        """Read the answers of the next chunk; returns them."""
        self.release()
        wanted = {a for a in answer_ids if isinstance(a, str)}
        found = list(
            self.project.answers.filter(answer_id__in=wanted).prefetch_related(
                "claims__citations__passage", "retrieved__passage"
            )
        )
        self.answers = {a.answer_id: a for a in found}
        return found

    def release(self) -> None:
        """Free the answers read for the last chunk: untied (see annotate.collector), or
        the import's paused collector would keep them to the end."""
        collector.untie(self.answers.values())
        self.answers = {}


@dataclass
class CheckedLine:
    """A line's values as unsaved rows -- the answer-level ones on an Assignment (with its
    project and answer), each claim's on a ClaimLabel -- and what is wrong with them.
    The rows are built even when there are problems, so a line is checked for everything at
    once: one upload lists every mistake."""

    assignment: Assignment
    labels: list[ClaimLabel]
    problems: list[str]


def unknown_fields(obj: dict, allowed: set[str]) -> list[str]:
    return [f"unknown field '{key}'" for key in sorted(set(obj) - allowed)]


def off_fields(obj: dict, schema: LabelSchema) -> list[str]:
    """The answer-level fields the line gives that the project's schema leaves out."""
    return [
        f"'{key}' is not labelled in this project (its label schema: {schema.describe()})"
        for key in ("relevance", "abstention", "failure_labels")
        if key in obj and _given(obj[key]) and not schema.answer(key)
    ]


def check_line(obj: dict, answer: Answer, *, project: Project, schema: LabelSchema) -> CheckedLine:
    """The line's values for `answer` (one of the project's, read by NamedAnswers), checked
    as a complete submission: types, vocabularies, every claim labelled once, evidence and
    quotes among the passages the answer shows, citations among those its claims cite."""
    assignment = Assignment(project=project, answer=answer)
    problems = _answer_values(obj, assignment)
    labels, label_problems = _parse_claim_labels(obj.get("claims"), answer, schema)
    problems += label_problems
    found = LabelErrors()
    check_answer_label(assignment, schema=schema, complete=True, errors=found)
    shown = _shown(answer)
    for label in labels:
        check_claim_label(
            label,
            label.claim,
            shown,
            citations=label.claim.citations.all(),
            schema=schema,
            complete=True,
            errors=found,
        )
    problems += [f"{_field_name(k)}: {v}" for k, v in found.fields.items()]
    return CheckedLine(assignment, labels, problems)


def _given(value) -> bool:
    return value not in (None, "", [], {})


def _answer_values(obj: dict, assignment: Assignment) -> list[str]:
    """Copy the answer-level values onto the assignment, checking their JSON types (the
    vocabulary is check_answer_label's job)."""
    problems = []
    relevance = obj.get("relevance")
    if relevance is not None and (isinstance(relevance, bool) or not isinstance(relevance, int)):
        problems.append("'relevance' must be 0, 1 or 2")
        relevance = None
    assignment.relevance = relevance
    abstention = obj.get("abstention")
    if abstention is not None and not isinstance(abstention, str):
        problems.append("'abstention' must be a string or null")
        abstention = ""
    assignment.abstention = abstention or ""
    failures = obj.get("failure_labels")
    if failures is not None and (
        not isinstance(failures, list) or not all(isinstance(f, str) for f in failures)
    ):
        problems.append("'failure_labels' must be a list of strings")
        failures = []
    assignment.failure_labels = failures or []
    note = obj.get("note")
    if note is not None and not isinstance(note, str):
        problems.append("'note' must be a string")
        note = ""
    assignment.note = note or ""
    return problems


def _shown(answer: Answer) -> dict:
    """shown_passages() from the answer's prefetched rows: no query per line."""
    shown = {r.passage.passage_id: r.passage for r in sorted(answer.retrieved.all(), key=_rank)}
    for claim in answer.claims.all():
        for citation in claim.citations.all():
            if citation.passage is not None:
                shown.setdefault(citation.passage.passage_id, citation.passage)
    return shown


def _rank(retrieved) -> int:
    return retrieved.rank


def _field_name(key: str) -> str:
    parts = key.split(".")
    return f"claims[{parts[1]}].{parts[2]}" if parts[0] == "claim" else parts[-1]


# The claim label's keys, each with the schema field it belongs to and its JSON type.
_CLAIM_KEYS = {
    "severity": ("severity", str),
    "requires_evidence": ("requires_evidence", bool),
    "evidence_ids": ("evidence", list),
    "evidence_quote": ("evidence", str),
    "citations": ("citations", dict),
    "support": ("support", str),
    "note": ("note", str),
}


def _parse_claim_labels(
    items, answer: Answer, schema: LabelSchema
) -> tuple[list[ClaimLabel], list[str]]:
    problems: list[str] = []
    claims = {c.ordinal: c for c in answer.claims.all()}
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        return [], ["'claims' must be a list of objects"]
    labels: list[ClaimLabel] = []
    for position, item in enumerate(items):
        where = f"claims[{position}]"
        for key in sorted(set(item) - CLAIM_LABEL_FIELDS):
            problems.append(f"{where}: unknown field '{key}'")
        values = {}
        for key, (field_name, kind) in _CLAIM_KEYS.items():
            value = item.get(key)
            if value is None:
                continue
            if not schema.claim(field_name):
                if _given(value):
                    problems.append(
                        f"{where}: '{key}' is not labelled in this project "
                        f"(its label schema: {schema.describe()})"
                    )
                continue
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                problems.append(f"{where}: '{key}' must be {_KIND_NAMES[kind]}")
                continue
            values[key] = value
        evidence_ids = values.get("evidence_ids", [])
        citations = values.get("citations", {})
        if not all(isinstance(x, str) for x in evidence_ids):
            problems.append(f"{where}: 'evidence_ids' must be a list of passage ids")
            evidence_ids = []
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in citations.items()):
            problems.append(f"{where}: 'citations' maps cited ids to verdicts (strings)")
            citations = {}
        index = item.get("index")
        claim = (
            claims.get(index) if isinstance(index, int) and not isinstance(index, bool) else None
        )
        if claim is None:
            problems.append(f"{where}: no claim with index {index!r} in this answer")
            continue
        if any(label.claim is claim for label in labels):
            problems.append(f"{where}: claim {index} is labelled twice")
            continue
        # Built even when the item has problems (the off or mistyped keys are left out), so
        # the line is also checked for everything else: one upload lists every mistake.
        labels.append(
            ClaimLabel(
                claim=claim,
                support=values.get("support", ""),
                severity=values.get("severity", ""),
                requires_evidence=values.get("requires_evidence", True),
                evidence_ids=evidence_ids,
                evidence_quote=values.get("evidence_quote", ""),
                citations={**citations, **default_citation_verdicts(claim.citations.all(), schema)},
                note=values.get("note", ""),
            )
        )
    missing = sorted(set(claims) - {label.claim.ordinal for label in labels})
    if missing:
        problems.append(f"claims {', '.join(map(str, missing))} have no label")
    return labels, problems


_KIND_NAMES = {str: "a string", bool: "true or false", list: "a list", dict: "an object"}
