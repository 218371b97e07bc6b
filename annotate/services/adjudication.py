"""A lead's decisions on the items two reviewers disagree on."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from annotate import gold
from annotate.models import (
    FAILURE_LABELS,
    RELEVANCE_RUBRIC,
    Abstention,
    AdjudicationLock,
    Answer,
    Assignment,
    CitationVerdict,
    Claim,
    Decision,
    Project,
    Severity,
    Support,
)
from annotate.services.base import ServiceError

# --- Adjudication ------------------------------------------------------------------------------


class Conflict(ServiceError):
    """Another lead saved the same item first; nothing of this save was written."""


@dataclass(frozen=True)
class DecisionInput:
    claim: Claim | None  # None: a field of the answer as a whole
    field: str
    value: object


def _check_decision_value(field_name: str, value) -> str | None:
    """The reason a gold value is not acceptable for its field, or None."""
    checks = {
        "support": lambda v: v in Support.values,
        "severity": lambda v: v in Severity.values,
        "requires_evidence": lambda v: isinstance(v, bool),
        "relevance": lambda v: v in RELEVANCE_RUBRIC,
        "abstention": lambda v: v in Abstention.values,
        "failure_labels": lambda v: isinstance(v, list) and set(v) <= set(FAILURE_LABELS),
        "citations": lambda v: (
            isinstance(v, dict) and all(x in CitationVerdict.values for x in v.values())
        ),
        "evidence": lambda v: isinstance(v, dict) and isinstance(v.get("evidence_ids"), list),
    }
    check = checks.get(field_name)
    if check is None:
        return f"'{field_name}' is not a label field."
    return None if check(value) else f"{value!r} is not a valid {field_name}."


def _outside_schema(answer: Answer, decisions: list[DecisionInput]) -> list[str]:
    """Decisions the project's label schema does not allow: a field it does not label, a
    derived field (support_binary follows support), a support value off its scale."""
    if not decisions:
        return []
    schema = Project.objects.only("label_schema").get(pk=answer.project_id).schema
    problems = []
    for d in decisions:
        fields = gold.claim_fields(schema) if d.claim is not None else gold.answer_fields(schema)
        if d.field in gold.DERIVED:
            problems.append(f"'{d.field}' follows the support decision: decide 'support'.")
        elif d.field not in fields:
            problems.append(f"'{d.field}' is not labelled in this project.")
        elif d.field == "support" and d.value not in schema.support_labels:
            problems.append(
                f"{d.value!r} is not on this project's support scale "
                f"({', '.join(schema.support_labels)})."
            )
    return problems


@transaction.atomic
def start_adjudication(*, answer: Answer, lead) -> AdjudicationLock | None:
    """Opening an item for adjudication freezes the reviewers' labels (no more reopening).

    Serialised with reopen_task on the answer's row: a reviewer's reopen either commits
    before (and the answer is no longer doubly labelled, so nothing starts and the caller
    shows nothing) or waits and is refused. Reading the labels comes after this call, so a
    lead never sees labels a reviewer then changes. None when the answer does not hold two
    submitted label sets: a lead opening that URL must not freeze a lone reviewer's task."""
    Answer.objects.select_for_update().filter(pk=answer.pk).values_list("pk").first()
    lock = AdjudicationLock.objects.filter(answer=answer).first()
    if lock is not None:
        return lock
    submitted = answer.assignments.filter(status=Assignment.Status.SUBMITTED).count()
    if submitted < 2:
        return None
    return AdjudicationLock.objects.create(answer=answer, started_by=lead)


@transaction.atomic
def adjudicate(
    *, answer: Answer, lead, version: int, decisions: list[DecisionInput], rationale: str
) -> AdjudicationLock:
    """Record a lead's gold values for some fields of one answer and its claims.

    `version` is the lock version the lead's screen was rendered with; if another lead saved
    in between, Conflict is raised and nothing is written, so the second lead can compare and
    save again instead of silently overwriting the first."""
    lock, _ = AdjudicationLock.objects.get_or_create(answer=answer, defaults={"started_by": lead})
    lock = AdjudicationLock.objects.select_for_update().get(pk=lock.pk)
    if lock.version != version:
        raise Conflict(
            "Another lead saved this item while you were reading it. Their decision is shown "
            "now; your choices are kept below — review them and save again."
        )
    problems = [reason for d in decisions if (reason := _check_decision_value(d.field, d.value))]
    problems += _outside_schema(answer, decisions)
    if any(d.claim is not None and d.claim.answer_id != answer.pk for d in decisions):
        problems.append("A decision names a claim of another answer.")
    if problems:
        raise ServiceError(" ".join(problems))
    if decisions and not rationale.strip():
        raise ServiceError("Write a rationale: it is exported with the gold label.")
    Decision.objects.bulk_create(
        Decision(
            answer=answer,
            claim=d.claim,
            field=d.field,
            value=d.value,
            rationale=rationale.strip(),
            decided_by=lead,
        )
        for d in decisions
    )
    lock.version += 1
    lock.save(update_fields=["version"])
    return lock
