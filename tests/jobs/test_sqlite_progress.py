"""An import on the default install, SQLite, watched as a lead watches it: a file-backed
database, gunicorn serving the job's page and the API, a worker (the database task backend)
importing a bundle big enough to take several staleness periods. SQLite lets one writer in at a
time and the import holds that lock until it commits: the job's heartbeat and progress must
reach the page anyway (jobs.progress_files), so that it neither stands still nor says the
worker stopped while the import goes on."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
import requests
from django.db import connection

from tests.workers import ROOT, child_env, wait_for, write_bundle

pytestmark = pytest.mark.skipif(
    connection.vendor != "sqlite",
    reason="a database of its own, SQLite whatever the leg: runs in the SQLite leg",
)

# Twice the heartbeat's period (jobs.progress.HEARTBEAT_SECONDS): one held back by the import's
# lock shows at once, and the import outlasts many periods whatever the machine's speed.
STALE_SECONDS = 1
PASSWORD = "sqlite-progress-password-7"
ANSWERS = 10_000


class Server:
    """gunicorn on a port the system picks, with a log to read it from."""

    def __init__(self, env: dict[str, str], log_path):
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            [
                *(sys.executable, "-m", "gunicorn", "config.wsgi"),
                *("--bind", "127.0.0.1:0", "--workers", "2", "--timeout", "120"),
            ],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        found = wait_for(
            lambda: re.search(r"Listening at: (http://127\.0\.0\.1:\d+)", log_path.read_text()),
            "gunicorn to listen",
            timeout=60,
            every=0.2,
        )
        self.url = found.group(1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._log.close()


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True
    )


def test_a_long_sqlite_import_shows_rising_progress_and_never_a_stopped_worker(workers, tmp_path):
    database = f"sqlite:///{tmp_path / 'claimdesk.sqlite3'}"
    extra = {"DATABASE_URL": database, "CLAIMDESK_JOB_STALE_SECONDS": str(STALE_SECONDS)}
    env = child_env(tmp_path, **extra, DJANGO_SUPERUSER_PASSWORD=PASSWORD)
    manage(env, "migrate", "--noinput")
    manage(env, "createsuperuser", "--noinput", "--username", "lead", "--email", "l@example.org")
    bundle = write_bundle(tmp_path / "big.jsonl", ANSWERS)
    server = Server(env, tmp_path / "gunicorn.log")
    worker = workers(**extra)
    try:
        http = requests.Session()
        login = http.get(f"{server.url}/login/", timeout=30)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
        signed_in = http.post(
            f"{server.url}/login/",
            data={"username": "lead", "password": PASSWORD, "csrfmiddlewaretoken": token},
            allow_redirects=False,
            timeout=30,
        )
        assert signed_in.status_code == 302
        accepted = http.post(
            f"{server.url}/api/v1/projects/?slug=big&name=Big",
            data=bundle.read_bytes(),
            headers={
                "Content-Type": "application/x-ndjson",
                "X-CSRFToken": http.cookies["csrftoken"],
            },
            timeout=60,
        )
        assert accepted.status_code == 202, accepted.text[:500]
        job = accepted.json()
        page_url = f"{server.url}/jobs/{job['id']}/"

        # Read as the lead's page (its htmx poll) and a script (the API) read it, until done.
        readings = []
        pages = []
        deadline = time.monotonic() + 180
        while job["status"] not in ("succeeded", "failed") and time.monotonic() < deadline:
            job = http.get(server.url + job["url"], timeout=30).json()
            readings.append((time.monotonic(), job["status"], job["stalled"], job["progress"]))
            page = http.get(page_url, headers={"HX-Request": "true"}, timeout=30)
            if page.headers.get("HX-Redirect") is None:  # a finished import sends them on
                status = re.search(r'data-job-status="(\w+)"', page.text).group(1)
                counts = re.search(r"data-job-counts>(.*?)</p>", page.text, re.S)
                pages.append((status, " ".join(counts.group(1).split()) if counts else ""))
            time.sleep(0.1)
    finally:
        server.stop()
        worker.stop()

    assert job["status"] == "succeeded", (job, worker.output())
    assert job["result"]["counts"]["answer"]["created"] == ANSWERS
    running = [r for r in readings if r[1] == "running"]
    seconds = running[-1][0] - running[0][0]
    # Long enough that a heartbeat held back by the import's lock would have gone stale (the
    # worker beats every 0.5 s); 10,000 answers take 3-10 s on a 2-core machine, idle or busy.
    assert seconds > STALE_SECONDS + 1, f"the import took only {seconds:.1f} s: make it bigger"
    assert not [r for r in readings if r[2]], "the API called the running job stalled"
    assert {status for status, _ in pages} <= {"queued", "running"}, pages

    # Progress rises over time: lines read, then rows written, each never going back.
    lines = [r[3]["lines_read"] for r in running]
    rows = [r[3]["rows_written"] for r in running]
    assert lines == sorted(lines) and rows == sorted(rows)
    assert 0 < min(x for x in lines if x) < job["progress"]["lines_total"], lines
    distinct = {(r[3]["stage"], r[3]["lines_read"], r[3]["rows_written"]) for r in running}
    assert len(distinct) >= 4, distinct
    assert any(r[3]["rows_written"] for r in running), "no rows written seen before the end"
    # The page says the same in words.
    assert any(re.match(r"Reading: [\d,]+ of [\d,]+ lines read", text) for _, text in pages)
    assert any(
        re.match(r"Every line checked; writing: [1-9][\d,]* rows", text) for _, text in pages
    )
