"""The database itself refuses what must never be true, whatever code path writes."""

import pytest
from django.db import IntegrityError, transaction

from annotate.models import Answer, Claim, Judgment, Passage, RetrievedPassage


def refused(create) -> bool:
    try:
        with transaction.atomic():
            create()
    except IntegrityError:
        return True
    return False


@pytest.mark.django_db
def test_ids_are_unique_within_a_project_but_not_across_projects(small_project):
    assert refused(
        lambda: Passage.objects.create(project=small_project, passage_id="notes-17", text="x")
    )
    from tests.conftest import import_fixture

    other = import_fixture("small.jsonl", "other")
    assert other.passages.filter(passage_id="notes-17").exists()


@pytest.mark.django_db
def test_rank_must_be_at_least_one_and_unique_per_answer(small_project):
    answer = Answer.objects.get(answer_id="a2-deadline/baseline")
    passage = Passage.objects.get(project=small_project, passage_id="lab-note:p1")
    retrieved = RetrievedPassage.objects.filter(answer=answer)
    assert refused(lambda: retrieved.create(answer=answer, passage=passage, rank=0))
    assert refused(lambda: retrieved.filter(rank=3).update(rank=1))


@pytest.mark.django_db
def test_grade_cannot_be_negative_nor_judged_twice(small_project):
    judgment = Judgment.objects.filter(case__project=small_project).first()
    assert refused(lambda: Judgment.objects.filter(pk=judgment.pk).update(grade=-1))
    assert refused(
        lambda: Judgment.objects.create(case=judgment.case, passage=judgment.passage, grade=1)
    )


@pytest.mark.django_db
def test_claim_span_must_end_after_it_starts(small_project):
    claim = Claim.objects.filter(answer__project=small_project).first()
    assert refused(lambda: Claim.objects.filter(pk=claim.pk).update(end=claim.start))


@pytest.mark.django_db
def test_one_answer_per_case_variant_and_sample(small_project):
    answer = Answer.objects.get(answer_id="a2-deadline/baseline")
    assert refused(
        lambda: Answer.objects.create(
            project=small_project,
            case=answer.case,
            variant=answer.variant,
            answer_id="other",
            text="x",
            sample=0,
        )
    )
