"""`__any`: the same rows as `__in`, with the list sent as one parameter on PostgreSQL."""

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
        for ids in (some, answers, [], [max(answers) + 1000]):
            found = set(model.objects.filter(**{f"{name}__any": ids}).values_list("pk", flat=True))
            expected = set(
                model.objects.filter(**{f"{name}__in": ids}).values_list("pk", flat=True)
            )
            assert found == expected
            assert found or not ids or ids == [max(answers) + 1000]


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_list_is_one_parameter_on_postgresql(lead, outsider):
    project = labelled_demo()
    ids = list(Answer.objects.filter(project=project).values_list("pk", flat=True))
    with CaptureQueriesContext(connection) as queries:
        list(ClaimLabel.objects.filter(assignment__answer_id__any=ids).values_list("pk"))
    sql = queries.captured_queries[0]["sql"]
    assert "= ANY(" in sql and sql.count(str(ids[-1])) == 1
