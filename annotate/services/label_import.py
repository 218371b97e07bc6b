"""Importing reviewers' labels made elsewhere, validated like the browser's."""

from __future__ import annotations

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
)
from annotate.models import (
    Answer,
    Assignment,
    ClaimLabel,
    LabelRevision,
    Project,
    Role,
)
from annotate.schema import LabelSchema
from annotate.services.labelling import (
    LabelErrors,
    check_answer_label,
    check_claim_label,
    default_citation_verdicts,
    label_snapshot,
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
            problems += _answer_values(obj, assignment)
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
        f"'{key}' is not labelled in this project (its label schema: {schema.describe()})"
        for key in ("relevance", "abstention", "failure_labels")
        if key in obj and _given(obj[key]) and not schema.answer(key)
    ]


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
