"""A dependency that is down answers 503, not 500, and leaves nothing behind.

With the task backend unreachable (RQ pointed at a closed port), an upload, a job-sized gold
export and a retry answer 503 with Retry-After and a message saying to try again -- JSON in
the API, a page in the browser -- and no job waits in the queue for a task that never left;
a report page shows the report it has, stale, rather than a 500. With the database connection
killed in the middle of a request (PostgreSQL: pg_terminate_backend of the request's own
backend), a GET runs once more on a new connection and succeeds; what still fails, and any
POST, answers 503 in the request's own format."""

from __future__ import annotations

import pytest
from django.db import close_old_connections, connection
from django.test import Client

from annotate.common import computed
from annotate.models import ComputedReport, Membership
from jobs import services
from jobs.models import Job
from tests.api import API, JSONL, token_client
from tests.conftest import FIXTURES
from tests.test_database_connections import terminate_backend

pytestmark = pytest.mark.django_db(transaction=True)
CLOSED_PORT = "redis://127.0.0.1:1/0"  # nothing listens there: connections are refused


@pytest.fixture
def redis_down(settings):
    settings.CLAIMDESK_TASKS = "rq"
    settings.REDIS_URL = CLOSED_PORT
    settings.RQ_QUEUES = {"default": {"URL": CLOSED_PORT}}
    settings.TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend"}}


def browser(user) -> Client:
    """A signed-in browser that gets the answer a person would, not the exception."""
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def script(user):
    client = token_client(user)
    client.raise_request_exception = False
    return client


def uploads_kept() -> list[str]:
    storage = services.storage()
    return storage.listdir("uploads")[1] if storage.exists("uploads") else []


def assert_503_json(response) -> None:
    assert response.status_code == 503, response.content
    assert response["Content-Type"] == "application/json"
    assert int(response["Retry-After"]) > 0
    assert "Try again" in response.json()["detail"]


def assert_503_page(response) -> None:
    assert response.status_code == 503, response.content[:300]
    assert response["Content-Type"].startswith("text/html")
    assert int(response["Retry-After"]) > 0
    page = response.content.decode()
    assert "Briefly unavailable" in page and "Try again" in page


# --- The task backend unreachable -----------------------------------------------------------


def test_an_upload_with_the_task_backend_unreachable_answers_503_and_writes_no_job(
    redis_down, team, lead
):
    bundle = (FIXTURES / "small.jsonl").read_bytes()
    response = script(lead).post(f"{API}/projects/small/bundle/", bundle, content_type=JSONL)
    assert_503_json(response)
    with open(FIXTURES / "small.jsonl", "rb") as upload:
        page = browser(lead).post("/p/small/upload/", {"format": "bundle", "file": upload})
    assert_503_page(page)
    assert not Job.objects.exists() and uploads_kept() == []


def test_a_job_sized_gold_export_with_the_task_backend_unreachable_answers_503(
    redis_down, demo, lead, settings
):
    settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS = 50
    assert_503_page(browser(lead).get("/p/demo/gold.csv?item=claim"))
    assert_503_json(script(lead).get(f"{API}/projects/demo/gold.jsonl"))
    assert not Job.objects.exists()


def test_a_retry_the_task_backend_cannot_take_leaves_the_job_as_it_was(redis_down, demo, lead):
    job = Job.objects.create(
        kind=Job.Kind.GOLD_EXPORT,
        project=demo,
        project_slug=demo.slug,
        created_by=lead,
        status=Job.Status.FAILED,
        failure="The worker hit an error and stopped.",
    )
    assert job.retryable
    assert_503_json(script(lead).post(f"{API}/jobs/{job.pk}/retry/"))
    assert_503_page(browser(lead).post(f"/jobs/{job.pk}/retry/"))
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.failure.startswith("The worker hit")


def test_a_report_page_shows_its_stale_report_when_no_worker_can_be_asked(
    redis_down, demo, lead, settings
):
    """A stale report is shown, saying nothing recomputes it, and the next reader asks again;
    a report with nothing stored yet is a 503 rather than a page that waits for nobody."""
    assert_503_page(browser(lead).get("/p/demo/agreement/"))
    assert_503_json(script(lead).get(f"{API}/projects/demo/agreement/"))

    settings.CLAIMDESK_TASKS = "immediate"  # computed and stored, then made stale
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
    stored = computed.read(demo, "agreement")
    n = stored.result["slices"]["all"]["support"]["n"]
    computed.touch(demo)  # the labels change
    settings.CLAIMDESK_TASKS = "rq"
    settings.TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend"}}
    computed.forget_decoded()

    page = browser(lead).get("/p/demo/agreement/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-report-freshness="stale"' in html and "cannot be reached" in html
    api = script(lead).get(f"{API}/projects/demo/agreement/")
    assert api.status_code == 200 and api["Report-Current"] == "false"
    assert api.json()["slices"]["all"]["support"]["n"] == n
    assert (
        ComputedReport.objects.get(kind="agreement").wanted_at is None
    )  # the next reader asks again


# --- The database connection killed mid-request ----------------------------------------------


class Killer:
    """Kills the request's own database backend (from another connection) just before the
    first `times` queries that read `table`, as a restart or a failover would."""

    def __init__(self, table: str, times: int):
        self.table, self.times, self.killed = f'"{table}"', times, 0

    def __call__(self, execute, sql, params, many, context):
        if self.killed < self.times and self.table in sql:
            self.killed += 1
            terminate_backend(context["connection"].connection.info.backend_pid)
        return execute(sql, params, many, context)


@pytest.fixture
def killer():
    """Installed on this thread's connection, which the test client's requests use; the
    broken connection is closed afterwards, as the end of a real request closes it."""
    installed = []

    def install(table: str, times: int) -> Killer:
        kill = Killer(table, times)
        installed.append(connection.execute_wrapper(kill))
        installed[-1].__enter__()
        return kill

    yield install
    for wrapper in installed:
        wrapper.__exit__(None, None, None)
    close_old_connections()


@pytest.mark.postgres
def test_a_get_whose_connection_is_killed_is_run_again_and_succeeds(team, lead, killer):
    page, api = browser(lead), script(lead)
    kill = killer("annotate_membership", times=1)
    response = api.get(f"{API}/projects/")
    assert kill.killed == 1 and response.status_code == 200
    assert [p["slug"] for p in response.json()["results"]] == ["small"]

    kill = killer("annotate_project", times=1)
    response = page.get("/")
    assert kill.killed == 1 and response.status_code == 200
    assert "/p/small/" in response.content.decode()


@pytest.mark.postgres
def test_what_still_fails_answers_503_in_the_request_s_own_format(team, lead, killer):
    page, api = browser(lead), script(lead)
    kill = killer("annotate_membership", times=2)
    assert_503_json(api.get(f"{API}/projects/"))
    assert kill.killed == 2  # run once more, then answered 503
    close_old_connections()  # as the end of the request does (the test client does not)

    kill = killer("annotate_project", times=2)
    assert_503_page(page.get("/"))
    assert kill.killed == 2


@pytest.mark.postgres
def test_a_post_whose_connection_is_killed_is_not_run_again(team, lead, reviewer_a, killer):
    members = Membership.objects.filter(project=team).count()
    kill = killer("auth_user", times=1)
    response = script(lead).post(
        f"{API}/projects/small/members/",
        {"username": reviewer_a.username, "role": "lead"},
        format="json",
    )
    assert_503_json(response)
    assert kill.killed == 1
    close_old_connections()
    assert Membership.objects.filter(project=team).count() == members
    assert Membership.objects.get(project=team, user=reviewer_a).role == "reviewer"
