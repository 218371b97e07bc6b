"""Writes that change claim boundaries, before labelling opens.

Claim boundaries may change only while the project is a draft: once labelling opens, a claim's
ordinal is what a reviewer's label, a judge verdict (``claim_index``) and the gold export refer
to, so every function here locks the project row (the same row ``open_labelling`` locks) and
refuses when it is no longer a draft.

Every boundary edit is planned as the answer's new list of spans, validated as a whole, then
written: ordinals always end up 0..n-1 in span order, text and citations of a changed span are
re-derived from the answer text with ``strip_markers``, and an edited claim stops being
``proposed`` (a lead has now reviewed it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.db import transaction
from django.db.models import F

from annotate.common import computed
from annotate.common.errors import ServiceError
from annotate.imports.claims import strip_markers
from annotate.models import Answer, Citation, Claim, Passage, Project

LOCKED = "Claims are locked once labelling opens."
MAX_CITED_ID = Citation._meta.get_field("cited_id").max_length


# --- Claim boundaries ------------------------------------------------------------------------


@dataclass
class _Span:
    """One claim of the answer's planned state."""

    start: int
    end: int
    claim: Claim | None = None  # the row to keep or update; None creates a claim
    edited: bool = False  # reviewed by the lead: proposed becomes False
    derive: bool = False  # re-derive text and citations from answer.text[start:end]
    citations: tuple[str, ...] | None = None  # replace the citations with these ids


def _locked_answer(answer_pk: int) -> tuple[Answer, list[Claim]]:
    answer = Answer.objects.select_related("project").get(pk=answer_pk)
    project = Project.objects.select_for_update().get(pk=answer.project_id)
    if project.state != Project.State.DRAFT:
        raise ServiceError(LOCKED)
    # Every caller goes on to change this answer's claims, in this transaction.
    computed.touch(project, content=True, answers=[answer.pk])
    claims = list(Claim.objects.filter(answer=answer).order_by("ordinal"))
    return answer, claims


def _index_of(claims: list[Claim], claim: Claim) -> int:
    for index, candidate in enumerate(claims):
        if candidate.pk == claim.pk:
            return index
    raise ServiceError("That claim no longer exists: reload the page to see the current claims.")


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _check_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    if not (0 <= start < end <= len(text)):
        raise ServiceError(
            f"A span needs 0 ≤ start < end ≤ {len(text)} (the answer has {len(text)} "
            f"characters); got start {start}, end {end}."
        )
    trimmed = _trim(text, start, end)
    if trimmed[0] == trimmed[1]:
        raise ServiceError(f"The span {start}–{end} holds only whitespace.")
    return trimmed


def _label(claims: Sequence[Claim], claim: Claim) -> str:
    return f"claim {claims.index(claim) + 1} ({claim.start}–{claim.end})"


def _rewrite(answer: Answer, before: list[Claim], spans: list[_Span]) -> list[Claim]:
    """Validate the planned spans and write them: deletions, then ordinals, then edits."""
    text = answer.text
    spans = sorted(spans, key=lambda s: (s.start, s.end))
    derived: dict[int, tuple[str, tuple[str, ...]]] = {}
    for i, span in enumerate(spans):
        if not (0 <= span.start < span.end <= len(text)):
            raise ServiceError(f"The span {span.start}–{span.end} lies outside the answer text.")
        if i and spans[i - 1].end > span.start:
            raise ServiceError(
                f"Claims cannot overlap: {spans[i - 1].start}–{spans[i - 1].end} and "
                f"{span.start}–{span.end}."
            )
        if span.derive:
            body, cited = strip_markers(text[span.start : span.end])
            if not any(ch.isalnum() for ch in body):
                raise ServiceError(
                    f"The span {span.start}–{span.end} holds no words, only citation markers "
                    "or punctuation: choose a span with text."
                )
            derived[i] = (body, cited)

    kept = {span.claim.pk for span in spans if span.claim is not None}
    Claim.objects.filter(answer=answer).exclude(pk__in=kept).delete()
    # (answer, ordinal) is unique and checked row by row, so first move every remaining claim
    # above any final ordinal, then give each its place.
    shift = max([c.ordinal for c in before] + [len(spans)]) + 1
    Claim.objects.filter(answer=answer).update(ordinal=F("ordinal") + shift)

    new_citations: dict[int, tuple[str, ...]] = {}  # index in spans -> cited ids
    claims: list[Claim] = []
    for i, span in enumerate(spans):
        claim = span.claim or Claim(answer=answer, proposed=False)
        claim.ordinal = i
        fields = ["ordinal"]
        if i in derived:
            claim.text, cited = derived[i]
            claim.start, claim.end = span.start, span.end
            fields += ["text", "start", "end"]
            new_citations[i] = cited
        if span.citations is not None:
            new_citations[i] = span.citations
        if span.edited:
            claim.proposed = False
            fields.append("proposed")
        if claim.pk is None:
            claim.save()
        else:
            claim.save(update_fields=fields)
        claims.append(claim)

    if new_citations:
        Citation.objects.filter(claim__in=[claims[i] for i in new_citations]).delete()
        ids = {cited for cited_ids in new_citations.values() for cited in cited_ids}
        passages = dict(
            Passage.objects.filter(project_id=answer.project_id, passage_id__in=ids).values_list(
                "passage_id", "pk"
            )
        )
        Citation.objects.bulk_create(
            Citation(claim=claims[i], ordinal=n, cited_id=cited, passage_id=passages.get(cited))
            for i, cited_ids in new_citations.items()
            for n, cited in enumerate(cited_ids)
        )
    return claims


@transaction.atomic
def split_claim(*, claim: Claim, at: int) -> list[Claim]:
    """Split a claim in two at character offset ``at`` of the answer text (strictly inside
    the claim's span). Both parts get their text and citations from their own span."""
    answer, claims = _locked_answer(claim.answer_id)
    index = _index_of(claims, claim)
    current = claims[index]
    if not current.start < at < current.end:
        raise ServiceError(
            f"Split inside the claim: choose an offset between {current.start + 1} and "
            f"{current.end - 1}."
        )
    first = _trim(answer.text, current.start, at)
    second = _trim(answer.text, at, current.end)
    if first[0] == first[1] or second[0] == second[1]:
        raise ServiceError("Both parts of a split need some text: choose another split point.")
    spans = [_Span(c.start, c.end, claim=c) for c in claims if c is not current]
    spans.append(_Span(*first, claim=current, edited=True, derive=True))
    spans.append(_Span(*second, edited=True, derive=True))
    return _rewrite(answer, claims, spans)


@transaction.atomic
def merge_with_next(*, claim: Claim) -> list[Claim]:
    """Merge a claim with the one after it: one claim spanning both."""
    answer, claims = _locked_answer(claim.answer_id)
    index = _index_of(claims, claim)
    if index == len(claims) - 1:
        raise ServiceError("This is the answer's last claim: there is no next claim to merge.")
    current, following = claims[index], claims[index + 1]
    spans = [_Span(c.start, c.end, claim=c) for c in claims if c not in (current, following)]
    spans.append(_Span(current.start, following.end, claim=current, edited=True, derive=True))
    return _rewrite(answer, claims, spans)


@transaction.atomic
def adjust_span(*, claim: Claim, start: int, end: int) -> list[Claim]:
    """Move a claim's boundaries; it must stay between its neighbours. Surrounding whitespace
    is trimmed from the span."""
    answer, claims = _locked_answer(claim.answer_id)
    index = _index_of(claims, claim)
    current = claims[index]
    start, end = _check_bounds(answer.text, start, end)
    if index > 0 and claims[index - 1].end > start:
        raise ServiceError(
            f"The span {start}–{end} overlaps or passes {_label(claims, claims[index - 1])}: "
            f"start at {claims[index - 1].end} or later."
        )
    if index < len(claims) - 1 and end > claims[index + 1].start:
        raise ServiceError(
            f"The span {start}–{end} overlaps or passes {_label(claims, claims[index + 1])}: "
            f"end at {claims[index + 1].start} or earlier."
        )
    spans = [_Span(c.start, c.end, claim=c) for c in claims if c is not current]
    spans.append(_Span(start, end, claim=current, edited=True, derive=True))
    return _rewrite(answer, claims, spans)


def parse_cited_ids(raw: str) -> list[str]:
    """'notes-17, notes-99' -> ['notes-17', 'notes-99'] (empty items dropped)."""
    return [item.strip() for item in raw.split(",") if item.strip()]


@transaction.atomic
def edit_citations(*, claim: Claim, cited_ids: Iterable[str]) -> list[Claim]:
    """Replace a claim's citations. An id that resolves to no passage is kept (it will be
    labelled citation_not_found), never dropped."""
    answer, claims = _locked_answer(claim.answer_id)
    current = claims[_index_of(claims, claim)]
    ids = tuple(dict.fromkeys(c.strip() for c in cited_ids if c.strip()))
    for cited in ids:
        if any(ch.isspace() for ch in cited) or "," in cited:
            raise ServiceError(f"'{cited}' is not a passage id: separate ids with commas.")
        if len(cited) > MAX_CITED_ID:
            raise ServiceError(f"A passage id has at most {MAX_CITED_ID} characters.")
    spans = [
        _Span(c.start, c.end, claim=c, edited=c is current, citations=ids if c is current else None)
        for c in claims
    ]
    return _rewrite(answer, claims, spans)


@transaction.atomic
def delete_claim(*, claim: Claim) -> list[Claim]:
    answer, claims = _locked_answer(claim.answer_id)
    current = claims[_index_of(claims, claim)]
    spans = [_Span(c.start, c.end, claim=c) for c in claims if c is not current]
    return _rewrite(answer, claims, spans)


@transaction.atomic
def add_claim(*, answer: Answer, start: int, end: int) -> list[Claim]:
    """Add a claim for a span of the answer text that no claim covers yet."""
    answer, claims = _locked_answer(answer.pk)
    start, end = _check_bounds(answer.text, start, end)
    for other in claims:
        if other.start < end and start < other.end:
            raise ServiceError(
                f"The span {start}–{end} overlaps {_label(claims, other)}: adjust that claim "
                "or choose a span outside it."
            )
    spans = [_Span(c.start, c.end, claim=c) for c in claims]
    spans.append(_Span(start, end, edited=True, derive=True))
    return _rewrite(answer, claims, spans)


@transaction.atomic
def accept_claims(*, answer: Answer) -> int:
    """Mark the answer's proposed claims as reviewed without changing them."""
    answer, _ = _locked_answer(answer.pk)
    return Claim.objects.filter(answer=answer, proposed=True).update(proposed=False)
