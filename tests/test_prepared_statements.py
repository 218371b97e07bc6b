"""Nothing is prepared on PostgreSQL, the reviewer's task views included: every statement
binds its parameters in the client, as Django does by default. The task views used to
prepare theirs by changing the connection's cursor class and Django's cached features
(annotate.prepared, removed): private state the next Django release may change. A kept
connection therefore holds no prepared statement, so a pooler in transaction mode works
without a setting, an IN list takes any number of values, and the log of each statement
(DEBUG, the tests' query counts) shows its SQL with its values.

Without preparing, PostgreSQL plans the task lookup at every view, so its plan must not
depend on how many tasks the reviewer holds: it reads the answer by (project, task number),
which the lookup's condition on the answer's own project allows."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotate.labelling.selectors import reviewer_task
from annotate.models import Answer, Assignment, Membership, Role
from annotate.projects.opening import open_labelling
from tests.annotate.test_query_plans import big_project, plan_of
from tests.conftest import PASSWORD

pytestmark = pytest.mark.postgres

TASK_LOOKUP = "FROM annotate_answer n\n"


def prepared() -> list[str]:
    """The statements this connection holds prepared."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [statement for (statement,) in cursor.fetchall()]


@pytest.fixture
def reviewer_on_a_task(client, team, reviewer_a):
    """The reviewer holds an answer with claims (next task may hand out one without)."""
    project = open_labelling(project=team)
    answer = Answer.objects.filter(project=project, claims__isnull=False).first()
    assignment = Assignment.objects.create(project=project, answer=answer, reviewer=reviewer_a)
    client.login(username=reviewer_a.username, password=PASSWORD)
    return project, assignment


@pytest.mark.django_db
def test_the_task_views_prepare_nothing_and_bind_in_the_client(client, reviewer_on_a_task):
    project, assignment = reviewer_on_a_task
    number = assignment.answer.task_number
    page = reverse("task", args=[project.slug, number])
    save = reverse("save_claim", args=[project.slug, number, 0])
    with CaptureQueriesContext(connection) as views:
        for _ in range(6):  # psycopg's own threshold, were it on, is five runs
            assert client.get(page).status_code == 200
            reply = client.post(save, {"support": "supported"}, headers={"HX-Request": "true"})
            assert reply.status_code == 200
    assert prepared() == []
    # Logged with their values (the text psycopg sent), never $1, $2.
    logged = [query["sql"] for query in views.captured_queries]
    lookups = [sql for sql in logged if TASK_LOOKUP in sql]
    assert len(lookups) == 12, logged
    assert all(f"n.task_number = {number}" in sql for sql in lookups), lookups
    assert not [sql for sql in logged if "$1" in sql]
    # After them too the connection binds in the client: bound on the server, 70,000 values
    # are more than a statement takes.
    assert Answer.objects.filter(pk__in=range(70_000)).count() == Answer.objects.count()
    assert prepared() == []


@pytest.mark.django_db
def test_a_lead_s_report_pages_prepare_nothing(client, team, lead):
    open_labelling(project=team)
    client.login(username=lead.username, password=PASSWORD)
    for name in ("project_setup", "agreement", "evaluation:report", "gold", "adjudication_queue"):
        response = client.get(reverse(name, args=[team.slug]))
        assert response.status_code == 200, name
    assert prepared() == []


@pytest.mark.django_db
def test_the_task_lookup_reads_the_answer_by_project_and_task_number(
    reviewer_on_a_task, reviewer_b, lead
):
    """reviewer_b holds a task of each of the 4,000 answers of the big project: the lookup of
    one of them reads that answer by its (project, task number) index, not every answer of
    the reviewer's tasks."""
    big = big_project([reviewer_b, lead])
    Membership.objects.create(project=big, user=reviewer_b, role=Role.REVIEWER)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    task = Assignment.objects.filter(project=big, reviewer=reviewer_b).order_by("-pk")[0]
    number = task.answer.task_number
    for page in (True, False):
        with CaptureQueriesContext(connection) as lookup:
            found = reviewer_task(reviewer_b, big.slug, number, page=page)
        assert found is not None and found.pk == task.pk
        [sql] = [q["sql"] for q in lookup.captured_queries]
        [answer] = [node for node in nodes(plan_of(sql)) if node.get("Alias") == "n"]
        assert answer["Node Type"] == "Index Scan", answer
        assert "task_number =" in answer["Index Cond"], answer


def nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)
