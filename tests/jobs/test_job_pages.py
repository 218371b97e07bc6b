"""The job page and its API twin, for each person: the uploader and the project's leads see a
job, nobody else does; a job that lost its worker offers Retry; a refused file does not (the
same file would be refused again); labels import from the Upload page like bundles."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from annotate.gold.exports import start_gold_export
from annotate.members.services import add_member
from annotate.models import Assignment
from annotate.projects.opening import open_labelling
from jobs import accept, services
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
    return accept.start_import(
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


def test_a_lead_who_steps_down_no_longer_reaches_the_project_s_jobs_their_own_included(
    queued, team, lead
):
    """A gold export's file holds every reviewer's labels: once its creator is a reviewer of
    the project (or gone from it), its page, download and retry are not theirs."""
    from annotate.models import Membership, Role

    assert signed_in(lead).get(f"/jobs/{queued.pk}/").status_code == 200
    Membership.objects.filter(project=team, user=lead).update(role=Role.REVIEWER)
    client = signed_in(lead)
    for url in (f"/jobs/{queued.pk}/", f"/jobs/{queued.pk}/download/"):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/jobs/{queued.pk}/retry/").status_code == 404
    assert token_client(lead).get(f"{API}/jobs/{queued.pk}/").status_code == 404


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


def test_a_job_no_worker_started_can_be_sent_again_and_is_not_reused(queued, lead):
    """Its task may have been lost on the way (a Redis restart without persistence): after
    five minutes in the queue the page says so and offers Retry, which sends it again and
    starts its wait over; and a gold export of the same labels does not hand it back."""
    from django_tasks_db.models import DBTaskResult

    Job.objects.filter(pk=queued.pk).update(created_at=timezone.now() - timedelta(minutes=6))
    job = Job.objects.get(pk=queued.pk)
    assert job.waited_too_long and job.retryable
    client = signed_in(lead)
    html = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "No worker has started it yet" in html and ">Retry</button>" in html
    tasks = DBTaskResult.objects.count()
    assert client.post(f"/jobs/{job.pk}/retry/").status_code == 302
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED and not job.waited_too_long
    assert DBTaskResult.objects.count() == tasks + 1

    export = start_gold_export(project=job.project, user=lead, fmt="jsonl", filters={}, rows=30_000)
    Job.objects.filter(pk=export.pk).update(created_at=timezone.now() - timedelta(minutes=6))
    again = start_gold_export(project=job.project, user=lead, fmt="jsonl", filters={}, rows=30_000)
    assert again.pk != export.pk


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


def test_retrying_a_finished_job_says_it_has_finished(queued, lead):
    Job.objects.filter(pk=queued.pk).update(status=Job.Status.SUCCEEDED)
    page = signed_in(lead).post(f"/jobs/{queued.pk}/retry/", follow=True).content.decode()
    assert "This job has finished: there is nothing to retry." in page
    assert "still running" not in page
    refused = token_client(lead).post(f"{API}/jobs/{queued.pk}/retry/")
    assert refused.status_code == 409
    assert refused.json() == {"detail": "This job has finished: there is nothing to retry."}


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


def _a_replace_that_deletes_verdicts(project, run_name: str = "j") -> bytes:
    """small.jsonl with one answer changed, after a judge run gave verdicts about it: the
    replace deletes those verdicts."""
    import json

    from evaluation.judges.runs import import_judge_run
    from tests.annotate.test_import import lines_of

    run = [{"type": "run", "judge": "j", "model": "m/x", "prompt": "p"}] + [
        {"type": "verdict", "answer_id": "a2-deadline/baseline", "claim_index": i, "raw": "{}"}
        | {"label": "supported"}
        for i in (0, 1)
    ]
    import_judge_run(lines=[json.dumps(r) for r in run], project=project, name=run_name)
    changed = lines_of(edit={9: {"text": "Assignment 2 is due on 14 March. No penalty at all."}})
    changed[8] = json.dumps({**json.loads(changed[8]), "claims": None})
    return "\n".join(changed).encode()


def test_a_replace_that_deletes_waits_for_a_confirmation_on_the_page_and_in_the_api(team, lead):
    """Issue #15 through a worker: the job ends 'failed' listing what the replace deletes,
    keeps the file, and one confirmation imports it; nothing is written before."""
    from evaluation.models import Verdict

    body = _a_replace_that_deletes_verdicts(team)
    client = signed_in(lead)
    upload = f"/p/{team.slug}/upload/"
    page = client.post(
        upload, {"format": "bundle", "replace": "on", "file": SimpleUploadedFile("b.jsonl", body)}
    )
    html = page.content.decode()
    assert "Nothing was imported: this replace deletes data." in html
    assert "2 verdict(s) of judge run &#x27;j&#x27; about them would be deleted for good" in html
    assert Verdict.objects.count() == 2
    job = Job.objects.latest("created_at")
    assert job.status == Job.Status.FAILED and job.file  # kept for the confirmation
    # The job page offers the confirmation; it imports the same file.
    shown = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Delete these and import" in shown and "would be deleted for good" in shown
    client.post(f"/jobs/{job.pk}/retry/", {"confirm_deletions": "1"})
    assert Job.objects.get(pk=job.pk).status == Job.Status.SUCCEEDED
    assert Verdict.objects.count() == 0

    # The API: 202, the job fails with result.deletions; retry with the confirmation.
    api = token_client(lead)
    _a_replace_that_deletes_verdicts(team, run_name="k")
    again = body.replace(b"No penalty at all.", b"No penalty whatsoever.")
    started = api.post(
        f"{API}/projects/{team.slug}/bundle/?replace=true",
        again,
        content_type="application/x-ndjson",
    )
    assert started.status_code == 202
    polled = api.get(f"/api/v1/jobs/{started.json()['id']}/").json()
    assert polled["status"] == "failed" and len(polled["result"]["deletions"]) == 3
    assert Verdict.objects.count() == 2
    retried = api.post(
        f"/api/v1/jobs/{started.json()['id']}/retry/", {"confirm_deletions": True}, format="json"
    )
    assert retried.status_code == 202
    assert api.get(f"/api/v1/jobs/{started.json()['id']}/").json()["status"] == "succeeded"
    assert Verdict.objects.count() == 0


def test_a_confirmation_covers_only_the_deletions_the_lead_was_shown(team, lead):
    """The lead is shown 'deletes 2 verdicts of run j'; before they confirm, run k gives
    verdicts about the same answer. The confirmation does not reach k's: the job stops again
    and lists them, and a second confirmation (of what is shown now) imports."""
    import json

    from evaluation.judges.runs import import_judge_run
    from evaluation.models import Verdict

    body = _a_replace_that_deletes_verdicts(team)
    client = signed_in(lead)
    client.post(
        f"/p/{team.slug}/upload/",
        {"format": "bundle", "replace": "on", "file": SimpleUploadedFile("b.jsonl", body)},
    )
    job = Job.objects.latest("created_at")
    assert job.status == Job.Status.FAILED and "run 'k'" not in " ".join(job.result["deletions"])
    run = [{"type": "run", "judge": "k", "model": "m/x", "prompt": "p"}] + [
        {"type": "verdict", "answer_id": "a2-deadline/baseline", "claim_index": i, "raw": "{}"}
        | {"label": "supported"}
        for i in (0, 1)
    ]
    import_judge_run(lines=[json.dumps(r) for r in run], project=team, name="k")

    client.post(f"/jobs/{job.pk}/retry/", {"confirm_deletions": "1"})
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED
    assert "2 verdict(s) of judge run 'k' about them" in " ".join(job.result["deletions"])
    assert Verdict.objects.count() == 4
    client.post(f"/jobs/{job.pk}/retry/", {"confirm_deletions": "1"})
    assert Job.objects.get(pk=job.pk).status == Job.Status.SUCCEEDED
    assert Verdict.objects.count() == 0


def test_a_superseded_attempt_that_fails_leaves_the_retry_its_file(queued, lead):
    """Attempt 1 was thought lost and retried; it was alive after all, and now fails on the
    file. It must not end the job nor delete the upload attempt 2 is reading."""
    first = lost(queued)  # attempt 1, file kept
    Job.objects.filter(pk=first.pk).update(attempt=2, status=Job.Status.RUNNING)
    services._fail(first, failure="refused", drop_file=True)
    job = Job.objects.get(pk=first.pk)
    assert job.status == Job.Status.RUNNING and job.file == "uploads/kept.upload"
    assert services.storage().exists("uploads/kept.upload")
