"""Workers that outlive their dependencies, and jobs that resume on their own, with real
`manage.py worker` processes on PostgreSQL (faults put in by tests/hooked_worker.py).

- The database drops the worker's connection inside an import's after-commit VACUUM/ANALYZE:
  the worker goes on, and the job's row and the log both say the import succeeded.
- The database drops an import's connection in the middle of its transaction: nothing was
  written, and the job is queued again and run to its end, without anyone pressing Retry.
- The database refuses connections for a while: the worker backs off, and takes the next
  job once it is back.
- Redis (a private redis-server) is down when the RQ worker starts, or goes away under it: the
  worker waits for it; an upload meanwhile answers 503 and queues nothing; once Redis is back
  the same worker process runs the next job.
- A worker killed (SIGKILL) mid-import: a second one takes the job up once its heartbeat is
  older than the staleness window, without anyone pressing Retry; after
  CLAIMDESK_JOB_MAX_ATTEMPTS runs that all lost their worker, the job fails saying so.
- A worker killed mid-export: the partial file goes when the job is taken up again.
"""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import psycopg
import pytest
import redis
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django_tasks_db.models import DBTaskResult

from annotate.common.jsonl import jsonl
from annotate.gold.exports import gold_rows, gold_size, start_gold_export
from annotate.models import Answer, Project
from jobs import accept, services
from jobs.models import Job
from tests.api import API, JSONL, token_client
from tests.conftest import FIXTURES
from tests.workers import wait_for, write_bundle

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
STALE = "2"  # seconds: the workers' staleness window here


def upload(path: Path) -> SimpleUploadedFile:
    return SimpleUploadedFile(path.name, path.read_bytes(), content_type="application/x-ndjson")


def fresh(job: Job) -> Job:
    return Job.objects.get(pk=job.pk)


def queue_import(lead, tmp_path: Path, answers: int, slug: str) -> Job:
    bundle = write_bundle(tmp_path / f"{slug}.jsonl", answers)
    return accept.start_import(
        kind=Job.Kind.BUNDLE_IMPORT, user=lead, upload=upload(bundle), slug=slug, params={}
    )


def exports() -> list[str]:
    store = services.storage()
    return sorted(store.listdir("exports")[1]) if store.exists("exports") else []


# --- The database goes away ------------------------------------------------------------------


def test_a_connection_dropped_in_an_imports_after_commit_step_leaves_the_worker_running(
    database_tasks, workers, lead, tmp_path
):
    worker = workers(hook="drop-connection-in-maintenance")
    for slug in ("first", "second"):  # the same process takes the second
        job = queue_import(lead, tmp_path, 50, slug)
        wait_for(lambda job=job: fresh(job).finished, f"the import into {slug}", timeout=60)
        job = fresh(job)
        assert job.status == Job.Status.SUCCEEDED, (job.failure, worker.output())
        assert Answer.objects.filter(project__slug=slug).count() == 50
        # The task framework's record agrees with the job's row.
        wait_for(
            lambda job=job: DBTaskResult.objects.get(pk=job.task_id).status == "SUCCESSFUL",
            "the task's own record",
            timeout=30,
        )
        assert worker.process.poll() is None, worker.output()
        log = worker.output()
        # The log says what the row says: done, with the upkeep that failed as a warning,
        # and the worker never lost its footing (no reconnection needed afterwards).
        assert log.count("HOOK: terminated backend") == (1 if slug == "first" else 2), log
        assert "after-commit VACUUM/ANALYZE of" in log and "the committed write stands" in log
        assert f"job {job.pk} failed" not in log and "the database failed" not in log, log
        assert job.failure == ""


def test_an_import_whose_connection_drops_mid_transaction_is_run_again_by_itself(
    database_tasks, workers, lead, tmp_path
):
    worker = workers(hook="drop-connection-while-writing")
    job = queue_import(lead, tmp_path, 200, "again")
    wait_for(lambda: fresh(job).finished, "the import", timeout=90)
    job = fresh(job)
    assert job.status == Job.Status.SUCCEEDED, (job.failure, worker.output())
    assert (job.attempt, job.attempts) == (2, 2)  # the broken run, then the good one
    assert Answer.objects.filter(project__slug="again").count() == 200
    log = worker.output()
    assert "HOOK: terminated backend" in log
    assert f"job {job.pk}: the database broke off run 1 of 3" in log and "queued again" in log
    assert f"job {job.pk} failed" not in log
    assert worker.process.poll() is None


def test_a_worker_outlives_a_database_that_refuses_it_for_a_while(
    database_tasks, workers, lead, tmp_path
):
    worker = workers()
    first = queue_import(lead, tmp_path, 10, "before")
    wait_for(lambda: fresh(first).finished, "the first import", timeout=60)
    name = connection.settings_dict["NAME"]
    mine = own_backend_pid()  # this test's connection stays; new ones are refused
    with psycopg.connect(**admin(), autocommit=True) as other:
        try:
            other.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
            other.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> %s",
                [name, mine],
            )
            wait_for(
                lambda: worker.output().count("the database failed") >= 2,
                "the worker to try again, and again",
                timeout=30,
            )
            assert worker.process.poll() is None, worker.output()
        finally:
            other.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS true')
    second = queue_import(lead, tmp_path, 10, "after")
    wait_for(lambda: fresh(second).finished, "the import after the outage", timeout=60)
    assert fresh(second).status == Job.Status.SUCCEEDED, (fresh(second).failure, worker.output())
    assert worker.process.poll() is None
    log = worker.output()
    assert "reconnecting in 0.5 s" in log and "reconnecting in 1.0 s" in log  # backing off


def admin() -> dict:
    params = connection.get_connection_params()
    return {
        "dbname": "postgres",
        **{k: params[k] for k in ("host", "port", "user", "password") if params.get(k)},
    }


def own_backend_pid() -> int:
    connection.ensure_connection()
    return connection.connection.info.backend_pid


# --- Redis goes away (the RQ backend) -----------------------------------------------------------


class PrivateRedis:
    """redis-server on a port the OS assigned, in a folder of its own, keeping nothing on disk:
    stopped and started again, it comes back empty, as a Redis without persistence does."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir()
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["/usr/bin/redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
            + ["--dir", str(self.folder), "--save", "", "--appendonly", "no"],
            stdout=(self.folder / "redis.log").open("ab"),
            stderr=subprocess.STDOUT,
        )
        wait_for(self.answers, "redis-server to answer", timeout=20)

    def answers(self) -> bool:
        try:
            return redis.Redis.from_url(self.url, socket_connect_timeout=1).ping()
        except redis.RedisError:
            return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()  # as a crash: no goodbye to its clients
            self.process.wait(timeout=10)


@pytest.fixture
def private_redis(settings, tmp_path):
    if not Path("/usr/bin/redis-server").exists():
        pytest.skip("no /usr/bin/redis-server")
    server = PrivateRedis(tmp_path / "redis")
    server.start()
    settings.CLAIMDESK_TASKS = "rq"
    settings.REDIS_URL = server.url
    settings.RQ_QUEUES = {"default": {"URL": server.url, "DEFAULT_TIMEOUT": 600}}
    settings.TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend"}}
    yield server
    server.stop()


def test_the_rq_worker_outlives_redis_and_runs_the_job_queued_once_it_is_back(
    private_redis, workers, team, lead
):
    client = token_client(lead)
    client.raise_request_exception = False
    bundle = (FIXTURES / "small.jsonl").read_bytes()
    url = f"{API}/projects/small/bundle/"

    def queued_and_run(what: str) -> None:
        accepted = client.post(url, bundle, content_type=JSONL)
        assert accepted.status_code == 202, accepted.content
        job = Job.objects.get(pk=accepted.json()["id"])
        wait_for(lambda: fresh(job).finished, what, timeout=90)
        assert fresh(job).status == Job.Status.SUCCEEDED, (fresh(job).failure, worker.output())

    # Started while Redis is down (RQ's own worker cannot even start): it waits for Redis.
    private_redis.stop()
    worker = workers(CLAIMDESK_TASKS="rq", REDIS_URL=private_redis.url)
    wait_for(lambda: "reconnecting in" in worker.output(), "the worker to wait", timeout=30)
    private_redis.start()
    queued_and_run("the job once Redis came up")
    assert "reconnected" in worker.output()

    # Redis goes away under a running worker: an upload meanwhile is refused, leaving nothing.
    private_redis.stop()
    during = client.post(url, bundle, content_type=JSONL)
    assert during.status_code == 503 and "Try again" in during.json()["detail"]
    assert Job.objects.count() == 1  # no job waits for a task that never left
    noticed = worker.output().count("Redis")
    wait_for(lambda: worker.output().count("Redis") > noticed, "the worker to notice", timeout=30)
    assert worker.process.poll() is None, worker.output()

    private_redis.start()  # empty: whatever Redis held is gone
    queued_and_run("the job queued once Redis was back")
    assert worker.process.poll() is None


# --- Workers killed mid-job --------------------------------------------------------------------


def stalled_env(**extra: str) -> dict[str, str]:
    return {"CLAIMDESK_JOB_STALE_SECONDS": STALE, **extra}


def writing(job: Job, attempt: int) -> bool:
    current = fresh(job)
    return current.attempt == attempt and current.stage == "answers"


def test_a_worker_killed_mid_import_is_replaced_by_the_next_one_without_retry(
    database_tasks, workers, lead, tmp_path
):
    job = queue_import(lead, tmp_path, 300, "big")
    first = workers(hook="pause-while-writing", **stalled_env())
    wait_for(lambda: writing(job, 1), "the import to write its answers", timeout=60)
    second = workers(**stalled_env())
    first.kill()
    # Nobody presses Retry: the second worker finds the job's heartbeat stopped and takes it.
    wait_for(lambda: fresh(job).finished, "the job taken up again", timeout=60)
    job = fresh(job)
    assert job.status == Job.Status.SUCCEEDED, (job.failure, second.output())
    assert (job.attempt, job.attempts) == (2, 2)
    assert Answer.objects.filter(project__slug="big").count() == 300
    assert Project.objects.filter(slug="big").count() == 1
    assert f"job {job.pk} resumed" in second.output()


def test_a_job_whose_worker_stops_every_time_fails_after_the_limit_saying_so(
    database_tasks, workers, lead, tmp_path
):
    env = stalled_env(CLAIMDESK_JOB_MAX_ATTEMPTS="2")
    job = queue_import(lead, tmp_path, 50, "doomed")
    first = workers(hook="pause-while-writing", **env)
    wait_for(lambda: writing(job, 1), "run 1 to write", timeout=60)
    second = workers(hook="pause-while-writing", **env)
    first.kill()
    wait_for(lambda: writing(job, 2), "run 2, taken up by the second worker", timeout=60)
    third = workers(hook="pause-while-writing", **env)
    second.kill()
    wait_for(lambda: fresh(job).finished, "the job to fail", timeout=60)
    job = fresh(job)
    assert job.status == Job.Status.FAILED, third.output()
    assert job.failure.startswith("The worker running this job stopped 2 times;")
    assert (job.attempt, job.attempts) == (2, 2)
    assert not Project.objects.filter(slug="doomed").exists()
    # A person's Retry stays: the file is kept, and the job gets its runs again.
    assert job.retryable and job.file
    third.kill()
    retried = accept.retry_job(job=job)
    assert retried.status == Job.Status.QUEUED and retried.attempts == 0 and not retried.failure


def test_a_killed_export_taken_up_again_leaves_only_its_finished_file(
    demo, database_tasks, workers, lead
):
    expected = "".join(jsonl(gold_rows(demo)))
    job = start_gold_export(project=demo, user=lead, fmt="jsonl", filters={}, rows=gold_size(demo))
    first = workers(hook="pause-export", **stalled_env())
    wait_for(lambda: "HOOK: paused an export" in first.output(), "a partial export", timeout=60)
    partial = exports()
    assert len(partial) == 1 and str(job.pk) in partial[0]
    second = workers(**stalled_env())
    first.kill()
    wait_for(lambda: fresh(job).finished, "the export taken up again", timeout=60)
    job = fresh(job)
    assert job.status == Job.Status.SUCCEEDED, (job.failure, second.output())
    assert job.attempts == 2
    assert exports() == [job.output.removeprefix("exports/")]
    with services.storage().open(job.output, "rb") as written:
        assert written.read().decode() == expected
