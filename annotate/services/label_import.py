"""Importing reviewers' labels made elsewhere, validated like the browser's."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone
from simple_history.utils import bulk_create_with_history

from annotate import bulk, collector
from annotate.bundles import (
    BundleError,
    BundleInvalid,
    JsonLines,
    kind_of,
    quote_occurs,
)
from annotate.models import (
    FAILURE_LABELS,
    Abstention,
    Answer,
    Assignment,
    CitationVerdict,
    ClaimLabel,
    LabelRevision,
    Project,
    Role,
    Severity,
    Support,
)
from annotate.schema import LabelSchema
from annotate.services.labelling import (
    LabelErrors,
    check_answer_label,
    check_claim_label,
    default_citation_verdicts,
    label_snapshot,
    needs_evidence,
)
from annotate.services.opening import _SECRET_RANDOM

# --- Label import ----------------------------------------------------------------------------

LABEL_FIELDS = {
    "answer_id",
    "reviewer",
    "relevance",
    "abstention",
    "failure_labels",
    "note",
    "claims",
}
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


@dataclass
class LabelImportResult:
    created: int = 0
    unchanged: int = 0


def _latest_labels(assignment_pks: list[int]) -> dict[int, dict]:
    """Each assignment's latest submitted labels (its last LabelRevision), 500 at a time."""
    latest: dict[int, dict] = {}
    for start in range(0, len(assignment_pks), 500):
        chunk = assignment_pks[start : start + 500]
        newest = LabelRevision.objects.filter(assignment=OuterRef("assignment")).order_by("-number")
        latest.update(
            LabelRevision.objects.filter(assignment__in=chunk)
            .filter(pk=Subquery(newest.values("pk")[:1]))
            .values_list("assignment_id", "labels")
        )
    return latest


def import_labels(
    *,
    lines: Iterable[bytes | str],
    project: Project,
    progress: Callable[[str, int], None] | None = None,
) -> LabelImportResult:
    """Import reviewers' submitted labels (SPEC.md format), validated like the browser's
    submissions and under the project's label schema. All or nothing: raises BundleInvalid
    listing every problem by line.

    Label sets are written under the same row locks as live labelling takes (the answers'),
    and the overlap is counted again under them: a reviewer who took the answer in the
    browser while the file was being checked makes the import refuse that line, never gives
    the answer a third label set.

    What it reads and keeps grows with the file, not with the project: the answers the file
    names are read (with their claims and passages) a chunk of lines at a time, and the label
    sets are written in bulk. `progress(step, rows)`, if given, hears when the checking is
    done and the writing starts ("writing", 0)."""
    if project.state == Project.State.DRAFT:
        raise BundleInvalid(
            [BundleError(0, "Labelling is not open: open it first so that the claims are locked.")]
        )
    # Tens of thousands of model instances; the only cycles among them, the prefetched
    # answers', are untied as each chunk is done (_KnownAnswers.release).
    with collector.paused():
        pending, result = _checked(lines, project)
        _write(project, pending, progress)
    result.created = len(pending)
    return result


def _checked(lines: Iterable[bytes | str], project: Project):
    """Every line checked; the label sets to write, or BundleInvalid with every problem."""
    schema = project.schema
    reviewers = {
        m.user.username: m.user
        for m in project.memberships.filter(role=Role.REVIEWER).select_related("user")
    }
    known = _KnownAnswers(project)
    errors: list[BundleError] = []
    pending: list[_Pending] = []
    seen: dict[tuple[str, str], int] = {}
    result = LabelImportResult()
    # Lines for a reviewer who already holds the answer: the same labels again are
    # "unchanged", others a problem. Their latest revisions are read together after the
    # loop (one query per 500), never one query per line.
    again: list[tuple[int, int, dict, list[str], str]] = []
    for chunk in _chunks(JsonLines(lines, errors), LINE_CHUNK):
        known.read(obj.get("answer_id") for _, obj in chunk)
        for number, obj in chunk:
            problems: list[str] = [
                f"unknown field '{key}'" for key in sorted(set(obj) - LABEL_FIELDS)
            ]
            problems += _off_fields(obj, schema)
            answer_id, username = obj.get("answer_id"), obj.get("reviewer")
            answer = known.answers.get(answer_id) if isinstance(answer_id, str) else None
            user = reviewers.get(username) if isinstance(username, str) else None
            if answer is None:
                problems.append(f"unknown answer_id {answer_id!r}")
            if user is None:
                problems.append(f"{username!r} is not a reviewer of this project")
            if answer is None:
                # Without its answer the claims cannot be checked; everything else was.
                errors.extend(BundleError(number, p) for p in problems)
                continue
            assignment = Assignment(project=project, answer=answer, reviewer=user)
            reported: set[str] = set()  # paths whose JSON type was wrong: said once
            problems += _answer_values(obj, assignment, reported)
            placed, label_problems = _parse_claim_labels(
                obj.get("claims"), answer, schema, reported
            )
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
            if user is None:
                errors.extend(BundleError(number, p) for p in problems)
                continue
            key = (answer.answer_id, user.username)
            if key in seen:
                problems.append(
                    f"{user.username} labels this answer twice (first on line {seen[key]})"
                )
            seen.setdefault(key, number)
            snapshot = label_snapshot(assignment, labels, schema)
            previous = known.assignments.get((answer.pk, user.pk))
            if previous is not None:
                again.append((number, previous, snapshot, problems, user.username))
                continue
            holders = known.holders[answer.pk]
            if holders >= project.overlap:
                problems.append(
                    f"this answer already has {holders} reviewer(s), the project's overlap"
                )
            known.holders[answer.pk] += 1
            if problems:
                errors.extend(BundleError(number, p) for p in problems)
            else:
                pending.append(_Pending.of(number, assignment, labels, snapshot))
    known.release()
    latest = _latest_labels([assignment_pk for _, assignment_pk, *_ in again])
    for number, assignment_pk, snapshot, problems, username in again:
        # Unchanged only when the line is valid too: its snapshot leaves out what was wrong
        # with it (an unknown field, a mistyped value), so it can match what is stored.
        if latest.get(assignment_pk) != snapshot:
            problems.append(f"{username} already has labels for this answer")
        if problems:
            errors.extend(BundleError(number, p) for p in problems)
        else:
            result.unchanged += 1
    if errors:
        errors.sort(key=lambda e: e.line)
        raise BundleInvalid(errors)
    return pending, result


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    chunk: list = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


class _KnownAnswers:
    """The project's answers a chunk of the label file names (`answers`), each with its
    claims, citations and passages to check the labels against; and, for every answer the
    file has named so far, the assignments already on it ((answer's pk, reviewer's pk) ->
    assignment's pk) and how many hold it. Each chunk reads its own answers, and what an
    earlier chunk read is let go: a file that names an answer twice, chunks apart, has it
    read twice, never every answer of the file held at once."""

    def __init__(self, project: Project):
        self.project = project
        self.answers: dict[str, Answer] = {}
        self.assignments: dict[tuple[int, int], int] = {}
        self.holders: Counter = Counter()
        self._counted: set[int] = set()  # answers whose assignments are in the two above

    def read(self, answer_ids: Iterable) -> None:
        self.release()
        wanted = {a for a in answer_ids if isinstance(a, str)}
        found = list(
            self.project.answers.filter(answer_id__in=wanted).prefetch_related(
                "claims__citations__passage", "retrieved__passage"
            )
        )
        self.answers = {a.answer_id: a for a in found}
        new = [a.pk for a in found if a.pk not in self._counted]
        if not new:
            return
        self._counted.update(new)
        rows = Assignment.objects.filter(answer__in=new).values_list(
            "pk", "answer_id", "reviewer_id", "status"
        )
        for pk, answer_pk, reviewer_pk, status in rows:
            self.assignments[(answer_pk, reviewer_pk)] = pk
            if status != Assignment.Status.RELEASED:
                self.holders[answer_pk] += 1

    def release(self) -> None:
        """Free the answers read for the last chunk: untied (see annotate.collector), or
        the import's paused collector would keep them to the end."""
        collector.untie(self.answers.values())
        self.answers = {}


def _write(project: Project, pending: list[_Pending], progress) -> None:
    """The checked label sets, in bulk: assignments (with their audit records), claim
    labels, revisions."""
    if not pending:
        return
    # The file's order is often case by case, variant by variant: neither the rows' ids nor
    # their times may keep it, or a reviewer's task list would replay it.
    _SECRET_RANDOM.shuffle(pending)
    if progress:
        progress("writing", 0)
    with transaction.atomic():
        holding = _recount_under_locks(project, pending)
        now = timezone.now()
        for item in pending:
            item.assignment.status = Assignment.Status.SUBMITTED
            item.assignment.submitted_at = now
            item.assignment.revision = 1
        bulk_create_with_history(
            [item.assignment for item in pending], Assignment, batch_size=500, default_date=now
        )
        labels = [(item.assignment.pk, *label) for item in pending for label in item.labels]
        ids = bulk.allocate_ids(ClaimLabel, len(labels))
        bulk.insert_rows(
            ClaimLabel,
            ("id", "assignment_id", *(f.column for f in _LABEL_FIELDS)),
            ((pk, *label) for pk, label in zip(ids, labels, strict=True)),
        )
        bulk.insert_instances(
            LabelRevision,
            [
                LabelRevision(
                    assignment=item.assignment, number=1, labels=item.snapshot, source="import"
                )
                for item in pending
            ],
        )
        pks = [item.assignment.pk for item in pending]
        for start in range(0, len(pks), 500):  # SQLite caps the parameters of one query
            Assignment.objects.filter(pk__in=pks[start : start + 500]).update(
                taken_at=now,
                touched_at=now,  # auto_now_add stamped each row as it was created
            )
        full = [pk for pk, n in holding.items() if n >= project.overlap]
        for start in range(0, len(full), 500):
            Answer.objects.filter(pk__in=full[start : start + 500]).update(full=True)
        bulk.after_commit(analyze=[ClaimLabel, LabelRevision], vacuum=[Assignment, Answer])


# What a checked claim label keeps as it waits to be written: its fields but its key and its
# assignment (neither exists yet), in this order.
_LABEL_FIELDS = tuple(
    f for f in ClaimLabel._meta.concrete_fields if f.name not in ("id", "assignment")
)


@dataclass(slots=True)
class _Pending:
    """A checked label set waiting to be written. It names its answer and claims by key: the
    checked instances hold the answer with its claims, citations and passages, and a file's
    worth of them was most of an import's memory (486 MB for 10,000 label sets)."""

    line: int
    assignment: Assignment
    labels: list[tuple]  # each label's values of _LABEL_FIELDS
    snapshot: dict

    @classmethod
    def of(cls, line: int, assignment: Assignment, labels: list[ClaimLabel], snapshot: dict):
        own = Assignment(
            **{f.attname: getattr(assignment, f.attname) for f in Assignment._meta.concrete_fields}
        )
        rows = [tuple(getattr(label, f.attname) for f in _LABEL_FIELDS) for label in labels]
        return cls(line, own, rows, snapshot)


def _recount_under_locks(project: Project, pending: list[_Pending]) -> Counter:
    """Lock the answers about to get a label set, as next_task does, and check the overlap
    and the reviewer's own assignment again: the file was checked before any lock was held.
    Returns each answer's holders once the file's label sets are in."""
    answer_pks = sorted({item.assignment.answer_id for item in pending})
    for start in range(0, len(answer_pks), 500):
        list(
            Answer.objects.select_for_update()
            .filter(pk__in=answer_pks[start : start + 500])
            .values_list("pk", flat=True)
        )
    holding: Counter = Counter()
    taken: set[tuple[int, int]] = set()
    for start in range(0, len(answer_pks), 500):
        rows = (
            Assignment.objects.filter(answer_id__in=answer_pks[start : start + 500])
            .exclude(status=Assignment.Status.RELEASED)
            .values_list("answer_id", "reviewer_id")
        )
        for answer_pk, reviewer_pk in rows:
            holding[answer_pk] += 1
            taken.add((answer_pk, reviewer_pk))
    errors = []
    for item in sorted(pending, key=lambda p: p.line):
        answer_pk, reviewer_pk = item.assignment.answer_id, item.assignment.reviewer_id
        if (answer_pk, reviewer_pk) in taken:
            errors.append(
                BundleError(
                    item.line,
                    f"{item.assignment.reviewer.username} took this answer in the browser "
                    "while the file was being imported",
                )
            )
        elif holding[answer_pk] >= project.overlap:
            errors.append(
                BundleError(
                    item.line,
                    f"this answer reached the project's overlap ({project.overlap}) while the "
                    "file was being imported",
                )
            )
        holding[answer_pk] += 1
    if errors:
        raise BundleInvalid(errors)
    return holding


def _given(value) -> bool:
    return value not in (None, "", [], {})


def _off_fields(obj: dict, schema: LabelSchema) -> list[str]:
    return [
        f"{key} is not labelled in this project (its label schema: {schema.describe()})"
        for key in ("relevance", "abstention", "failure_labels")
        if key in obj and _given(obj[key]) and not schema.answer(key)
    ]


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
