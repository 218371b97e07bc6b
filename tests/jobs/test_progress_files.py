"""A running job's live heartbeat and progress beside an SQLite database (jobs.progress_files),
read by everyone who reads the job: its page, the API, the staleness checks. The folder is
pointed at the test's own here, as a file-backed SQLite database would have it; the whole path
through a real worker and server is tests/jobs/test_sqlite_progress.py."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from jobs import health, progress_files
from jobs.models import Job
from jobs.progress import Progress
from tests.api import API, token_client
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def beside(monkeypatch, tmp_path):
    where = tmp_path / "claimdesk.sqlite3-progress"
    monkeypatch.setattr(progress_files, "folder", lambda using="default": where)
    return where


def running(lead, *, heartbeat_age: timedelta, attempt: int = 1) -> Job:
    """A job as a worker's claim left its row: running, its heartbeat the claim's."""
    return Job.objects.create(
        kind=Job.Kind.BUNDLE_IMPORT,
        project_slug="big",
        created_by=lead,
        status=Job.Status.RUNNING,
        attempt=attempt,
        stage="reading",
        lines_total=10,
        heartbeat_at=timezone.now() - heartbeat_age,
    )


def page_of(job: Job, lead) -> str:
    lead.set_password(PASSWORD)
    lead.save()
    client = Client()
    client.login(username=lead.username, password=PASSWORD)
    return client.get(f"/jobs/{job.pk}/", headers={"HX-Request": "true"}).content.decode()


def test_a_beat_goes_beside_the_database_and_every_reader_sees_it(beside, lead):
    job = running(lead, heartbeat_age=timedelta(minutes=5))
    progress = Progress(job, heartbeat=False)
    for _ in progress.count_lines(range(7)):
        pass
    progress.stage = "reading"
    progress.flush()

    # The row is as the claim left it: the import's lock would have held a write to it.
    row = Job.objects.filter(pk=job.pk).values("lines_read", "heartbeat_at").get()
    assert row == {"lines_read": 0, "heartbeat_at": job.heartbeat_at}
    assert [p.name for p in beside.iterdir()] == [f"{job.pk}-1.json"]

    html = page_of(job, lead)
    assert 'data-job-status="running"' in html and "Reading: 7 of 10 lines read" in html
    body = token_client(lead).get(f"{API}/jobs/{job.pk}/").json()
    assert body["stalled"] is False and body["progress"]["lines_read"] == 7
    assert not Job.objects.stalled().exists()
    assert health.full()["jobs"]["stalled"] == 0


def test_a_job_whose_live_beat_is_old_too_is_stalled(beside, lead, settings):
    settings.CLAIMDESK_JOB_STALE_SECONDS = 60
    job = running(lead, heartbeat_age=timedelta(minutes=10))
    progress_files.write(
        job.pk,
        attempt=1,
        at=timezone.now() - timedelta(minutes=2),
        fields={"stage": "claims", "lines_read": 10, "rows_written": 500},
    )
    assert list(Job.objects.stalled()) == [job]
    body = token_client(lead).get(f"{API}/jobs/{job.pk}/").json()
    assert body["stalled"] is True and body["progress"]["stage"] == "claims"
    assert 'data-job-status="stalled"' in page_of(job, lead)


def test_the_beats_of_an_earlier_attempt_do_not_keep_a_retried_job_alive(beside, lead):
    job = running(lead, heartbeat_age=timedelta(minutes=10), attempt=1)
    Progress(job, heartbeat=False).flush()  # the attempt a killed worker ran
    Job.objects.filter(pk=job.pk).update(attempt=2)  # retried; its new worker is lost too
    assert list(Job.objects.stalled()) == [job]
    assert token_client(lead).get(f"{API}/jobs/{job.pk}/").json()["stalled"] is True


def test_prune_jobs_removes_the_live_files_of_jobs_that_ended(beside, lead):
    alive = running(lead, heartbeat_age=timedelta(seconds=0))
    ended = running(lead, heartbeat_age=timedelta(seconds=0))
    for job in (alive, ended):
        Progress(job, heartbeat=False).flush()
    Job.objects.filter(pk=ended.pk).update(status=Job.Status.SUCCEEDED)
    call_command("prune_jobs", stdout=StringIO())
    assert [p.name for p in beside.iterdir()] == [f"{alive.pk}-1.json"]


def test_postgresql_and_an_sqlite_database_in_memory_keep_the_heartbeat_in_the_row(lead):
    """No folder where the database is PostgreSQL, or an SQLite database no other process can
    open (as this suite's): the beat is the row's, as before."""
    assert progress_files.folder() is None
    job = running(lead, heartbeat_age=timedelta(minutes=5))
    progress = Progress(job, heartbeat=False)
    progress.lines_read = 3
    progress.flush()
    row = Job.objects.get(pk=job.pk)
    assert row.lines_read == 3 and timezone.now() - row.heartbeat_at < timedelta(seconds=30)
