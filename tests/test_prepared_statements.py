"""The reviewer's task views prepare their statements on PostgreSQL (annotate.prepared), and
nothing else does: a kept connection plans the labelling page's and a draft save's statements
once, while a report's statements, whose best plan depends on the project's size, are planned
at every run as before, with their parameters bound in the client (an IN list of any length).
DATABASE_PREPARED_STATEMENTS=false leaves everything unprepared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotate.models import Answer, Assignment
from annotate.prepared import prepared_statements
from annotate.services import open_labelling
from tests.annotate.test_query_plans import big_project
from tests.conftest import PASSWORD

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parent.parent
TASK_LOOKUP = "%FROM annotate_assignment a%n.task_number = $%"


def prepared() -> dict[str, tuple[int, int]]:
    """This connection's prepared statements: text -> (generic plans, custom plans)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements")
        return {statement: (generic, custom) for statement, generic, custom in cursor.fetchall()}


def task_lookups() -> list[tuple[int, int]]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements "
            "WHERE statement LIKE %s",
            [TASK_LOOKUP],
        )
        return cursor.fetchall()


@pytest.fixture
def reviewer_on_a_task(client, team, reviewer_a):
    """The reviewer holds an answer with claims (next task may hand out one without)."""
    project = open_labelling(project=team)
    answer = Answer.objects.filter(project=project, claims__isnull=False).first()
    assignment = Assignment.objects.create(project=project, answer=answer, reviewer=reviewer_a)
    client.login(username=reviewer_a.username, password=PASSWORD)
    return project, assignment


@pytest.mark.django_db
def test_the_task_page_and_a_draft_save_prepare_their_statements(client, reviewer_on_a_task):
    project, assignment = reviewer_on_a_task
    number = assignment.answer.task_number
    page = reverse("task", args=[project.slug, number])
    save = reverse("save_claim", args=[project.slug, number, 0])
    assert prepared() == {}

    assert client.get(page).status_code == 200
    after_page = prepared()
    assert any('FROM "annotate_claim"' in s for s in after_page), after_page
    assert task_lookups(), after_page
    reply = client.post(
        save, {"support": "supported", "version": "0"}, headers={"HX-Request": "true"}
    )
    assert reply.status_code == 200
    # The label's first save: its INSERT, after the assignment's UPDATE.
    written = [s.split(" (")[0] for s in prepared() if s.startswith(("UPDATE", "INSERT"))]
    assert 'INSERT INTO "annotate_claimlabel"' in written, written
    assert any(s.startswith('UPDATE "annotate_assignment"') for s in written), written
    # The views leave the connection as Django opened it: statements after them (the
    # middleware's, another view's) are not prepared, and bind their parameters in the client.
    # (Bound on the server, 70,000 values are more than a statement takes.)
    assert Answer.objects.filter(pk__in=range(70_000)).count() == Answer.objects.count()
    assert connection.connection.prepare_threshold is None
    assert not connection.features.uses_server_side_binding
    before = set(prepared())
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::int", [1])
    assert set(prepared()) == before


@pytest.mark.django_db
def test_the_statements_of_a_task_view_are_logged_with_their_values(client, reviewer_on_a_task):
    """Bound on the server, a statement's text holds $1, $2; Django's log of it (DEBUG, the
    query counts of tests) still shows the SQL with its values, which EXPLAIN can run."""
    project, assignment = reviewer_on_a_task
    page = reverse("task", args=[project.slug, assignment.answer.task_number])
    with CaptureQueriesContext(connection) as page_view:
        assert client.get(page).status_code == 200
    assert task_lookups()
    logged = [q["sql"] for q in page_view.captured_queries]
    assert logged and not [sql for sql in logged if "$1" in sql], logged
    assert any(str(assignment.answer.task_number) in sql for sql in logged)


@pytest.mark.django_db
def test_the_task_lookup_s_one_generic_plan_serves_every_page_view(
    client, reviewer_on_a_task, reviewer_b, lead
):
    """Beside a 4,000-answer project. The lookup names the answer's project as well as the
    assignment's, so the generic plan reads the answer by (project, task number): without it,
    the generic plan scanned the task-number index of every project and PostgreSQL planned
    each run afresh."""
    project, assignment = reviewer_on_a_task
    big_project([reviewer_b, lead])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    page = reverse("task", args=[project.slug, assignment.answer.task_number])
    for _ in range(8):
        assert client.get(page).status_code == 200
    [(generic, custom)] = task_lookups()
    assert generic >= 1, (generic, custom)
    assert generic + custom == 8


@pytest.mark.django_db
def test_a_lead_s_report_pages_prepare_nothing(client, team, lead):
    open_labelling(project=team)
    client.login(username=lead.username, password=PASSWORD)
    for name in ("project_setup", "agreement", "evaluation:report", "gold", "adjudication_queue"):
        response = client.get(reverse(name, args=[team.slug]))
        assert response.status_code == 200, name
    assert prepared() == {}


@pytest.mark.django_db
def test_used_inside_itself_it_leaves_the_connection_as_it_found_it():
    with prepared_statements():
        with prepared_statements():
            pass
        assert connection.features.uses_server_side_binding
        with connection.cursor() as cursor:
            cursor.execute("SELECT %s::int", [2])
    assert connection.connection.prepare_threshold is None
    assert not connection.features.uses_server_side_binding
    assert len(prepared()) == 1


@pytest.mark.django_db(transaction=True)
def test_a_request_that_opens_the_connection_prepares_on_it(client, reviewer_on_a_task):
    """The first request of a thread, or the first after the connection was closed, finds no
    connection yet: the view opens it before setting it to prepare."""
    project, assignment = reviewer_on_a_task
    connection.close()
    page = reverse("task", args=[project.slug, assignment.answer.task_number])
    assert client.get(page).status_code == 200
    assert task_lookups()


SCRIPT = """
import django, json
django.setup()
from django.conf import settings
from django.db import connection
from annotate.prepared import prepared_statements
with prepared_statements():
    for _ in range(3):
        with connection.cursor() as cursor:
            cursor.execute("SELECT %s::int", [1])
with connection.cursor() as cursor:
    cursor.execute("SELECT count(*) FROM pg_prepared_statements")
    print(json.dumps({"prepared": cursor.fetchone()[0],
                      "setting": settings.DATABASE_PREPARED_STATEMENTS}))
"""


@pytest.mark.django_db
@pytest.mark.parametrize(("setting", "expected"), [(None, 1), ("false", 0)])
def test_database_prepared_statements_false_turns_it_off(setting, expected):
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_PREPARED_STATEMENTS"}
    settings = connection.settings_dict
    env["DATABASE_URL"] = (
        f"postgres://{settings['USER'] or 'postgres'}@{settings['HOST'] or '127.0.0.1'}:"
        f"{settings['PORT'] or 5432}/{settings['NAME']}"
    )
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    if setting is not None:
        env["DATABASE_PREPARED_STATEMENTS"] = setting
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["prepared"] == expected
    assert out["setting"] is (expected == 1)
