"""Real workers for the job tests: `manage.py worker` in a child process on the test database,
with the database task backend (or RQ), and bundles made on the spot by bench/import_bundle."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]
DATABASE_TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}


def database_url() -> str:
    """The test database as a DATABASE_URL, for child processes."""
    db = connection.settings_dict
    user = db.get("USER") or "postgres"
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    host, port = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{db['NAME']}"


def child_env(var_dir: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CLAIMDESK_VAR_DIR": str(var_dir),
        "CLAIMDESK_TASKS": "database",
        "DEBUG": "false",
        "PYTHONUNBUFFERED": "1",
    }
    env.update(extra)
    return env


class Worker:
    """`manage.py worker` in a child process; its output goes to a log file in `var_dir`.
    With `hook`, tests/hooked_worker.py's fault of that name is put in first."""

    def __init__(self, var_dir: Path, *, hook: str = "", **env: str):
        self.log = var_dir / f"worker-{time.monotonic_ns()}.log"
        self._out = self.log.open("wb")
        program = ["tests/hooked_worker.py"] if hook else ["manage.py", "worker"]
        if hook:
            env["CLAIMDESK_TEST_HOOK"] = hook
        self.process = subprocess.Popen(
            [sys.executable, *program, "--interval", "0.2", "-v", "0"],
            cwd=ROOT,
            env=child_env(var_dir, **env),
            stdout=self._out,
            stderr=subprocess.STDOUT,
            # A group of its own: RQ's scheduler runs in a forked child, which a SIGKILL of
            # the worker alone would leave running on the test database.
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL to the worker and what it forked: no handler runs, nothing is cleaned up,
        as when a machine dies."""
        with contextlib.suppress(ProcessLookupError):  # the group is gone already
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._out.close()

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def database_tasks(settings, tmp_path):
    """Jobs go to the database backend, for a worker process to take; files go where the
    workers look (CLAIMDESK_VAR_DIR/jobs)."""
    settings.TASKS = DATABASE_TASKS
    settings.CLAIMDESK_TASKS = "database"
    return tmp_path


@pytest.fixture
def workers(tmp_path):
    """Start workers with `workers(**env)` (the database backend unless env says otherwise);
    each is stopped at the end of the test. Jobs queued by the test itself need the backend
    to match: `database_tasks`, or the RQ test's own fixture."""
    started: list[Worker] = []

    def start(*, hook: str = "", **env: str) -> Worker:
        worker = Worker(tmp_path, hook=hook, **env)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def wait_for(check, what: str, *, timeout: float = 60.0, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def write_bundle(path: Path, answers: int, *, broken_every: int = 0) -> Path:
    sys.path.insert(0, str(ROOT))
    from bench.import_bundle import write_bundle as generate

    generate(path, answers, broken_every=broken_every)
    return path
