"""A lead's decisions on the items two reviewers disagree on."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotate.adjudication import reaudit
from annotate.common import computed, safe_json
from annotate.common.errors import ServiceError
from annotate.gold.pairs import ANSWER_FIELDS, CLAIM_FIELDS, DERIVED, answer_fields, claim_fields
from annotate.imports.records import quote_occurs
from annotate.labelling.services import shown_passages
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
    Flag,
    Passage,
    Project,
    Severity,
    Support,
)
from annotate.webhooks import events as webhooks

# --- Adjudication ------------------------------------------------------------------------------


class Conflict(ServiceError):
    """Another lead saved the same item first; nothing of this save was written."""


class NotYetAdjudicable(ServiceError):
    """The answer's labels may still change: it opens for adjudication later, so a lead never
    reads labels that then change. Leads see every label anyway; reviewers never see this."""


class StillLabelling(NotYetAdjudicable):
    """Another reviewer holds the answer and has not submitted (a project whose overlap is
    above two): their label set is part of what the lead decides from."""

    def __init__(self):
        super().__init__(
            "A reviewer is still labelling this task. It opens for adjudication once they "
            "submit, so no label changes after you have read it."
        )


class StillUndoable(NotYetAdjudicable):
    """A reviewer of this answer may still undo their submission (until `until`): the answer
    opens for adjudication when that window closes."""

    def __init__(self, until):
        super().__init__(
            "A reviewer can still undo their submission of this task, until "
            f"{timezone.localtime(until):%H:%M} {timezone.localtime(until):%Z}. It opens for "
            "adjudication then, so no label changes after you have read it."
        )
        self.until = until


@dataclass(frozen=True)
class DecisionInput:
    claim: Claim | None  # None: a field of the answer as a whole
    field: str
    value: object
    # Why, for this item (a claim, or the answer): exported with the gold label of the field.
    # Empty: the save's shared rationale applies.
    rationale: str = ""


def _check_decision_value(
    field_name: str,
    value: Any,
    *,
    support_labels: Iterable[str] = tuple(Support.values),
    cited: Mapping[str, bool] | None = None,
    shown: Mapping[str, Passage] | None = None,
) -> str | None:
    """The reason a gold value is not acceptable for its field, or None.

    Strict about types: JSON's `true` is no relevance (True == 1 in Python), `[1, 2]` are no
    passage ids, and a gold value that passed here must also pass the gold export's JSON
    Schema (docs/gold-export.schema.json). `cited` (cited id -> resolves to a passage) and
    `shown` (the passages the task shows) are the claim's and the answer's, when known."""
    check = _CHECKS.get(field_name)
    if check is None:
        return f"'{field_name}' is not a label field."
    reason = check(value, support_labels=tuple(support_labels), cited=cited, shown=shown)
    if reason is None:
        return None
    return f"{_short_repr(value)} is not a valid {field_name}{': ' + reason if reason else ''}."


def _is_str_in(value: Any, allowed: Iterable[str]) -> bool:
    return isinstance(value, str) and value in allowed


def _support(value, *, support_labels, **_) -> str | None:
    return None if _is_str_in(value, support_labels) else ", ".join(support_labels)


def _severity(value, **_) -> str | None:
    # "" is what a reviewer leaves when severity is not labelled; the gold schema allows it.
    return None if _is_str_in(value, ("", *Severity.values)) else ", ".join(Severity.values)


def _requires_evidence(value, **_) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def _relevance(value, **_) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value in RELEVANCE_RUBRIC
    return None if ok else "0, 1 or 2"


def _abstention(value, **_) -> str | None:
    # "": the answer did not decline, so there is nothing to judge (as a reviewer leaves it).
    return None if _is_str_in(value, ("", *Abstention.values)) else ", ".join(Abstention.values)


def _failure_labels(value, **_) -> str | None:
    if not isinstance(value, list) or not all(_is_str_in(v, FAILURE_LABELS) for v in value):
        return f"a list of {', '.join(FAILURE_LABELS)}"
    if len(set(value)) != len(value):
        return "a label is given twice"
    return None


def _citations(value, *, cited, **_) -> str | None:
    if not isinstance(value, dict) or not all(
        _is_str_in(v, CitationVerdict.values) for v in value.values()
    ):
        return f"an object of cited passage id to {', '.join(CitationVerdict.values)}"
    if cited is None:
        return None
    unknown = [key for key in value if key not in cited]
    if unknown:
        return f"the claim does not cite {', '.join(map(_short_repr, unknown))}"
    unresolved = [
        key
        for key, verdict in value.items()
        if not cited[key] and verdict != CitationVerdict.NOT_FOUND
    ]
    if unresolved:
        return f"{', '.join(unresolved)} resolves to no passage: citation_not_found"
    return None


def _evidence(value, *, shown, **_) -> str | None:
    shape = "an object with evidence_ids (a list of passage ids) and evidence_quote"
    if not isinstance(value, dict) or set(value) - {"evidence_ids", "evidence_quote"}:
        return shape
    ids, quote = value.get("evidence_ids"), value.get("evidence_quote")
    if not isinstance(ids, list) or not all(isinstance(pid, str) for pid in ids):
        return shape
    if quote is not None and not isinstance(quote, str):
        return "evidence_quote must be a string"
    if len(set(ids)) != len(ids):
        return "a passage is given twice"
    if shown is None:
        return None
    unknown = [pid for pid in ids if pid not in shown]
    if unknown:
        return f"not a passage of this task: {', '.join(map(_short_repr, unknown))}"
    if quote and quote.strip():
        if not ids:
            return "choose the passage the quote comes from"
        if not any(quote_occurs(quote, shown[pid].text) for pid in ids):
            return "the quote does not occur in the chosen passage(s)"
    return None


_CHECKS = {
    "support": _support,
    "severity": _severity,
    "requires_evidence": _requires_evidence,
    "relevance": _relevance,
    "abstention": _abstention,
    "failure_labels": _failure_labels,
    "citations": _citations,
    "evidence": _evidence,
}


def _short_repr(value: Any, limit: int = 80) -> str:
    # Printable whatever came in: the message goes back into a page or a JSON body.
    text = safe_json.printable(json.dumps(value, ensure_ascii=False, default=str))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _outside_schema(
    answer: Answer, decisions: list[DecisionInput]
) -> tuple[list[str], list[DecisionInput]]:
    """(problems, the decisions left to check): a derived field (support_binary follows the
    support decision) and a field the project's label schema does not label are refused here;
    a field on the wrong item or a bad value is _decision_problems' to say."""
    if not decisions:
        return [], []
    schema = Project.objects.only("label_schema").get(pk=answer.project_id).schema
    problems, left = [], []
    for d in decisions:
        kind = CLAIM_FIELDS if d.claim is not None else ANSWER_FIELDS
        labelled = claim_fields(schema) if d.claim is not None else answer_fields(schema)
        if d.field in DERIVED:
            problems.append(f"'{d.field}' follows the support decision: decide 'support'.")
        elif d.field in kind and d.field not in labelled:
            problems.append(f"'{d.field}' is not labelled in this project.")
        else:
            left.append(d)
    return problems, left


MAX_RATIONALE = 5000


def _rationale_problems(rationale: str, decisions: list[DecisionInput]) -> list[str]:
    """A rationale is exported with its gold label: bounded, and only storable text (no NUL,
    no lone surrogate), whether it came from the page or the API."""
    problems = []
    for where, text in [
        ("the rationale", rationale),
        *((f"the rationale of {_item_name(d.claim)}", d.rationale) for d in decisions),
    ]:
        if len(text) > MAX_RATIONALE:
            problems.append(f"Shorten {where} to {MAX_RATIONALE} characters ({len(text)} now).")
        elif problem := safe_json.text_problem(text):
            problems.append(f"{where[0].upper()}{where[1:]}: {problem}.")
    return sorted(set(problems))


@transaction.atomic
def start_adjudication(*, answer: Answer, lead) -> AdjudicationLock | None:
    """Opening an item for adjudication freezes the reviewers' labels.

    A reviewer can undo a submission only inside its window (labelling.can_reopen), and an
    answer opens only once every window on it has closed (StillUndoable until then): so no
    reopen ever follows the start of adjudication, and a refused reopen says nothing about
    the co-reviewer. Serialised with reopen_task on the answer's row, so a reopen at the last
    moment either commits before (the answer is no longer doubly labelled: nothing starts)
    or waits and finds its window closed. Reading the labels comes after this call. None
    when the answer does not hold two submitted label sets: a lead opening that URL must not
    freeze a lone reviewer's task."""
    Answer.objects.select_for_update().filter(pk=answer.pk).values_list("pk").first()
    lock = AdjudicationLock.objects.filter(answer=answer).first()
    if lock is not None:
        return lock
    # A gold check's label set is no part of what is adjudicated (annotate.checks).
    pair = answer.assignments.filter(is_check=False)
    submitted = pair.filter(status=Assignment.Status.SUBMITTED)
    if submitted.count() < 2:
        return None
    if pair.filter(status=Assignment.Status.IN_PROGRESS).exists():
        raise StillLabelling()
    undoable = submitted.filter(undo_until__gt=timezone.now()).aggregate(Max("undo_until"))
    if undoable["undo_until__max"] is not None:
        raise StillUndoable(undoable["undo_until__max"])
    return AdjudicationLock.objects.create(answer=answer, started_by=lead)


@transaction.atomic
def adjudicate(
    *,
    answer: Answer,
    lead,
    version: int,
    decisions: list[DecisionInput],
    rationale: str = "",
) -> AdjudicationLock:
    """Record a lead's gold values for some fields of one answer and its claims.

    Each decision is stored with its own rationale -- the one written for its claim (or for
    the answer) -- or, when it has none, the save's shared `rationale` (one per task, as in
    Prodigy's review). Both are optional: a decision with neither is stored with an empty
    rationale, and the gold export carries it as "".

    `version` is the lock version the lead's screen was rendered with; if another lead saved
    in between, Conflict is raised and nothing is written, so the second lead can compare and
    save again instead of silently overwriting the first."""
    computed.lock(answer.project_id)  # before the answer's row: computed.lock says why
    # The guidelines the lead decides under, read under the project's lock (an edit commits
    # before or after this decision, never halfway).
    guidelines = (
        Project.objects.filter(pk=answer.project_id)
        .values_list("guidelines_version", flat=True)
        .get()
    )
    lock = start_adjudication(answer=answer, lead=lead)  # NotYetAdjudicable: not yet
    if lock is None:
        raise ServiceError("This task does not hold two submitted label sets: nothing to decide.")
    lock = AdjudicationLock.objects.select_for_update().get(pk=lock.pk)
    if lock.version != version:
        raise Conflict(
            "Another lead saved this item while you were reading it. Their decision is shown "
            "now; your choices are kept below — review them and save again."
        )
    problems, left = _outside_schema(answer, decisions)
    problems += _decision_problems(answer, left)
    problems += _rationale_problems(rationale, decisions)
    if problems:
        raise ServiceError(" ".join(problems))
    Decision.objects.bulk_create(
        Decision(
            answer=answer,
            claim=d.claim,
            field=d.field,
            value=d.value,
            rationale=(d.rationale.strip() or rationale.strip()),
            decided_by=lead,
            guideline_version=guidelines,
        )
        for d in decisions
    )
    # A save of a re-opened task answers the re-open, even one that changes no field (the
    # lead kept every value under the current guidelines).
    reaudit.close_reopened(answer=answer, version=guidelines)
    lock.version += 1
    lock.save(update_fields=["version"])
    computed.touch(answer.project_id, answers=[answer.pk])
    webhooks.dispute_decided(answer=answer, version=lock.version, decisions=decisions)
    return lock


def _item_name(claim: Claim | None) -> str:
    return "the whole answer" if claim is None else f"claim {claim.ordinal + 1}"


def _decision_problems(answer: Answer, decisions: list[DecisionInput]) -> list[str]:
    """Every decision checked against its field and item: a claim of this answer for a claim
    field, none for an answer field, and a value its field allows (the passages shown and the
    claim's citations read only when a decision needs them)."""
    problems = []
    if any(d.claim is not None and d.claim.answer_id != answer.pk for d in decisions):
        return ["A decision names a claim of another answer."]
    needs_passages = any(d.field == "evidence" for d in decisions)
    shown = shown_passages(answer) if needs_passages else None
    support_labels = answer.project.schema.support_labels
    for d in decisions:
        if (d.claim is None) != (d.field in ANSWER_FIELDS) and d.field in _CHECKS:
            where = "the answer" if d.claim is None else "a claim"
            problems.append(f"'{d.field}' is not a field of {where}.")
            continue
        cited = None
        if d.claim is not None and d.field == "citations":
            cited = {c.cited_id: c.passage_id is not None for c in d.claim.citations.all()}
        reason = _check_decision_value(
            d.field, d.value, support_labels=support_labels, cited=cited, shown=shown
        )
        if reason:
            problems.append(reason)
    return problems


# --- Flags -------------------------------------------------------------------------------------


@transaction.atomic
def resolve_flag(*, flag: Flag, lead, resolution: str = "") -> Flag:
    """A lead closes a reviewer's flag, with optional words of their own (kept for the leads;
    the reviewer never reads them). Resolving a resolved flag changes nothing."""
    flag = Flag.objects.select_for_update().get(pk=flag.pk)
    if flag.resolved_at is not None:
        return flag
    resolution = resolution.strip()
    if len(resolution) > MAX_RATIONALE:
        raise ServiceError(f"Shorten the resolution to {MAX_RATIONALE} characters.")
    if problem := safe_json.text_problem(resolution):
        raise ServiceError(f"The resolution: {problem}.")
    flag.resolved_at = timezone.now()
    flag.resolved_by = lead
    flag.resolution = resolution
    flag.save(update_fields=["resolved_at", "resolved_by", "resolution"])
    return flag
