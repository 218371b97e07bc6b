"""The job page and its API twin, for each person: the uploader and the project's leads see a
job, nobody else does; a job that lost its worker offers Retry; a refused file does not (the
same file would be refused again); labels import from the Upload page like bundles."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from annotate.models import Assignment
from annotate.services import add_member, open_labelling
from jobs import services
from jobs.models import Job
from tests.api import API, token_client
from tests.conftest import FIXTURES, PASSWORD, import_fixture

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    user.set_password(PASSWORD)
    user.save()
    client = Client()
    client.login(username=user.username, password=PASSWORD)
    return client


def lost(job: Job) -> Job:
    """As a job looks after its worker was killed mid-import."""
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING,
        attempt=1,
        stage="claims",
        heartbeat_at=timezone.now() - timedelta(minutes=5),
        file="uploads/kept.upload",
    )
    services.storage().save("uploads/kept.upload", SimpleUploadedFile("x", b"{}\n"))
    return Job.objects.get(pk=job.pk)


@pytest.fixture
def queued(team, lead, database_tasks) -> Job:
    return services.start_import(
        kind=Job.Kind.BUNDLE_IMPORT,
        user=lead,
        upload=SimpleUploadedFile("small.jsonl", (FIXTURES / "small.jsonl").read_bytes()),
        slug=team.slug,
        project=team,
    )


def test_a_queued_job_page_polls_and_only_the_projects_leads_see_it(
    queued, lead, reviewer_a, outsider
):
    page = signed_in(lead).get(f"/jobs/{queued.pk}/")
    html = page.content.decode()
    assert page.status_code == 200 and "Waiting for a worker" in html
    assert 'hx-trigger="every 1s"' in html and f'hx-get="/jobs/{queued.pk}/"' in html
    assert "style=" not in html and "hx-on" not in html
    for person in (reviewer_a, outsider):
        assert signed_in(person).get(f"/jobs/{queued.pk}/").status_code == 404
        assert token_client(person).get(f"{API}/jobs/{queued.pk}/").status_code == 404
    assert Client().get(f"/jobs/{queued.pk}/").status_code == 302  # to the login page


def test_a_job_that_lost_its_worker_offers_retry_and_retrying_queues_it(queued, lead):
    job = lost(queued)
    assert job.stalled and job.retryable
    client = signed_in(lead)
    html = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "The worker stopped" in html and "Retry" in html and "hx-trigger" not in html
    response = client.post(f"/jobs/{job.pk}/retry/")
    assert response.status_code == 302
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED and not job.stalled and job.stage == ""

    # Retrying a job that is waiting is refused, in words.
    again = client.post(f"/jobs/{job.pk}/retry/", follow=True)
    assert "still running" in again.content.decode()


def test_the_api_retries_a_lost_job_and_refuses_a_refused_file(queued, lead):
    client = token_client(lead)
    job = lost(queued)
    body = client.get(f"{API}/jobs/{job.pk}/").json()
    assert body["stalled"] and body["retry_url"] == f"{API}/jobs/{job.pk}/retry/"
    retried = client.post(body["retry_url"])
    assert retried.status_code == 202 and retried.json()["status"] == "queued"

    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.FAILED, file="", errors=[[3, "unknown case_id 'x'", "line"]]
    )
    refused = client.post(f"{API}/jobs/{job.pk}/retry/")
    assert refused.status_code == 409 and "upload the file again" in refused.json()["detail"]
    assert client.get(f"{API}/jobs/{job.pk}/").json()["errors"] == ["line 3: unknown case_id 'x'"]


def test_labels_import_from_the_upload_page(lead, reviewer_a, reviewer_b):
    project = import_fixture("demo.jsonl", "demo")
    for name in ("alice", "bob"):
        add_member(project=project, username=name, role="reviewer")
    add_member(project=project, username=lead.username, role="lead")
    open_labelling(project=project)
    client = signed_in(lead)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as labels:
        response = client.post("/p/demo/upload/", {"format": "labels", "file": labels}, follow=True)
    assert response.redirect_chain[-1][0] == "/p/demo/setup/"
    assert "Labels:" in response.content.decode()
    assert Assignment.objects.filter(project=project, status="submitted").count() > 0
    assert Job.objects.get().kind == Job.Kind.LABEL_IMPORT


def test_prune_jobs_forgets_old_finished_jobs_and_their_files(queued, settings):
    from io import StringIO

    from django.core.management import call_command

    settings.CLAIMDESK_TASKS = "database"
    services.storage().save("exports/old.jsonl", SimpleUploadedFile("x", b"{}\n"))
    old = Job.objects.create(
        kind=Job.Kind.GOLD_EXPORT,
        project_slug="small",
        status=Job.Status.SUCCEEDED,
        output="exports/old.jsonl",
        finished_at=timezone.now() - timedelta(days=40),
    )
    out = StringIO()
    call_command("prune_jobs", "--days", "30", stdout=out)
    assert not Job.objects.filter(pk=old.pk).exists()
    assert Job.objects.filter(pk=queued.pk).exists()  # waiting: kept
    assert not services.storage().exists("exports/old.jsonl")
    assert "1 job(s)" in out.getvalue()
