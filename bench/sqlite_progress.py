"""What a person watching an import sees on the default install (SQLite): a worker process (the
database task backend) imports a bench bundle into a fresh SQLite database, and this process
reads the job as the job page and the API read it, twice a second, printing each reading: its
time, status, stage, lines read, rows written, and whether the job is called stalled.

Usage: python bench/sqlite_progress.py   (BENCH_ANSWERS answers, default 8,000;
CLAIMDESK_JOB_STALE_SECONDS, default 10 here, is the staleness threshold the readings use)
The database is a new file in a temporary folder, removed at the end.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
VAR_DIR = Path(tempfile.mkdtemp(prefix="claimdesk-bench-sqlite-"))
os.environ["CLAIMDESK_VAR_DIR"] = str(VAR_DIR)
os.environ["CLAIMDESK_TASKS"] = "database"
os.environ.setdefault("CLAIMDESK_JOB_STALE_SECONDS", "10")
os.environ.pop("DATABASE_URL", None)  # the default: an SQLite file under CLAIMDESK_VAR_DIR
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from bench.common import ROOT  # noqa: E402
from bench.import_bundle import write_bundle  # noqa: E402

ANSWERS = int(os.environ.get("BENCH_ANSWERS", "8000"))


def main() -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.files import File
    from django.core.management import call_command

    from annotate.projects.services import allow_creating_projects
    from jobs import accept as services
    from jobs.models import Job

    call_command("migrate", verbosity=0)
    print(f"load average at start: {os.getloadavg()}")
    lead = get_user_model().objects.create_user("bench-lead")
    allow_creating_projects(user=lead)
    path = VAR_DIR / "bundle.jsonl"
    lines = write_bundle(path, ANSWERS)
    print(f"bundle: {lines:,} lines, {path.stat().st_size / 1e6:.1f} MB, {ANSWERS:,} answers")
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "worker", "--interval", "0.1", "-v", "0"],
        cwd=ROOT,
        env=os.environ.copy(),
    )
    try:
        time.sleep(3)  # the worker's start-up
        with path.open("rb") as stream:
            job = services.start_import(
                kind=Job.Kind.BUNDLE_IMPORT,
                user=lead,
                upload=File(stream, name="bundle.jsonl"),
                slug="bench",
                params={},
            )
        start = time.monotonic()
        header = ("s", "status", "stage", "lines read", "rows written", "stalled")
        print("{:>6}  {:<9} {:<20} {:>10} {:>12}  {}".format(*header))
        while True:
            job = Job.objects.get(pk=job.pk)
            stalled = "STALLED" if job.stalled else "-"
            print(
                f"{time.monotonic() - start:6.1f}  {job.status:<9} {job.stage or '-':<20} "
                f"{job.lines_read:>10,} {job.rows_written:>12,}  {stalled}",
                flush=True,
            )
            if job.finished or time.monotonic() - start > 600:
                break
            time.sleep(0.5)
        print(f"result: {job.result.get('summary') or job.failure}")
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        shutil.rmtree(VAR_DIR, ignore_errors=True)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
