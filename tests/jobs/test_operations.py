"""Running it: `make run` starts a worker beside the development server and Ctrl-C stops
both; /healthz answers load balancers without a login, a session or a known host name;
`manage.py healthcheck` exits non-zero when something is wrong."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from io import StringIO

import pytest
import requests
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import DatabaseError
from django.test import Client
from django.utils import timezone

from jobs import health
from jobs.models import Job
from tests.workers import ROOT, wait_for


def _children(pgid: int) -> list[str]:
    ps = subprocess.run(["ps", "-eo", "pgid=,stat=,args="], capture_output=True, text=True)
    return [
        line
        for line in ps.stdout.splitlines()
        if line.split()[0] == str(pgid) and not line.split()[1].startswith("Z")
    ]


def test_make_run_serves_with_a_worker_beside_it_and_ctrl_c_stops_both(tmp_path):
    env = {
        **os.environ,
        "CLAIMDESK_VAR_DIR": str(tmp_path),
        "DEBUG": "true",
        "PY": sys.executable,
        "ADDRESS": "127.0.0.1:8791",
    }
    env.pop("DATABASE_URL", None)  # the SQLite default, as a fresh checkout has it
    env.pop("CLAIMDESK_TASKS", None)
    migrate = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
    subprocess.run(migrate, cwd=ROOT, env=env, check=True)
    server = subprocess.Popen(
        ["bash", "bin/run-dev"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, as a terminal gives `make run`
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:

        def up():
            try:
                return requests.get("http://127.0.0.1:8791/healthz", timeout=5).ok
            except requests.RequestException:
                return False

        wait_for(up, "the development server", timeout=60, every=0.3)
        running = _children(server.pid)
        assert any("manage.py worker" in line for line in running), running
        assert any("manage.py runserver" in line for line in running), running

        os.killpg(server.pid, signal.SIGINT)  # what Ctrl-C sends to the foreground group
        server.wait(timeout=30)
        wait_for(lambda: not _children(server.pid), "both processes to stop", timeout=15)
        assert b"worker stopped" in server.stdout.read()
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)


@pytest.mark.django_db
def test_healthz_answers_any_host_without_a_session(settings):
    settings.ALLOWED_HOSTS = ["claimdesk.example.org"]
    settings.SECURE_SSL_REDIRECT = True
    response = Client().get("/healthz", HTTP_HOST="10.1.2.3")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}
    assert "Set-Cookie" not in response and "no-store" in response["Cache-Control"]
    assert response["X-Content-Type-Options"] == "nosniff"
    assert len(response.content) < 100


@pytest.mark.django_db
def test_healthz_is_503_when_the_database_does_not_answer(monkeypatch):
    def broken(*args, **kwargs):
        raise DatabaseError("connection refused")

    monkeypatch.setattr("django.db.backends.utils.CursorWrapper.execute", broken)
    response = Client().get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "unhealthy", "database": "unreachable"}
    assert response["X-Content-Type-Options"] == "nosniff"


@pytest.mark.django_db
def test_healthcheck_reports_the_jobs_and_fails_on_a_lost_worker(settings, lead):
    out = StringIO()
    call_command("healthcheck", stdout=out)
    assert "database: ok" in out.getvalue() and "healthy" in out.getvalue()

    settings.CLAIMDESK_TASKS = "database"
    Job.objects.create(
        kind=Job.Kind.BUNDLE_IMPORT,
        project_slug="x",
        status=Job.Status.RUNNING,
        heartbeat_at=timezone.now() - timedelta(minutes=10),
    )
    Job.objects.create(kind=Job.Kind.BUNDLE_IMPORT, project_slug="y")
    Job.objects.filter(project_slug="y").update(created_at=timezone.now() - timedelta(hours=1))
    report = health.full()
    assert report["jobs"]["stalled"] == 1 and report["jobs"]["queued"] == 1
    with pytest.raises(CommandError, match="lost their worker") as failure:
        call_command("healthcheck", stdout=StringIO())
    assert "is a worker running" in str(failure.value)
    # A worker container's check: the lost job is not this worker's health.
    out = StringIO()
    call_command("healthcheck", "--liveness", stdout=out)
    assert "database: ok" in out.getvalue() and out.getvalue().rstrip().endswith("healthy")


@pytest.mark.django_db
def test_healthcheck_fails_when_redis_does_not_answer(settings):
    settings.CLAIMDESK_TASKS = "rq"
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    settings.RQ_QUEUES = {"default": {"URL": settings.REDIS_URL}}
    assert "does not answer" in health.backend_problem()
    started = time.monotonic()
    with pytest.raises(CommandError, match="Redis"):
        call_command("healthcheck", stdout=StringIO())
    assert time.monotonic() - started < 30
