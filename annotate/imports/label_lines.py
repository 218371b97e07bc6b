"""One line of a label file checked as the browser checks a submission: the reviewer-label
format of SPEC.md, under the project's label schema. Shared by the two imports that read it,
reviewers' labels (import_labels) and gold from elsewhere (import_gold, the same format
without `reviewer`), so that a file either accepts is held to the same rules. Reads only:
what to write is each import's own business."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from annotate.common import collector
from annotate.imports.lines import kind_of
from annotate.imports.records import quote_occurs
from annotate.labelling.services import (
    LabelErrors,
    check_answer_label,
    check_claim_label,
    default_citation_verdicts,
    needs_evidence,
)
from annotate.models import (
    FAILURE_LABELS,
    Abstention,
    Answer,
    Assignment,
    CitationVerdict,
    ClaimLabel,
    Project,
    Severity,
    Support,
)
from annotate.schema import LabelSchema

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

    PREFETCH = ("claims__citations__passage", "retrieved__passage")

    def __init__(self, project: Project):
        self.project = project
        self.answers: dict[str, Answer] = {}

    def read(self, answer_ids: Iterable) -> list[Answer]:
        """Read the answers of the next chunk; returns them."""
        self.release()
        wanted = {a for a in answer_ids if isinstance(a, str)}
        found = list(
            self.project.answers.filter(answer_id__in=wanted).prefetch_related(*self.PREFETCH)
        )
        self.answers = {a.answer_id: a for a in found}
        return found

    def release(self) -> None:
        """Free the answers read for the last chunk: untied (see annotate.common.collector), or
        the import's paused collector would keep them to the end."""
        collector.untie(self.answers.values(), *self.PREFETCH)
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
        f"{key} is not labelled in this project (its label schema: {schema.describe()})"
        for key in ("relevance", "abstention", "failure_labels")
        if key in obj and _given(obj[key]) and not schema.answer(key)
    ]


def check_line(obj: dict, answer: Answer, *, project: Project, schema: LabelSchema) -> CheckedLine:
    """The line's values for `answer` (one of the project's, read by NamedAnswers), checked
    as a complete submission: types, vocabularies, every claim labelled once, evidence and
    quotes among the passages the answer shows, citations among those its claims cite."""
    assignment = Assignment(project=project, answer=answer)
    reported: set[str] = set()  # paths whose JSON type was wrong: said once
    problems = _answer_values(obj, assignment, reported)
    placed, label_problems = _parse_claim_labels(obj.get("claims"), answer, schema, reported)
    labels = [label for _, _, label in placed]
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
    problems += _in_file_terms(
        found, obj=obj, placed=placed, shown=shown, schema=schema, reported=reported
    )
    return CheckedLine(assignment, labels, problems)


def _given(value) -> bool:
    return value not in (None, "", [], {})


def _answer_values(obj: dict, assignment: Assignment, reported: set[str]) -> list[str]:
    """Copy the answer-level values onto the assignment, checking their JSON types (the
    vocabulary is check_answer_label's job); a path found of the wrong type goes in
    `reported`."""
    problems = []

    def wrong(key: str, expected: str) -> None:
        problems.append(f"{key} must be {expected}, got {_got(obj[key], str)}")
        reported.add(key)

    relevance = obj.get("relevance")
    if relevance is not None and (isinstance(relevance, bool) or not isinstance(relevance, int)):
        wrong("relevance", RELEVANCE_CHOICES)
        relevance = None
    assignment.relevance = relevance
    abstention = obj.get("abstention")
    if abstention is not None and not isinstance(abstention, str):
        wrong("abstention", ABSTENTION_CHOICES)
        abstention = ""
    assignment.abstention = abstention or ""
    failures = obj.get("failure_labels")
    if failures is not None and (
        not isinstance(failures, list) or not all(isinstance(f, str) for f in failures)
    ):
        wrong("failure_labels", "a list of strings")
        failures = []
    assignment.failure_labels = failures or []
    note = obj.get("note")
    if note is not None and not isinstance(note, str):
        wrong("note", "a string")
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
    items, answer: Answer, schema: LabelSchema, reported: set[str]
) -> tuple[list[tuple[int, dict, ClaimLabel]], list[str]]:
    """The claim labels of a line, each with its position in the line's `claims` list and
    the object the file wrote there; a path found of the wrong type goes in `reported`."""
    problems: list[str] = []
    claims = {c.ordinal: c for c in answer.claims.all()}
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        return [], [f"claims must be a list of objects, one per claim, got {_got(items, dict)}"]
    placed: list[tuple[int, dict, ClaimLabel]] = []
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
                        f"{where}.{key} is not labelled in this project "
                        f"(its label schema: {schema.describe()})"
                    )
                continue
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                problems.append(f"{where}.{key} must be {_KIND_NAMES[kind]}, got {_got(value)}")
                reported.add(f"{where}.{key}")
                continue
            values[key] = value
        evidence_ids = values.get("evidence_ids", [])
        citations = values.get("citations", {})
        if not all(isinstance(x, str) for x in evidence_ids):
            problems.append(f"{where}.evidence_ids must be a list of passage ids (strings)")
            reported.add(f"{where}.evidence_ids")
            evidence_ids = []
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in citations.items()):
            problems.append(f"{where}.citations must map each cited id to a verdict (a string)")
            reported.add(f"{where}.citations")
            citations = {}
        index = item.get("index")
        claim = (
            claims.get(index) if isinstance(index, int) and not isinstance(index, bool) else None
        )
        if claim is None:
            problems.append(
                f"{where}.index must be the index of one of the answer's claims "
                f"(0 to {len(claims) - 1}), got {_got(index)}"
                if claims
                else f"{where}.index: the answer has no claims, got {_got(index)}"
            )
            continue
        first = next((at for at, _, label in placed if label.claim is claim), None)
        if first is not None:
            problems.append(f"{where}.index is {index} again: claims[{first}] labels claim {index}")
            continue
        # Built even when the item has problems (the off or mistyped keys are left out), so
        # the line is also checked for everything else: one upload lists every mistake.
        placed.append(
            (
                position,
                item,
                ClaimLabel(
                    claim=claim,
                    support=values.get("support", ""),
                    severity=values.get("severity", ""),
                    requires_evidence=values.get("requires_evidence", True),
                    evidence_ids=evidence_ids,
                    evidence_quote=values.get("evidence_quote", ""),
                    citations={
                        **citations,
                        **default_citation_verdicts(claim.citations.all(), schema),
                    },
                    note=values.get("note", ""),
                ),
            )
        )
    missing = sorted(set(claims) - {label.claim.ordinal for _, _, label in placed})
    if missing:
        problems.append(
            f"claims has no object with index {', '.join(map(str, missing))}: "
            "every claim of the answer needs its label"
        )
    return placed, problems


_KIND_NAMES = {str: "a string", bool: "true or false", list: "a list", dict: "an object"}


# --- Problems in the file's terms -------------------------------------------------------------
# The browser's checks (check_answer_label, check_claim_label) decide what is wrong, so that a
# file is held to exactly what a submission is held to. They speak to a person at the screen
# ("Rate the answer's relevance."), keyed by the form's fields and a claim by its index in the
# answer; someone fixing a file needs the field's path as the file writes it (claims[1] is the
# second object of the line's claims list, whatever its index) and the value it holds.

RELEVANCE_CHOICES = "0, 1 or 2"
ABSTENTION_CHOICES = '"appropriate", "unnecessary" or null'


def _got(value, items: type | None = None) -> str:
    """A value as an error message shows it: a scalar as the file wrote it (cut short), a
    list or an object by its kind -- a list that should hold `items`, by what it holds
    instead."""
    if isinstance(value, list) and items is not None:
        for item in value:
            if not isinstance(item, items):
                return f"a list holding {kind_of(item)}"
    if isinstance(value, (list, dict)):
        return kind_of(value)
    text = json.dumps(value, ensure_ascii=False)
    text = text if len(text) <= 60 else text[:59] + "…"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _one_of(values) -> str:
    quoted = [_got(v) for v in values]
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _absent(obj: dict, key: str, path: str) -> str:
    """'relevance is missing', or 'relevance is null' (or "")."""
    return f"{path} is missing" if key not in obj else f"{path} is {_got(obj[key])}"


def _in_file_terms(
    found: LabelErrors,
    *,
    obj: dict,
    placed: list[tuple[int, dict, ClaimLabel]],
    shown: dict,
    schema: LabelSchema,
    reported: set[str],
) -> list[str]:
    at = {label.claim.ordinal: (position, item, label) for position, item, label in placed}
    problems: list[str] = []
    for key, message in found.fields.items():
        kind, *rest = key.split(".")
        if kind == "answer":
            if rest[0] not in reported:
                problems.append(_answer_problem(rest[0], message, obj))
            continue
        position, item, label = at[int(rest[0])]
        path = f"claims[{position}].{rest[1]}"
        if path not in reported:
            problems += _claim_problems(path, rest[1], message, item, label, shown, schema)
    return problems


def _answer_problem(field: str, message: str, obj: dict) -> str:
    value = obj.get(field)
    if field == "relevance":
        if value is None:
            return f"{_absent(obj, field, field)}: rate the answer {RELEVANCE_CHOICES}"
        return f"relevance must be {RELEVANCE_CHOICES}, got {_got(value)}"
    if field == "abstention":
        if not value:
            choices = _one_of(Abstention.values)
            return f"{_absent(obj, field, field)}: the answer declines, so it must be {choices}"
        return f"abstention must be {ABSTENTION_CHOICES}, got {_got(value)}"
    if field == "failure_labels":
        unknown = [f for f in value if f not in FAILURE_LABELS]
        return (
            f"failure_labels holds {', '.join(map(_got, unknown))}: the failure labels are "
            f"{', '.join(FAILURE_LABELS)}"
        )
    return f"{field}: {message}"


def _claim_problems(
    path: str, field: str, message: str, item: dict, label: ClaimLabel, shown, schema
) -> list[str]:
    support = label.support
    if field == "support":
        choices = _one_of(schema.support_labels)
        value = item.get("support")
        if not value:
            return [f"{_absent(item, field, path)}: it must be {choices}"]
        if value == Support.UNSUPPORTED and not schema.binary:
            return [f"{path} must be {choices}, got {_got(value)}: say which kind"]
        scale = " (this project labels support on a binary scale)" if schema.binary else ""
        return [f"{path} must be {choices}{scale}, got {_got(value)}"]
    if field == "severity":
        value = item.get("severity")
        choices = _one_of(Severity.values)
        if not value:
            return [f"{_absent(item, field, path)}: a claim labelled {support} needs {choices}"]
        if value not in Severity.values:
            return [f"{path} must be {choices}, got {_got(value)}"]
        return [f'{path} must be "none" for a supported claim, got {_got(value)}']
    if field in ("evidence_ids", "evidence_quote") and needs_evidence(label, schema):
        unless = ", unless requires_evidence is false" if schema.claim("requires_evidence") else ""
        why = f"a claim labelled {support} {{}}{unless}"
        if field == "evidence_ids" and not label.evidence_ids:
            what = why.format("names the passage that decides it")
            return [f"{_absent(item, field, path)}: {what}"]
        if field == "evidence_quote" and not label.evidence_quote.strip():
            what = why.format("quotes the words that decide it")
            return [f"{_absent(item, field, path)}: {what}"]
    unknown = [pid for pid in label.evidence_ids if pid not in shown]
    if field == "evidence_ids" and unknown:
        return [
            f"{path} names {', '.join(map(_got, unknown))}: not a passage of this answer (its "
            "retrieved passages, or those its claims cite)"
        ]
    if field == "evidence_quote":
        chosen = [pid for pid in label.evidence_ids if pid in shown]
        if not chosen:
            return [f"{path} needs evidence_ids to name the passage it comes from"]
        if not any(quote_occurs(label.evidence_quote, shown[pid].text) for pid in chosen):
            return [
                f"{path} does not occur in {', '.join(map(_got, chosen))} (evidence_ids), "
                "whitespace aside"
            ]
    if field == "citations":
        return _citation_problems(path, item, label) or [f"{path}: {message}"]
    return [f"{path}: {message}"]


def _citation_problems(path: str, item: dict, label: ClaimLabel) -> list[str]:
    cited = {c.cited_id: c for c in label.claim.citations.all()}
    verdicts = _one_of(CitationVerdict.values)
    problems = []
    for cited_id, verdict in label.citations.items():
        where = f"{path}[{_got(cited_id)}]"
        if cited_id not in cited:
            problems.append(f"{where}: the claim does not cite {cited_id}")
        elif verdict not in CitationVerdict.values:
            problems.append(f"{where} must be {verdicts}, got {_got(verdict)}")
    for cited_id, citation in cited.items():
        if citation.passage_id is not None and not label.citations.get(cited_id):
            where = f"{path}[{_got(cited_id)}]"
            given = item.get("citations")
            state = "missing" if not isinstance(given, dict) or cited_id not in given else "empty"
            problems.append(
                f"{where} is {state}: say whether {cited_id} supports the claim "
                f"({_one_of(CitationVerdict.values[:2])})"
            )
    return problems
