"""Importing reviewers' labels made elsewhere, validated like the browser's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

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
from annotate.services.labelling import (
    LabelErrors,
    check_answer_label,
    check_claim_label,
    default_citation_verdicts,
    label_snapshot,
    shown_passages,
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


@dataclass
class LabelImportResult:
    created: int = 0
    unchanged: int = 0


def import_labels(*, lines: Iterable[bytes | str], project: Project) -> LabelImportResult:
    """Import reviewers' submitted labels (SPEC.md format), validated like the browser's
    submissions. All or nothing: raises BundleInvalid listing every problem by line."""
    if project.state == Project.State.DRAFT:
        raise BundleInvalid(
            [BundleError(0, "Labelling is not open: open it first so that the claims are locked.")]
        )
    reviewers = {
        m.user.username: m.user
        for m in project.memberships.filter(role=Role.REVIEWER).select_related("user")
    }
    answers = {
        a.answer_id: a
        for a in project.answers.prefetch_related(
            "claims__citations__passage", "retrieved__passage"
        )
    }
    existing = {
        (a.answer_id, a.reviewer_id): a
        for a in Assignment.objects.filter(project=project).select_related("answer")
    }
    holders = Counter(
        a.answer_id for a in existing.values() if a.status != Assignment.Status.RELEASED
    )
    errors: list[BundleError] = []
    pending: list[tuple[Assignment, list[ClaimLabel], dict]] = []
    seen: dict[tuple[str, str], int] = {}
    result = LabelImportResult()
    for number, obj in JsonLines(lines, errors):
        problems: list[str] = []
        for key in sorted(set(obj) - LABEL_FIELDS):
            problems.append(f"unknown field '{key}'")
        answer = answers.get(obj.get("answer_id"))
        user = reviewers.get(obj.get("reviewer"))
        if answer is None:
            problems.append(f"unknown answer_id {obj.get('answer_id')!r}")
        if user is None:
            problems.append(f"{obj.get('reviewer')!r} is not a reviewer of this project")
        if answer is None or user is None:
            errors.extend(BundleError(number, p) for p in problems)
            continue
        key = (answer.answer_id, user.username)
        if key in seen:
            problems.append(f"{user.username} labels this answer twice (first on line {seen[key]})")
        seen.setdefault(key, number)
        assignment = Assignment(
            project=project,
            answer=answer,
            reviewer=user,
            relevance=obj.get("relevance"),
            abstention=obj.get("abstention") or "",
            failure_labels=obj.get("failure_labels") or [],
            note=obj.get("note") or "",
        )
        if not isinstance(assignment.relevance, (int, type(None))) or isinstance(
            assignment.relevance, bool
        ):
            problems.append("'relevance' must be 0, 1 or 2")
            assignment.relevance = None
        labels, label_problems = _parse_claim_labels(obj.get("claims"), answer)
        problems += label_problems
        found = LabelErrors()
        check_answer_label(assignment, complete=True, errors=found)
        shown = shown_passages(answer)
        for label in labels:
            check_claim_label(label, label.claim, shown, complete=True, errors=found)
        problems += [f"{_field_name(k)}: {v}" for k, v in found.fields.items()]
        snapshot = label_snapshot(assignment, labels)
        previous = existing.get((answer.pk, user.pk))
        if previous is not None:
            last = previous.revisions.order_by("-number").first()
            if last is not None and last.labels == snapshot:
                result.unchanged += 1
                continue
            problems.append(f"{user.username} already has labels for this answer")
        elif holders[answer.pk] >= project.overlap:
            problems.append(
                f"this answer already has {holders[answer.pk]} reviewer(s), the project's overlap"
            )
        holders[answer.pk] += 1
        if problems:
            errors.extend(BundleError(number, p) for p in problems)
        else:
            pending.append((assignment, labels, snapshot))
    if errors:
        raise BundleInvalid(errors)
    # The file's order is often case by case, variant by variant: neither the rows' ids nor
    # their times may keep it, or a reviewer's task list would replay it.
    _SECRET_RANDOM.shuffle(pending)
    with transaction.atomic():
        now = timezone.now()
        for assignment, labels, snapshot in pending:
            assignment.status = Assignment.Status.SUBMITTED
            assignment.submitted_at = now
            assignment.revision = 1
            assignment.save()
            for label in labels:
                label.assignment = assignment
            ClaimLabel.objects.bulk_create(labels)
            LabelRevision.objects.create(
                assignment=assignment, number=1, labels=snapshot, source="import"
            )
        pks = [a.pk for a, _, _ in pending]
        for start in range(0, len(pks), 500):  # SQLite caps the parameters of one query
            Assignment.objects.filter(pk__in=pks[start : start + 500]).update(
                taken_at=now,
                touched_at=now,  # auto_now_add stamped each row as it was saved
            )
    result.created = len(pending)
    return result


def _field_name(key: str) -> str:
    parts = key.split(".")
    return f"claims[{parts[1]}].{parts[2]}" if parts[0] == "claim" else parts[-1]


def _parse_claim_labels(items, answer: Answer) -> tuple[list[ClaimLabel], list[str]]:
    problems: list[str] = []
    claims = {c.ordinal: c for c in answer.claims.all()}
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        return [], ["'claims' must be a list of objects"]
    labels: list[ClaimLabel] = []
    for position, item in enumerate(items):
        for key in sorted(set(item) - CLAIM_LABEL_FIELDS):
            problems.append(f"claims[{position}]: unknown field '{key}'")
        index = item.get("index")
        claim = (
            claims.get(index) if isinstance(index, int) and not isinstance(index, bool) else None
        )
        if claim is None:
            problems.append(f"claims[{position}]: no claim with index {index!r} in this answer")
            continue
        if any(label.claim is claim for label in labels):
            problems.append(f"claims[{position}]: claim {index} is labelled twice")
            continue
        citations = item.get("citations") or {}
        evidence_ids = item.get("evidence_ids") or []
        if not isinstance(citations, dict) or not isinstance(evidence_ids, list):
            problems.append(f"claims[{position}]: 'citations' is an object, 'evidence_ids' a list")
            continue
        merged = {**citations, **default_citation_verdicts(claim)}
        labels.append(
            ClaimLabel(
                claim=claim,
                support=item.get("support") or "",
                severity=item.get("severity") or "",
                requires_evidence=item.get("requires_evidence", True) is not False,
                evidence_ids=evidence_ids,
                evidence_quote=item.get("evidence_quote") or "",
                citations=merged,
                note=item.get("note") or "",
            )
        )
    missing = sorted(set(claims) - {label.claim.ordinal for label in labels})
    if missing:
        problems.append(f"claims {', '.join(map(str, missing))} have no label")
    return labels, problems
