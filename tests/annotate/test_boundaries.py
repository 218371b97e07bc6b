"""Claim boundary services: a lead splits, merges, adjusts, re-cites, deletes and adds claims
while the project is a draft; ordinals stay 0..n-1 in span order, texts and citations are
re-derived from the answer, and nothing changes once labelling opens."""

from __future__ import annotations

import pytest

from annotate.common.errors import ServiceError
from annotate.models import Answer, Claim
from annotate.projects import boundaries
from annotate.projects.opening import open_labelling

VERIFIER = "a2-deadline/verifier"  # arrived without claims: two proposed sentence claims
TEXT = (
    "Assignment 2 is due on 14 March [notes-17]. "
    "Late work is accepted within 48 hours with a penalty [notes-17][notes-99]."
)


def claims_of(answer_id: str) -> list[tuple]:
    """(ordinal, start, end, text, citations, proposed) of the answer's claims, in order."""
    return [
        (
            c.ordinal,
            c.start,
            c.end,
            c.text,
            tuple(x.cited_id for x in c.citations.all()),
            c.proposed,
        )
        for c in Claim.objects.filter(answer__answer_id=answer_id).order_by("ordinal")
    ]


def claim(answer_id: str, ordinal: int) -> Claim:
    return Claim.objects.get(answer__answer_id=answer_id, ordinal=ordinal)


@pytest.fixture
def verifier(small_project) -> Answer:
    answer = Answer.objects.get(project=small_project, answer_id=VERIFIER)
    assert answer.text == TEXT
    return answer


@pytest.mark.django_db
def test_the_verifier_answer_starts_with_two_proposed_sentence_claims(verifier):
    assert claims_of(VERIFIER) == [
        (0, 0, 43, "Assignment 2 is due on 14 March.", ("notes-17",), True),
        (1, 44, 118, "Late work is accepted within 48 hours with a penalty.",
         ("notes-17", "notes-99"), True),
    ]  # fmt: skip


@pytest.mark.django_db
def test_split_makes_two_claims_with_their_own_text_and_citations(verifier):
    second = claim(VERIFIER, 1)
    at = TEXT.index("within")

    boundaries.split_claim(claim=second, at=at)

    assert claims_of(VERIFIER) == [
        (0, 0, 43, "Assignment 2 is due on 14 March.", ("notes-17",), True),
        (1, 44, at - 1, "Late work is accepted", (), False),
        (2, at, 118, "within 48 hours with a penalty.", ("notes-17", "notes-99"), False),
    ]
    assert claim(VERIFIER, 1).pk == second.pk  # the first part keeps the claim's identity


@pytest.mark.django_db
def test_split_of_the_first_claim_renumbers_the_claims_after_it(verifier):
    at = TEXT.index("is due")
    boundaries.split_claim(claim=claim(VERIFIER, 0), at=at)

    rows = claims_of(VERIFIER)
    assert [(r[0], r[1], r[2]) for r in rows] == [(0, 0, at - 1), (1, at, 43), (2, 44, 118)]
    assert rows[0][3:5] == ("Assignment 2", ())
    assert rows[1][3:5] == ("is due on 14 March.", ("notes-17",))
    assert rows[2][5] is True  # untouched, still proposed


@pytest.mark.parametrize("at", [0, 44, 118, 200, -1])
@pytest.mark.django_db
def test_split_outside_the_claim_is_refused(verifier, at):
    with pytest.raises(ServiceError, match="between 45 and 117"):
        boundaries.split_claim(claim=claim(VERIFIER, 1), at=at)
    assert len(claims_of(VERIFIER)) == 2


@pytest.mark.django_db
def test_split_that_leaves_only_citation_markers_is_refused(verifier):
    at = TEXT.index("[notes-17][notes-99]")
    with pytest.raises(ServiceError, match="no words"):
        boundaries.split_claim(claim=claim(VERIFIER, 1), at=at)
    assert len(claims_of(VERIFIER)) == 2


@pytest.mark.django_db
def test_merge_joins_a_claim_with_the_next_one(verifier):
    boundaries.merge_with_next(claim=claim(VERIFIER, 0))

    assert claims_of(VERIFIER) == [
        (0, 0, 118,
         "Assignment 2 is due on 14 March. Late work is accepted within 48 hours with a penalty.",
         ("notes-17", "notes-99"), False),
    ]  # fmt: skip


@pytest.mark.django_db
def test_merge_of_the_last_claim_is_refused(verifier):
    with pytest.raises(ServiceError, match="last claim"):
        boundaries.merge_with_next(claim=claim(VERIFIER, 1))


@pytest.mark.django_db
def test_adjust_moves_a_span_and_rederives_text_and_citations(verifier):
    end = TEXT.index(" [notes-17][notes-99]")
    boundaries.adjust_span(claim=claim(VERIFIER, 1), start=44, end=end)

    assert claims_of(VERIFIER)[1] == (
        1, 44, end, "Late work is accepted within 48 hours with a penalty", (), False
    )  # fmt: skip
    assert claims_of(VERIFIER)[0][5] is True


@pytest.mark.django_db
def test_adjust_trims_surrounding_whitespace(verifier):
    boundaries.adjust_span(claim=claim(VERIFIER, 1), start=43, end=118)
    assert claims_of(VERIFIER)[1][1:3] == (44, 118)


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        (40, 118, "overlaps or passes claim 1"),  # into the previous claim
        (0, 118, "overlaps or passes claim 1"),
        (44, 119, "0 ≤ start < end ≤ 118"),  # beyond the text
        (60, 60, "0 ≤ start < end ≤ 118"),  # empty
        (80, 60, "0 ≤ start < end ≤ 118"),  # reversed
        (-1, 60, "0 ≤ start < end ≤ 118"),
    ],
)
@pytest.mark.django_db
def test_adjust_refuses_spans_outside_the_text_reversed_or_overlapping(
    verifier, start, end, message
):
    before = claims_of(VERIFIER)
    with pytest.raises(ServiceError, match=message):
        boundaries.adjust_span(claim=claim(VERIFIER, 1), start=start, end=end)
    assert claims_of(VERIFIER) == before


@pytest.mark.django_db
def test_adjust_refuses_to_pass_the_next_claim(verifier):
    with pytest.raises(ServiceError, match="overlaps or passes claim 2 .44–118.: end at 44"):
        boundaries.adjust_span(claim=claim(VERIFIER, 0), start=0, end=50)


@pytest.mark.django_db
def test_edit_citations_keeps_unknown_ids_as_citation_not_found(verifier):
    boundaries.edit_citations(
        claim=claim(VERIFIER, 0), cited_ids=["notes-18", " nope-1 ", "notes-18", ""]
    )

    first = claim(VERIFIER, 0)
    citations = list(first.citations.order_by("ordinal"))
    assert [(c.ordinal, c.cited_id, c.resolved) for c in citations] == [
        (0, "notes-18", True),
        (1, "nope-1", False),
    ]
    assert citations[0].passage.passage_id == "notes-18"
    assert citations[1].passage is None
    assert first.proposed is False
    assert first.text == "Assignment 2 is due on 14 March."
    assert claims_of(VERIFIER)[1][5] is True


@pytest.mark.django_db
def test_edit_citations_can_remove_every_citation(verifier):
    boundaries.edit_citations(claim=claim(VERIFIER, 1), cited_ids=[])
    assert claims_of(VERIFIER)[1][4] == ()


@pytest.mark.django_db
def test_citation_ids_with_spaces_are_refused(verifier):
    with pytest.raises(ServiceError, match="separate ids with commas"):
        boundaries.edit_citations(claim=claim(VERIFIER, 0), cited_ids=["notes-17 notes-18"])


def test_parse_cited_ids_splits_on_commas():
    assert boundaries.parse_cited_ids(" notes-17, lab-note:p1 ,,") == ["notes-17", "lab-note:p1"]
    assert boundaries.parse_cited_ids("") == []


@pytest.mark.django_db
def test_delete_removes_the_claim_and_renumbers(verifier):
    boundaries.delete_claim(claim=claim(VERIFIER, 0))
    assert claims_of(VERIFIER) == [
        (0, 44, 118, "Late work is accepted within 48 hours with a penalty.",
         ("notes-17", "notes-99"), True),
    ]  # fmt: skip


@pytest.mark.django_db
def test_add_puts_a_new_claim_in_span_order(verifier):
    boundaries.delete_claim(claim=claim(VERIFIER, 0))
    boundaries.add_claim(answer=verifier, start=0, end=43)

    assert claims_of(VERIFIER) == [
        (0, 0, 43, "Assignment 2 is due on 14 March.", ("notes-17",), False),
        (1, 44, 118, "Late work is accepted within 48 hours with a penalty.",
         ("notes-17", "notes-99"), True),
    ]  # fmt: skip


@pytest.mark.django_db
def test_add_refuses_a_span_that_overlaps_a_claim(verifier):
    with pytest.raises(ServiceError, match="overlaps claim 2 .44–118."):
        boundaries.add_claim(answer=verifier, start=100, end=118)


@pytest.mark.django_db
def test_add_refuses_a_span_of_markers_only(verifier):
    boundaries.delete_claim(claim=claim(VERIFIER, 1))
    start = TEXT.index("[notes-17][notes-99]")
    with pytest.raises(ServiceError, match="no words"):
        boundaries.add_claim(answer=verifier, start=start, end=118)


@pytest.mark.django_db
def test_accept_marks_proposed_claims_reviewed_without_changing_them(verifier):
    before = claims_of(VERIFIER)
    assert boundaries.accept_claims(answer=verifier) == 2
    assert claims_of(VERIFIER) == [(*row[:5], False) for row in before]


@pytest.mark.django_db
def test_imported_claims_can_be_edited_too(small_project):
    baseline = "a2-deadline/baseline"
    boundaries.merge_with_next(claim=claim(baseline, 0))
    assert claims_of(baseline) == [
        (0, 0, 80, "Assignment 2 is due on 14 March. Late submissions receive no penalty.",
         ("notes-17",), False),
    ]  # fmt: skip


@pytest.mark.django_db
def test_a_stale_claim_is_refused_with_a_message(verifier):
    stale = claim(VERIFIER, 1)
    boundaries.merge_with_next(claim=claim(VERIFIER, 0))
    with pytest.raises(ServiceError, match="no longer exists"):
        boundaries.delete_claim(claim=stale)


@pytest.mark.django_db
def test_many_edits_in_a_row_keep_ordinals_dense_and_in_span_order(verifier):
    for word in ("is due", "March", "work", "48"):
        target = next(c for c in Claim.objects.filter(answer=verifier) if
                      c.start < TEXT.index(word) < c.end)  # fmt: skip
        boundaries.split_claim(claim=target, at=TEXT.index(word))
    boundaries.merge_with_next(claim=claim(VERIFIER, 1))
    boundaries.delete_claim(claim=claim(VERIFIER, 3))
    rows = claims_of(VERIFIER)
    assert [r[0] for r in rows] == list(range(len(rows)))
    assert [r[1] for r in rows] == sorted(r[1] for r in rows)
    assert all(a[2] <= b[1] for a, b in zip(rows, rows[1:], strict=False))


@pytest.mark.django_db
def test_every_edit_is_refused_once_labelling_opens(verifier, small_project):
    open_labelling(project=small_project)
    before = claims_of(VERIFIER)
    first, second = claim(VERIFIER, 0), claim(VERIFIER, 1)
    edits = [
        lambda: boundaries.split_claim(claim=second, at=TEXT.index("within")),
        lambda: boundaries.merge_with_next(claim=first),
        lambda: boundaries.adjust_span(claim=second, start=50, end=118),
        lambda: boundaries.edit_citations(claim=first, cited_ids=["notes-18"]),
        lambda: boundaries.delete_claim(claim=first),
        lambda: boundaries.add_claim(answer=verifier, start=0, end=10),
        lambda: boundaries.accept_claims(answer=verifier),
    ]
    for edit in edits:
        with pytest.raises(ServiceError, match="Claims are locked once labelling opens."):
            edit()
    assert claims_of(VERIFIER) == before
