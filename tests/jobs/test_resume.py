"""Jobs that resume on their own, in one process (tests/jobs/test_healing.py kills real
workers): a job whose heartbeat stopped is queued again with the files its lost attempt left
removed, until it has had CLAIMDESK_JOB_MAX_ATTEMPTS runs, and then fails saying why; a
person's Retry gives it its runs again. An error after a job's end committed leaves the job
done, and the log says so as a warning. prune_jobs removes files no job points at."""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from io import StringIO

import pytest
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from jobs import accept, services
from jobs.models import Job
from tests.conftest import FIXTURES

pytestmark = pytest.mark.django_db(transaction=True)


def save(name: str, data: bytes = b"{}\n") -> str:
    return services.storage().save(name, ContentFile(data))


def lost(job: Job, **fields) -> Job:
    """`job` running, its worker silent for ten minutes."""
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING, heartbeat_at=timezone.now() - timedelta(minutes=10), **fields
    )
    return Job.objects.get(pk=job.pk)


def export_job(**fields) -> Job:
    return Job.objects.create(kind=Job.Kind.GOLD_EXPORT, project_slug="x", **fields)


def test_a_job_whose_worker_stopped_is_queued_again_without_what_it_left(database_tasks):
    job = lost(export_job(), attempt=1, attempts=1)
    partial = save(f"exports/x-gold-{job.pk}.jsonl")
    other = export_job(status=Job.Status.RUNNING, heartbeat_at=timezone.now())
    others = save(f"exports/x-gold-{other.pk}.jsonl")

    assert [j.pk for j in services.resume_stalled()] == [job.pk]
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED and (job.attempt, job.attempts) == (1, 1)
    assert not services.storage().exists(partial)
    assert services.storage().exists(others)  # a live job's file is its own
    assert DBTaskResult.objects.count() == 1  # sent to a worker
    other.refresh_from_db()
    assert other.status == Job.Status.RUNNING  # its worker beats: left alone
    assert services.resume_stalled() == []  # queued now: nothing more to do


def test_after_its_last_run_a_job_whose_worker_stopped_fails_saying_so(database_tasks, settings):
    settings.CLAIMDESK_JOB_MAX_ATTEMPTS = 3
    job = lost(export_job(), attempt=4, attempts=3)
    partial = save(f"exports/x-gold-{job.pk}.jsonl")
    services.resume_stalled()
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.finished_at is not None
    assert job.failure.startswith("The worker running this job stopped 3 times;")
    assert not services.storage().exists(partial)
    assert DBTaskResult.objects.count() == 0
    # A person's Retry stays for failed jobs, and gives the job its runs again.
    assert job.retryable
    retried = accept.retry_job(job=job)
    assert retried.status == Job.Status.QUEUED and retried.attempts == 0
    assert retried.failure == ""


def test_a_failure_after_a_job_committed_leaves_it_done_and_is_logged_as_a_warning(
    lead, caplog, monkeypatch
):
    """An after-commit step (here: deleting the upload) that fails: the job's row says done,
    and so does the log -- a warning, never "job ... failed"."""
    job = Job.objects.create(
        kind=Job.Kind.BUNDLE_IMPORT, project_slug="small", created_by=lead, lines_total=1
    )
    name = save(f"uploads/{job.pk}.upload", (FIXTURES / "small.jsonl").read_bytes())
    Job.objects.filter(pk=job.pk).update(file=name)
    store = services.storage()
    delete = store.delete

    def refused(path):
        if path.startswith("uploads/"):
            raise PermissionError(f"cannot delete {path}")
        return delete(path)

    monkeypatch.setattr(store, "delete", refused)
    with caplog.at_level(logging.WARNING):
        services.run(str(job.pk))
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED and job.failure == ""
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    warned = [r.getMessage() for r in caplog.records if r.name == "jobs.services"]
    assert any("an error after its run ended" in m and "succeeded" in m for m in warned), warned


def test_prune_jobs_removes_files_no_job_points_at(database_tasks, lead):
    done = export_job(status=Job.Status.SUCCEEDED, finished_at=timezone.now())
    kept = save(f"exports/x-gold-{done.pk}.jsonl")
    Job.objects.filter(pk=done.pk).update(output=kept)
    left_over = save(f"exports/x-gold-{done.pk}_a1b2c3.jsonl")  # an earlier attempt's
    running = export_job(status=Job.Status.RUNNING, heartbeat_at=timezone.now())
    writing = save(f"exports/x-gold-{running.pk}.jsonl")  # not pointed at yet: being written
    gone = save("exports/x-gold-00000000-0000-4000-8000-000000000000.jsonl")
    unnamed = save("exports/stray.csv")
    arriving = save("uploads/11111111-1111-4111-8111-111111111111.upload")  # being accepted
    an_hour_ago = (timezone.now() - timedelta(hours=2)).timestamp()
    for name in (gone, unnamed):
        os.utime(services.storage().path(name), (an_hour_ago, an_hour_ago))

    out = StringIO()
    call_command("prune_jobs", stdout=out)
    exists = services.storage().exists
    assert not exists(left_over) and not exists(gone) and not exists(unnamed)
    assert exists(kept) and exists(writing) and exists(arriving)
    assert "3 file(s) no job points at deleted" in out.getvalue()
