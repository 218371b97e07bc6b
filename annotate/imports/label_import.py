"""Importing reviewers' labels made elsewhere, validated like the browser's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone
from simple_history.utils import bulk_create_with_history

from annotate.common import bulk, collector, computed
from annotate.imports.label_lines import (
    ANSWER_LABEL_FIELDS,
    CLAIM_LABEL_FIELDS,
    LINE_CHUNK,
    NamedAnswers,
    check_line,
    chunks,
    off_fields,
    unknown_fields,
)
from annotate.imports.lines import BundleError, BundleInvalid, JsonLines
from annotate.labelling.services import label_snapshot
from annotate.models import Answer, Assignment, ClaimLabel, LabelRevision, Project, Role
from annotate.projects.opening import _SECRET_RANDOM

# --- Label import ----------------------------------------------------------------------------

LABEL_FIELDS = {"answer_id", "reviewer", "claims", *ANSWER_LABEL_FIELDS}
__all__ = ["CLAIM_LABEL_FIELDS", "LABEL_FIELDS", "LabelImportResult", "import_labels"]


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
    for chunk in chunks(JsonLines(lines, errors), LINE_CHUNK):
        known.read(obj.get("answer_id") for _, obj in chunk)
        for number, obj in chunk:
            problems = unknown_fields(obj, LABEL_FIELDS) + off_fields(obj, schema)
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
            checked = check_line(obj, answer, project=project, schema=schema)
            assignment, labels = checked.assignment, checked.labels
            assignment.reviewer = user
            problems += checked.problems
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


class _KnownAnswers(NamedAnswers):
    """The answers of the chunk being checked (NamedAnswers) and, for every answer the file
    has named so far, the assignments already on it ((answer's pk, reviewer's pk) ->
    assignment's pk) and how many hold it."""

    def __init__(self, project: Project):
        super().__init__(project)
        self.assignments: dict[tuple[int, int], int] = {}
        self.holders: Counter = Counter()
        self._counted: set[int] = set()  # answers whose assignments are in the two above

    def read(self, answer_ids: Iterable) -> list[Answer]:
        found = super().read(answer_ids)
        new = [a.pk for a in found if a.pk not in self._counted]
        if not new:
            return found
        self._counted.update(new)
        rows = Assignment.objects.filter(answer__in=new).values_list(
            "pk", "answer_id", "reviewer_id", "status", "is_check"
        )
        for pk, answer_pk, reviewer_pk, status, is_check in rows:
            self.assignments[(answer_pk, reviewer_pk)] = pk
            if status != Assignment.Status.RELEASED and not is_check:
                self.holders[answer_pk] += 1
        return found


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
        computed.lock(project)  # before the answers' rows: computed.lock says why
        # Imported label sets count as made under the guidelines current as they are written
        # (read under the project's lock: an edit commits before or after the import).
        guidelines = (
            Project.objects.filter(pk=project.pk).values_list("guidelines_version", flat=True).get()
        )
        holding = _recount_under_locks(project, pending)
        now = timezone.now()
        for item in pending:
            item.assignment.guideline_version = guidelines
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
        computed.touch(project, answers=holding)
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
            .values_list("answer_id", "reviewer_id", "is_check")
        )
        for answer_pk, reviewer_pk, is_check in rows:
            holding[answer_pk] += not is_check  # a gold check fills no slot
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
