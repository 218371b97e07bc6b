"""Imports run by a real worker process on PostgreSQL: the job reports its progress while it
runs; a worker killed mid-import (SIGKILL) leaves the database as it was and a job that says
its worker is gone; retried under a new worker, the import completes. A worker that a job
left above its memory limit starts afresh in the same process and goes on."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django_tasks_db.models import DBTaskResult

from annotate.gold.exports import start_gold_export
from annotate.models import Answer, Claim, Passage, Project
from annotate.tasks import bundle_errors, refresh_report
from jobs import accept, services
from jobs.models import Job
from tests.workers import ROOT, child_env, wait_for, write_bundle

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def upload(path) -> SimpleUploadedFile:
    return SimpleUploadedFile(path.name, path.read_bytes(), content_type="application/x-ndjson")


def fresh(job: Job) -> Job:
    return Job.objects.get(pk=job.pk)


def test_a_worker_imports_a_queued_bundle_and_reports_progress_as_it_goes(
    database_tasks, workers, lead, tmp_path
):
    bundle = write_bundle(tmp_path / "b.jsonl", 2000)
    job = accept.start_import(
        kind=Job.Kind.BUNDLE_IMPORT, user=lead, upload=upload(bundle), slug="big", params={}
    )
    assert job.status == Job.Status.QUEUED and job.lines_total > 2000
    worker = workers()
    seen = set()

    def done():
        current = fresh(job)
        seen.add((current.stage, current.lines_read))
        return current.finished

    wait_for(done, "the import to finish", timeout=120, every=0.05)
    job = fresh(job)
    assert job.status == Job.Status.SUCCEEDED, (job.failure, worker.output())
    assert job.result["counts"]["answer"]["created"] == 2000
    assert job.project.slug == "big" and job.file == "" and job.attempt == 1
    assert job.project.memberships.get().user == lead
    assert Claim.objects.filter(answer__project__slug="big").count() == 20000
    assert job.rows_written > 20000 and job.lines_read == job.lines_total
    # Seen while it ran, from outside the import's transaction: a stage between queued and done.
    assert any(stage not in ("", "done") for stage, _ in seen), seen
    # The upload goes once the import has committed (after the tables' ANALYZE, also run then).
    wait_for(lambda: not services.storage().listdir("uploads")[1], "the upload to go", timeout=60)


def test_a_worker_killed_mid_import_leaves_nothing_and_the_retried_job_completes(
    database_tasks, workers, lead, settings, tmp_path
):
    settings.CLAIMDESK_JOB_STALE_SECONDS = 3
    bundle = write_bundle(tmp_path / "b.jsonl", 6000)
    before = (Project.objects.count(), Passage.objects.count(), Answer.objects.count())
    job = accept.start_import(
        kind=Job.Kind.BUNDLE_IMPORT, user=lead, upload=upload(bundle), slug="big", params={}
    )
    first = workers()
    # Killed once it is writing: the rows are in the database, inside an open transaction.
    wait_for(
        lambda: fresh(job).stage in ("answers", "retrieved passages", "claims"),
        "the import to start writing",
        timeout=120,
        every=0.02,
    )
    first.kill()
    assert (Project.objects.count(), Passage.objects.count(), Answer.objects.count()) == before

    stuck = fresh(job)
    assert stuck.status == Job.Status.RUNNING and stuck.file
    wait_for(lambda: fresh(job).stalled, "the job to show its worker is gone", timeout=10)
    assert fresh(job).retryable
    assert Job.objects.stalled().filter(pk=job.pk).exists()

    accept.retry_job(job=fresh(job))
    second = workers()
    wait_for(lambda: fresh(job).finished, "the retried import", timeout=120)
    job = fresh(job)
    assert job.status == Job.Status.SUCCEEDED, (job.failure, second.output())
    assert job.attempt == 2
    assert Answer.objects.filter(project__slug="big").count() == 6000
    assert Project.objects.filter(slug="big").count() == 1


def test_a_refused_bundle_fails_its_job_with_every_error_by_line_and_writes_nothing(
    database_tasks, workers, lead, tmp_path
):
    bundle = write_bundle(tmp_path / "b.jsonl", 1000, broken_every=100)
    job = accept.start_import(
        kind=Job.Kind.BUNDLE_IMPORT, user=lead, upload=upload(bundle), slug="big", params={}
    )
    workers()
    wait_for(lambda: fresh(job).finished, "the import to be refused", timeout=60)
    job = fresh(job)
    assert job.status == Job.Status.FAILED and not job.retryable and job.file == ""
    assert len(job.errors) == 10
    assert all("no-such-case" in message for _, message, _ in job.errors)
    grouped = bundle_errors(job).grouped()
    assert len(grouped) == 10 and grouped[0].startswith("line ")
    assert not Project.objects.filter(slug="big").exists()


def test_a_job_is_run_once_however_often_its_task_is_delivered(database_tasks, lead, tmp_path):
    from jobs.tasks import run_job

    bundle = write_bundle(tmp_path / "b.jsonl", 10)
    job = accept.start_import(
        kind=Job.Kind.BUNDLE_IMPORT, user=lead, upload=upload(bundle), slug="once", params={}
    )
    run_job.call(str(job.pk))
    run_job.call(str(job.pk))  # a second delivery finds the job done and leaves it
    job = fresh(job)
    assert job.status == Job.Status.SUCCEEDED and job.attempt == 1


def test_a_worker_writes_a_gold_export_that_matches_the_streamed_one(
    demo, database_tasks, workers, lead
):
    from annotate.common.jsonl import jsonl
    from annotate.gold.exports import gold_rows, gold_size

    expected = "".join(jsonl(gold_rows(demo)))
    job = start_gold_export(project=demo, user=lead, fmt="jsonl", filters={}, rows=gold_size(demo))
    worker = workers()
    wait_for(lambda: fresh(job).finished, "the export", timeout=60)
    job = fresh(job)
    assert job.status == Job.Status.SUCCEEDED, (job.failure, worker.output())
    with services.storage().open(job.output, "rb") as written:
        assert written.read().decode() == expected
    assert job.rows_written == job.rows_total == 101


def _ran_by(results) -> list[list[str]]:
    """Each task's worker ids, once every one of them has succeeded."""

    def done():
        rows = list(DBTaskResult.objects.filter(pk__in=[r.id for r in results]))
        return len(rows) == len(results) and all(row.status == "SUCCESSFUL" for row in rows)

    wait_for(done, "the tasks to succeed", timeout=60)
    by_id = {str(row.pk): row.worker_ids for row in DBTaskResult.objects.all()}
    return [by_id[str(result.id)] for result in results]


def _three_jobs():
    # A report of a project that is gone: a real job that finds nothing to do.
    return [refresh_report.enqueue(10**9, "agreement", "") for _ in range(3)]


def test_a_worker_above_its_memory_limit_after_a_job_starts_afresh_in_the_same_process(
    database_tasks, workers
):
    # Any job leaves a worker above 1 MB: it starts afresh after each, and goes on taking jobs.
    worker = workers(CLAIMDESK_WORKER_MAX_MEMORY_MB="1")
    ran_by = _ran_by(_three_jobs())
    assert all(len(ids) == 1 for ids in ran_by), ran_by
    assert len({ids[0] for ids in ran_by}) == 3, "each job by a fresh worker"
    # The same process all along (exec, not exit): a process manager sees nothing happen.
    assert worker.process.poll() is None
    # And it still stops when asked: at once between jobs (0), or by the signal's default
    # action while the fresh interpreter is still starting (-15), as any worker would.
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(timeout=15) in (0, -signal.SIGTERM), worker.output()


def test_a_worker_under_its_memory_limit_or_without_one_keeps_running_as_it_is(
    database_tasks, workers
):
    for limit in ("0", "1000000"):
        worker = workers(CLAIMDESK_WORKER_MAX_MEMORY_MB=limit)
        ran_by = _ran_by(_three_jobs())
        assert len({ids[0] for ids in ran_by}) == 1, (limit, ran_by)
        worker.stop()


def test_a_batch_worker_that_starts_afresh_still_takes_every_job_and_then_exits(
    database_tasks, tmp_path
):
    results = _three_jobs()
    done = subprocess.run(
        [sys.executable, "manage.py", "worker", "--batch", "-v", "0"],
        cwd=ROOT,
        env=child_env(tmp_path, CLAIMDESK_WORKER_MAX_MEMORY_MB="1"),
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    ran_by = _ran_by(results)
    assert len({ids[0] for ids in ran_by}) == 3, ran_by
