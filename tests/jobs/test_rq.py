"""The RQ backend, for deployments with many workers: the same import, queued in the Redis on
127.0.0.1:6379 and run by `manage.py worker` (rqworker) under CLAIMDESK_TASKS=rq. Without
that Redis the test is skipped with a loud line; with CI=true it is required (.ci/run starts
Redis when it is down)."""

from __future__ import annotations

import signal

import pytest
import redis
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.models import Answer
from jobs import accept, health
from jobs.models import Job
from tests.conftest import _LOUD, CI
from tests.workers import wait_for, write_bundle

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
# A database of its own on the shared Redis, emptied before and after.
REDIS_URL = "redis://127.0.0.1:6379/13"


@pytest.fixture
def rq_tasks(settings, tmp_path):
    connection = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2)
    try:
        connection.ping()
    except redis.RedisError as exc:
        message = f"RQ TESTS SKIPPED: no Redis at {REDIS_URL} ({exc}); start redis-server"
        if CI:
            pytest.fail(
                f"CI=true but Redis does not answer at {REDIS_URL}: the RQ test is required"
            )
        _LOUD.add(message)
        pytest.skip(message)
    connection.flushdb()
    settings.CLAIMDESK_TASKS = "rq"
    settings.REDIS_URL = REDIS_URL
    settings.RQ_QUEUES = {"default": {"URL": REDIS_URL, "DEFAULT_TIMEOUT": 600}}
    settings.TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend"}}
    yield tmp_path
    connection.flushdb()


def test_an_import_queued_in_redis_is_run_by_an_rq_worker(rq_tasks, workers, lead, tmp_path):
    assert health.backend_problem() is None
    bundle = write_bundle(tmp_path / "b.jsonl", 500)
    job = accept.start_import(
        kind=Job.Kind.BUNDLE_IMPORT,
        user=lead,
        upload=SimpleUploadedFile("b.jsonl", bundle.read_bytes()),
        slug="via-redis",
        params={},
    )
    assert job.status == Job.Status.QUEUED and job.task_id
    worker = workers(CLAIMDESK_TASKS="rq", REDIS_URL=REDIS_URL)
    wait_for(lambda: Job.objects.get(pk=job.pk).finished, "the RQ worker", timeout=120)
    job = Job.objects.get(pk=job.pk)
    assert job.status == Job.Status.SUCCEEDED, (job.failure, worker.output())
    assert Answer.objects.filter(project__slug="via-redis").count() == 500
    # The framework's own record of the task, read back from Redis through the Tasks API. The
    # job row is finished inside the task, so RQ records its success a moment later: wait for it.
    from jobs.tasks import run_job

    wait_for(
        lambda: run_job.get_result(job.task_id).status == "SUCCESSFUL",
        "RQ's record of the task",
        timeout=30,
    )


def test_a_queued_job_whose_task_redis_lost_is_sent_again(rq_tasks, workers, lead, tmp_path):
    """A task a worker took from Redis and lost before the job started (its process killed,
    Redis restarted) left the job queued for nobody: a worker's resumer sends it again, and
    the job runs. Jobs whose task is still waiting are left alone."""
    import redis
    from rq.job import Job as RQJob

    from jobs import services

    bundle = write_bundle(tmp_path / "b.jsonl", 50)
    job = accept.start_import(
        kind=Job.Kind.BUNDLE_IMPORT,
        user=lead,
        upload=SimpleUploadedFile("b.jsonl", bundle.read_bytes()),
        slug="lost-task",
        params={},
    )
    lost = job.task_id
    assert services.resend_lost() == []  # its task waits in Redis: nothing to do
    connection = redis.Redis.from_url(REDIS_URL)
    RQJob.fetch(lost, connection=connection).delete()  # gone, as a lost task is
    assert [j.pk for j in services.resend_lost()] == [job.pk]
    job.refresh_from_db()
    assert job.status == Job.Status.QUEUED and job.task_id and job.task_id != lost
    workers(CLAIMDESK_TASKS="rq", REDIS_URL=REDIS_URL)
    wait_for(lambda: Job.objects.get(pk=job.pk).finished, "the RQ worker", timeout=120)
    assert Job.objects.get(pk=job.pk).status == Job.Status.SUCCEEDED
    assert Answer.objects.filter(project__slug="lost-task").count() == 50


def test_sigterm_ends_an_rq_worker_rather_than_starting_it_again(rq_tasks, workers):
    """The worker loop makes RQ's worker again when it stops on its own (a Redis fault), and
    returns when it was asked to stop: SIGTERM (what systemd and docker send) ends the
    process, at once and cleanly, with no reconnecting line."""
    worker = workers(CLAIMDESK_TASKS="rq", REDIS_URL=REDIS_URL)
    connection = redis.Redis.from_url(REDIS_URL)

    def waiting_for_jobs() -> bool:
        """Ours (another test's worker may still be registered), past start-up: RQ puts its
        signal handlers in after registering, and is idle once in its loop."""
        for key in connection.keys("rq:worker:*"):
            pid, state = connection.hmget(key, "pid", "state")
            if pid and int(pid) == worker.pid and state == b"idle":
                return True
        return False

    wait_for(waiting_for_jobs, "the RQ worker to wait for jobs", timeout=60)
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(timeout=30) == 0, worker.output()
    assert "reconnecting" not in worker.output()
