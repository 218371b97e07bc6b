"""`__any` and `__among`: the same rows as `__in`, with the list sent as one parameter on
PostgreSQL (`__among` with its bounds too)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotate.models import Answer, Citation, ClaimLabel
from tests.conftest import labelled_demo


@pytest.mark.django_db
def test_any_finds_what_in_finds(lead, outsider):
    project = labelled_demo()
    answers = list(Answer.objects.filter(project=project).values_list("pk", flat=True))
    some = answers[::3]
    for model, name in (
        (Answer, "pk"),
        (ClaimLabel, "assignment__answer_id"),
        (Citation, "claim__answer_id"),
    ):
        for ids in (some, answers, [], [max(answers) + 1000], [answers[-1], answers[0]]):
            expected = set(
                model.objects.filter(**{f"{name}__in": ids}).values_list("pk", flat=True)
            )
            assert expected or not ids or ids == [max(answers) + 1000]
            for lookup in ("any", "among"):
                found = model.objects.filter(**{f"{name}__{lookup}": ids})
                assert set(found.values_list("pk", flat=True)) == expected, lookup


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_list_is_one_parameter_on_postgresql(lead, outsider):
    project = labelled_demo()
    ids = list(Answer.objects.filter(project=project).values_list("pk", flat=True))
    with CaptureQueriesContext(connection) as queries:
        list(ClaimLabel.objects.filter(assignment__answer_id__any=ids).values_list("pk"))
    sql = queries.captured_queries[0]["sql"]
    assert "= ANY(" in sql and sql.count(str(ids[-1])) == 1


@pytest.mark.postgres
@pytest.mark.django_db
def test_among_gives_the_planner_the_list_s_bounds(lead, outsider):
    project = labelled_demo()
    ids = list(Answer.objects.filter(project=project).values_list("pk", flat=True))[1:]
    with CaptureQueriesContext(connection) as queries:
        list(Citation.objects.filter(claim__answer_id__among=ids[::-1]).values_list("pk"))
    sql = queries.captured_queries[0]["sql"]
    assert "= ANY(" in sql and f"BETWEEN {min(ids)} AND {max(ids)}" in sql
