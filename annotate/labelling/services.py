"""A reviewer's labels: drafts, validation, submission, reopening."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotate.common import computed, safe_json
from annotate.common.errors import ServiceError
from annotate.imports.records import quote_occurs
from annotate.models import (
    FAILURE_LABELS,
    RELEVANCE_RUBRIC,
    Abstention,
    AdjudicationLock,
    Answer,
    Assignment,
    Citation,
    CitationVerdict,
    Claim,
    ClaimLabel,
    Flag,
    LabelRevision,
    Passage,
    RetrievedPassage,
    Severity,
    Support,
)
from annotate.schema import LabelSchema
from annotate.webhooks import events as webhooks

# --- Labels ----------------------------------------------------------------------------------

IDLE_CAP_SECONDS = 300  # a pause longer than this is not counted as time spent labelling


@dataclass
class LabelErrors:
    """Field errors keyed like the form: 'claim.<index>.<field>' or 'answer.<field>'."""

    fields: dict[str, str] = field(default_factory=dict)

    def add(self, key: str, message: str) -> None:
        self.fields.setdefault(key, message)

    def __bool__(self) -> bool:
        return bool(self.fields)


class StaleDraft(ServiceError):
    """A draft save made from an older version than the one stored: another tab (or script)
    of the same reviewer saved in between. Nothing was written; `current` is what is stored
    (a ClaimLabel, or the Assignment for the answer-level label), to show instead."""

    def __init__(self, message: str, *, current):
        super().__init__(message)
        self.current = current


STALE_CLAIM = (
    "Claim {number} was changed in another tab or window since this one loaded it. Its newer "
    "labels are shown here; nothing of this change was saved."
)
STALE_ANSWER = (
    "The whole-answer labels were changed in another tab or window since this one loaded "
    "them. The newer labels are shown here; nothing of this change was saved."
)


def _locked(assignment: Assignment) -> Assignment:
    """The assignment's row, locked for this transaction, with the caller's answer and
    project (an assignment's never change, and a draft save is hot enough that joining them
    again shows)."""
    locked = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if Assignment.answer.is_cached(assignment):
        locked.answer = assignment.answer
    if Assignment.project.is_cached(assignment):
        locked.project = assignment.project
    return locked


def _seconds_between(touched_at, now) -> int:
    """Labelling time between two touches; a pause longer than the cap counts as the cap."""
    return int(max(0, min((now - touched_at).total_seconds(), IDLE_CAP_SECONDS)))


def _touch(assignment: Assignment, now) -> None:
    assignment.seconds_spent += _seconds_between(assignment.touched_at, now)
    assignment.touched_at = now


def _locked_and_touched(assignment: Assignment, now) -> tuple[Assignment, bool]:
    """The assignment locked for this transaction, editable, and touched at `now`: a draft
    save's write of the assignment, done first so that it is also the lock. The flag says
    whether the row was still as the caller read it.

    The caller read the row a moment ago (the request's own query). When it is still as read
    (in progress, touched when it was read), one conditional UPDATE, computed from what was
    read, locks and writes it: no separate SELECT ... FOR UPDATE. A save in between (another
    tab) or a release moves touched_at or the status, the UPDATE matches nothing, and the row
    is read under lock and touched from what it holds. Both ways, every later label write in
    the transaction is serialised behind this row, as before."""
    if assignment.status == Assignment.Status.IN_PROGRESS:
        spent = assignment.seconds_spent + _seconds_between(assignment.touched_at, now)
        written = Assignment.objects.filter(
            pk=assignment.pk,
            status=Assignment.Status.IN_PROGRESS,
            touched_at=assignment.touched_at,
            seconds_spent=assignment.seconds_spent,
        ).update(touched_at=now, seconds_spent=spent)
        if written:
            # A copy: the caller's stays as read should the transaction roll back.
            touched = copy.copy(assignment)
            touched.touched_at, touched.seconds_spent = now, spent
            return touched, True
    locked = _locked(assignment)
    _editable(locked)
    _touch(locked, now)
    locked.skip_history_when_saving = True  # a draft save is no audit event
    locked.save(update_fields=["seconds_spent", "touched_at"])
    return locked, False


def _editable(assignment: Assignment) -> None:
    if assignment.status != Assignment.Status.IN_PROGRESS:
        raise ServiceError(
            "This task is submitted: reopen it to change your labels."
            if assignment.status == Assignment.Status.SUBMITTED
            else "This task was released and can no longer be edited."
        )


def shown_passages(answer: Answer) -> dict[str, Passage]:
    """The passages a reviewer sees for an answer: what the system retrieved, plus any passage
    a claim cites that was not retrieved. Evidence must come from these."""
    retrieved = RetrievedPassage.objects.filter(answer=answer).select_related("passage")
    shown = {r.passage.passage_id: r.passage for r in retrieved.order_by("rank")}
    cited = Citation.objects.filter(claim__answer=answer, passage__isnull=False)
    for citation in cited.select_related("passage"):
        shown.setdefault(citation.passage.passage_id, citation.passage)
    return shown


def check_claim_label(
    label: ClaimLabel,
    claim: Claim,
    shown: dict[str, Passage],
    *,
    citations: Iterable[Citation],
    schema: LabelSchema,
    complete: bool,
    errors: LabelErrors,
) -> None:
    """Validate one claim label under the project's label schema. `complete` adds the checks
    a submission needs. A field the schema leaves out is neither checked nor required.
    `citations` are the claim's, read with it (this check reads nothing)."""
    key = f"claim.{claim.ordinal}"
    if label.support and label.support not in schema.support_labels:
        errors.add(f"{key}.support", _support_refusal(label.support, schema))
    if schema.claim("severity"):
        if label.severity and label.severity not in _SEVERITIES:
            errors.add(f"{key}.severity", "Choose none, minor, major or critical.")
        if label.support == Support.SUPPORTED and label.severity not in ("", Severity.NONE):
            errors.add(f"{key}.severity", "A supported claim has severity none.")
    cited = {c.cited_id: c for c in citations} if schema.claim("citations") else {}
    if schema.claim("evidence"):
        _check_evidence(label, shown, key, errors)
    if schema.claim("citations"):
        for cited_id, verdict in label.citations.items():
            if cited_id not in cited:
                errors.add(f"{key}.citations", f"The claim does not cite {cited_id}.")
            elif cited[cited_id].passage_id is None and verdict != CitationVerdict.NOT_FOUND:
                errors.add(
                    f"{key}.citations", f"{cited_id} resolves to no passage: citation_not_found."
                )
            elif verdict not in _VERDICTS:
                errors.add(f"{key}.citations", f"Unknown verdict for {cited_id}.")
    if not complete:
        return
    if not label.support:
        errors.add(f"{key}.support", "Choose a support label.")
    unsupported = label.support not in ("", Support.SUPPORTED)
    if schema.claim("severity") and unsupported and not label.severity:
        errors.add(f"{key}.severity", "Choose a severity.")
    if schema.claim("evidence") and needs_evidence(label, schema):
        if not label.evidence_ids:
            errors.add(f"{key}.evidence_ids", "Choose the passage that decides this label.")
        if not label.evidence_quote.strip():
            errors.add(f"{key}.evidence_quote", "Quote the words that decide this label.")
    for cited_id, citation in cited.items():
        if citation.passage_id is not None and not label.citations.get(cited_id):
            errors.add(f"{key}.citations", f"Say whether {cited_id} supports the claim.")


def check_row_label(
    row, shown, *, schema: LabelSchema, complete: bool, errors: LabelErrors
) -> None:
    """check_claim_label for a row of the labelling screen (selectors.ClaimRow): its label,
    claim and citations."""
    check_claim_label(
        row.label,
        row.claim,
        shown,
        citations=row.citations,
        schema=schema,
        complete=complete,
        errors=errors,
    )


# A choices class's `values` is a list built anew at each read: 80,000 reads in a
# 40,000-label import.
_SEVERITIES = frozenset(Severity.values)
_VERDICTS = frozenset(CitationVerdict.values)


def needs_evidence(label: ClaimLabel, schema: LabelSchema) -> bool:
    """A supported or contradicted claim names the passage that decides it (unless the reviewer
    says it needs no evidence, where the schema asks that). Insufficient evidence has none to
    name, and a binary project's 'unsupported' may be either, so neither requires it."""
    requires = label.requires_evidence if schema.claim("requires_evidence") else True
    return requires and label.support in (Support.SUPPORTED, Support.CONTRADICTED)


def _support_refusal(value: str, schema: LabelSchema) -> str:
    if schema.binary:
        return (
            f"This project labels support as supported or unsupported, not {value!r}."
            if value in Support.values
            else "Choose supported or unsupported."
        )
    if value == Support.UNSUPPORTED:
        return "Say which kind of unsupported: contradicted or insufficient evidence."
    return "Choose supported, contradicted or insufficient evidence."


def _check_evidence(label: ClaimLabel, shown: dict[str, Passage], key: str, errors) -> None:
    unknown = [pid for pid in label.evidence_ids if pid not in shown]
    if unknown:
        errors.add(f"{key}.evidence_ids", f"Not a passage of this task: {', '.join(unknown)}.")
    if label.evidence_quote.strip():
        chosen = [shown[pid] for pid in label.evidence_ids if pid in shown]
        if not chosen:
            errors.add(f"{key}.evidence_quote", "Choose the passage the quote comes from.")
        elif not any(quote_occurs(label.evidence_quote, p.text) for p in chosen):
            errors.add(
                f"{key}.evidence_quote",
                "This quote does not occur in "
                + ("the chosen passage." if len(chosen) == 1 else "any of the chosen passages.")
                + " Select the text in the passage to copy it exactly.",
            )


def check_answer_label(
    assignment: Assignment, *, schema: LabelSchema, complete: bool, errors: LabelErrors
) -> None:
    relevance, abstention = assignment.relevance, assignment.abstention
    if schema.answer("relevance") and relevance is not None and relevance not in RELEVANCE_RUBRIC:
        errors.add("answer.relevance", "Relevance is 0, 1 or 2.")
    if schema.answer("abstention") and abstention and abstention not in Abstention.values:
        errors.add("answer.abstention", "Choose appropriate or unnecessary.")
    if schema.answer("failure_labels"):
        unknown = [f for f in assignment.failure_labels if f not in FAILURE_LABELS]
        if unknown:
            errors.add("answer.failure_labels", f"Unknown failure label: {', '.join(unknown)}.")
    if not complete:
        return
    if schema.answer("relevance") and assignment.relevance is None:
        errors.add("answer.relevance", "Rate the answer's relevance.")
    if schema.answer("abstention") and assignment.answer.abstained and not assignment.abstention:
        errors.add("answer.abstention", "The answer declines: was that appropriate?")


# Every lock on an assignment here names only its own row (of=("self",)): a join in a
# SELECT FOR UPDATE locks the joined rows too, and a draft save that locked its answer and
# project rows deadlocked with reviewers taking tasks (the answers' rows) at the same time.


def default_citation_verdicts(citations: Iterable[Citation], schema: LabelSchema) -> dict[str, str]:
    """Unresolvable citations (of a claim) are labelled citation_not_found automatically, and
    locked (where the project labels citations at all)."""
    if not schema.claim("citations"):
        return {}
    return {c.cited_id: CitationVerdict.NOT_FOUND for c in citations if c.passage_id is None}


NOT_READ = object()  # save_claim_label's `stored` when the caller did not read the label


@transaction.atomic
def save_claim_label(
    *,
    assignment: Assignment,
    claim: Claim,
    data: dict,
    citations: list[Citation] | None = None,
    shown: dict[str, Passage] | None = None,
    version: int | None = None,
    stored: ClaimLabel | None | object = NOT_READ,
) -> tuple[ClaimLabel, LabelErrors]:
    """Save a draft of one claim's label. Invalid values are kept (nothing a reviewer typed is
    lost) and reported; submission refuses until they are fixed. `shown` is the answer's
    shown_passages() when the caller has already read them (the labelling screen has).
    `citations`, the claim's, likewise (else they are read).

    `version` is the label's version the change was made from (0 before its first save); when
    the stored label has moved on, StaleDraft is raised and nothing is written. None skips
    the check (scripts written before versions existed).

    `stored` is the reviewer's label of this claim as the caller read it, after reading
    `assignment` (None: there was none yet). Every change to the labels of a task moves its
    assignment's touched_at or status, so when the assignment is still as read, so is that
    label, and it is written without being read again; otherwise (or left out) it is read
    under the assignment's lock.

    The label returned holds the assignment as locked and written (its save time)."""
    if claim.answer_id != assignment.answer_id:
        raise ServiceError("That claim is not part of this task.")
    assignment, as_read = _locked_and_touched(assignment, timezone.now())
    # The assignment's row lock serialises every save of its labels: no lock on the label.
    if as_read and stored is not NOT_READ:
        label = stored
    else:
        label = ClaimLabel.objects.filter(assignment=assignment, claim=claim).first()
    if version is not None and version != (label.version if label else 0):
        if label is None:
            label = ClaimLabel(assignment=assignment, claim=claim)
        raise StaleDraft(STALE_CLAIM.format(number=claim.ordinal + 1), current=label)
    if label is None:
        label = ClaimLabel(assignment=assignment, claim=claim)
    schema = assignment.project.schema
    # Only the fields the project labels are taken from the request: a field that is off
    # keeps its empty default whatever a form or a script sends.
    data = {name: value for name, value in data.items() if schema.claim(_CLAIM_FIELD_OF[name])}
    for name in ("support", "severity", "evidence_quote", "note"):
        if name in data:
            setattr(label, name, (data[name] or "").strip() if name != "note" else data[name] or "")
    if "requires_evidence" in data:
        label.requires_evidence = bool(data["requires_evidence"])
    if "evidence_ids" in data:
        label.evidence_ids = list(dict.fromkeys(data["evidence_ids"] or []))
    if schema.claim("severity") and label.support == Support.SUPPORTED and not label.severity:
        label.severity = Severity.NONE
    if citations is None:
        citations = list(claim.citations.all())
    verdicts = dict(label.citations)
    verdicts.update(data.get("citations") or {})
    verdicts.update(default_citation_verdicts(citations, schema))
    label.citations = {k: v for k, v in verdicts.items() if v}
    label.version += 1
    label.save(force_insert=label.pk is None)
    label.assignment = assignment  # not re-read by the caller
    errors = LabelErrors()
    if shown is None:
        shown = shown_passages(assignment.answer)
    check_claim_label(
        label, claim, shown, citations=citations, schema=schema, complete=False, errors=errors
    )
    return label, errors


# Which schema field each key of a claim label belongs to.
_CLAIM_FIELD_OF = {
    "support": "support",
    "note": "note",
    "severity": "severity",
    "requires_evidence": "requires_evidence",
    "evidence_ids": "evidence",
    "evidence_quote": "evidence",
    "citations": "citations",
}


@transaction.atomic
def save_answer_label(
    *, assignment: Assignment, data: dict, version: int | None = None
) -> tuple[Assignment, LabelErrors]:
    """Save a draft of the answer-level label; `version` as in save_claim_label (the
    assignment's draft_version)."""
    assignment = _locked(assignment)
    _editable(assignment)
    if version is not None and version != assignment.draft_version:
        raise StaleDraft(STALE_ANSWER, current=assignment)
    schema = assignment.project.schema
    data = {name: value for name, value in data.items() if schema.answer(name)}
    if "relevance" in data:
        value = data["relevance"]
        assignment.relevance = None if value in (None, "") else int(value)
    if "abstention" in data:
        assignment.abstention = data["abstention"] or ""
    if "failure_labels" in data:
        assignment.failure_labels = [
            f for f in FAILURE_LABELS if f in (data["failure_labels"] or [])
        ] + [f for f in (data["failure_labels"] or []) if f not in FAILURE_LABELS]
    if "note" in data:
        assignment.note = data["note"] or ""
    assignment.draft_version += 1
    _touch(assignment, timezone.now())
    errors = LabelErrors()
    check_answer_label(assignment, schema=schema, complete=False, errors=errors)
    assignment.skip_history_when_saving = True  # a draft; the submission is the audit event
    assignment.save()
    return assignment, errors


def label_snapshot(
    assignment: Assignment, labels: Iterable[ClaimLabel], schema: LabelSchema
) -> dict:
    """The label set in the import_labels format (claims by index), for revisions: the
    fields the project's schema labels, and nothing else."""
    answer = {
        "relevance": assignment.relevance,
        "abstention": assignment.abstention or None,
        "failure_labels": assignment.failure_labels,
    }
    snapshot = {name: value for name, value in answer.items() if schema.answer(name)}
    snapshot["note"] = assignment.note
    snapshot["claims"] = [
        {
            key: value
            for key, value in {
                "index": label.claim.ordinal,
                "support": label.support,
                "severity": label.severity,
                "requires_evidence": label.requires_evidence,
                "evidence_ids": label.evidence_ids,
                "evidence_quote": label.evidence_quote,
                "citations": label.citations,
                "note": label.note,
            }.items()
            if key == "index" or schema.claim(_CLAIM_FIELD_OF[key])
        }
        for label in sorted(labels, key=lambda x: x.claim.ordinal)
    ]
    return snapshot


def screen_errors(screen, *, complete: bool) -> LabelErrors:
    """Validate the labels already loaded for the labelling screen, without more queries."""
    shown = screen.shown
    schema = screen.assignment.project.schema
    errors = LabelErrors()
    for row in screen.claims:
        if row.label is not None:
            check_row_label(row, shown, schema=schema, complete=complete, errors=errors)
        elif complete:
            errors.add(f"claim.{row.claim.ordinal}.support", "Choose a support label.")
    check_answer_label(screen.assignment, schema=schema, complete=complete, errors=errors)
    return errors


def validate_submission(assignment: Assignment) -> tuple[list[ClaimLabel], LabelErrors]:
    answer = assignment.answer
    claims = list(answer.claims.prefetch_related("citations__passage"))
    labels = {label.claim_id: label for label in assignment.claim_labels.select_related("claim")}
    shown = shown_passages(answer)
    schema = assignment.project.schema
    errors = LabelErrors()
    complete = []
    for claim in claims:
        label = labels.get(claim.pk)
        if label is None:
            errors.add(f"claim.{claim.ordinal}.support", "Choose a support label.")
            continue
        label.claim = claim
        check_claim_label(
            label,
            claim,
            shown,
            citations=claim.citations.all(),
            schema=schema,
            complete=True,
            errors=errors,
        )
        complete.append(label)
    check_answer_label(assignment, schema=schema, complete=True, errors=errors)
    return complete, errors


@transaction.atomic
def submit_labels(*, assignment: Assignment, source: str = "browser") -> LabelErrors:
    """Submit when every claim and the answer are labelled; each submission is kept as a
    revision, so a later edit never silently replaces what was submitted before."""
    computed.lock(assignment.project_id)  # before the task's row: computed.lock says why
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("answer", "project")
        .get(pk=assignment.pk)
    )
    _editable(assignment)
    labels, errors = validate_submission(assignment)
    if errors:
        return errors
    now = timezone.now()
    _touch(assignment, now)
    assignment.status = Assignment.Status.SUBMITTED
    assignment.submitted_at = now
    assignment.undo_until = now + reopen_window()
    assignment.revision += 1
    # The guidelines it was made under: the project's as read with the assignment.
    assignment.guideline_version = assignment.project.guidelines_version
    assignment.save()
    computed.touch(assignment.project_id, answers=[assignment.answer_id])
    LabelRevision.objects.create(
        assignment=assignment,
        number=assignment.revision,
        labels=label_snapshot(assignment, labels, assignment.project.schema),
        source=source,
    )
    webhooks.task_submitted(assignment, source=source)
    return errors


def adjudication_started(answer: Answer) -> bool:
    """Whether a lead has begun adjudicating this answer."""
    return AdjudicationLock.objects.filter(answer=answer).exists()


def reopen_window() -> timedelta:
    return timedelta(minutes=settings.CLAIMDESK_REOPEN_MINUTES)


def can_reopen(assignment: Assignment, now=None) -> bool:
    """Whether the reviewer may still reopen (undo) this submission. It depends on their own
    submission time alone: a rule that looked at adjudication would refuse exactly when the
    co-reviewer had submitted too, and so tell the reviewer so. Adjudication waits for the
    window instead (start_adjudication)."""
    if assignment.status != Assignment.Status.SUBMITTED or assignment.undo_until is None:
        return False
    return (now or timezone.now()) < assignment.undo_until


REOPEN_CLOSED = (
    "This task can no longer be reopened: a submission can be undone for {minutes:g} minutes "
    "after it is made. Ask a lead if one of its labels must change."
)


@transaction.atomic
def reopen_task(*, assignment: Assignment) -> Assignment:
    computed.lock(assignment.project_id)  # before the task's row: computed.lock says why
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("answer")
        .get(pk=assignment.pk)
    )
    if assignment.status != Assignment.Status.SUBMITTED:
        raise ServiceError("Only a submitted task can be reopened.")
    # The answer's row serialises a reopen with a lead starting adjudication (see
    # start_adjudication): one of them goes first, never both.
    Answer.objects.select_for_update().filter(pk=assignment.answer_id).values_list("pk").first()
    if not can_reopen(assignment):
        raise ServiceError(REOPEN_CLOSED.format(minutes=settings.CLAIMDESK_REOPEN_MINUTES))
    assignment.status = Assignment.Status.IN_PROGRESS
    assignment.touched_at = timezone.now()
    assignment.undo_until = None
    assignment.save(update_fields=["status", "touched_at", "undo_until"])
    computed.touch(assignment.project_id, answers=[assignment.answer_id])
    return assignment


# --- Flags for the lead ------------------------------------------------------------------------

MAX_FLAG_NOTE = 2000
FLAGGED_ALREADY = "You flagged this task already: a lead will look at it."


@transaction.atomic
def flag_task(*, assignment: Assignment, reason: str, note: str = "") -> Flag:
    """A reviewer flags their own task for the lead: a problem with the task itself, with one
    of Flag.Reason and their own words (required with "other"). What the reviewer learns is
    that the flag is stored, or that they flagged it already: never whether anybody else did,
    nor anything a lead writes."""
    if assignment.status == Assignment.Status.RELEASED:
        raise ServiceError("This task was skipped: there is nothing to flag any more.")
    if reason not in Flag.Reason.values:
        choices = ", ".join(Flag.Reason.values)
        raise ServiceError(f"Choose a reason for the flag ({choices}).")
    note = note.strip()
    if reason == Flag.Reason.OTHER and not note:
        raise ServiceError("Say what is wrong with this task (a lead reads it).")
    if len(note) > MAX_FLAG_NOTE:
        raise ServiceError(f"Shorten the note to {MAX_FLAG_NOTE} characters ({len(note)} now).")
    if problem := safe_json.text_problem(note):
        raise ServiceError(f"The note: {problem}.")
    # Serialised on the assignment: two quick clicks make one flag, not an integrity error.
    Assignment.objects.select_for_update().filter(pk=assignment.pk).values_list("pk").first()
    mine = Flag.objects.filter(answer_id=assignment.answer_id, reviewer_id=assignment.reviewer_id)
    if mine.filter(resolved_at__isnull=True).exists():
        raise ServiceError(FLAGGED_ALREADY)
    return Flag.objects.create(
        project_id=assignment.project_id,
        answer_id=assignment.answer_id,
        reviewer_id=assignment.reviewer_id,
        reason=reason,
        note=note,
    )
