"""Measure background jobs as a team runs them: a worker process (manage.py worker, the
database task backend) importing a 100,000-claim bundle, then writing the gold export of the
same project once two reviewers have labelled every claim, then recomputing its agreement
report. Prints each job's wall time (from queueing to done, as a lead waits for it), the time
the worker spent on it, and the worker's peak RSS (VmHWM of its own /proc/<pid>/status: the
worker process itself, not a child).

Usage: python bench/tasks.py   (BENCH_DATABASE_URL overrides the default
postgres://postgres@127.0.0.1:5432/claimdesk_tasks_bench, which is dropped and re-created)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/claimdesk_tasks_bench"
)
os.environ["CLAIMDESK_TASKS"] = "database"
VAR_DIR = Path(tempfile.mkdtemp(prefix="claimdesk-bench-tasks-"))
os.environ["CLAIMDESK_VAR_DIR"] = str(VAR_DIR)

from bench.agreement_gold import label_everything  # noqa: E402
from bench.common import ROOT, setup_bench_database  # noqa: E402
from bench.import_bundle import ANSWERS, write_bundle  # noqa: E402


def peak_rss_mb(pid: int) -> float:
    """VmHWM: the most resident memory the process has had so far."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def wait(job_id, what: str, timeout: float = 1800, stages: dict | None = None):
    """The job once it has ended; `stages` gets the time each stage was first seen."""
    from jobs.models import Job

    start = time.monotonic()
    deadline = start + timeout
    while time.monotonic() < deadline:
        job = Job.objects.get(pk=job_id)
        if stages is not None and job.stage and job.stage not in stages:
            stages[job.stage] = time.monotonic() - start
        if job.finished:
            if job.status != Job.Status.SUCCEEDED:
                raise SystemExit(f"{what} failed: {job.failure} {job.errors[:5]}")
            return job
        time.sleep(0.05)
    raise SystemExit(f"{what}: no result after {timeout:.0f} s")


def main() -> None:
    setup_bench_database()
    from django.contrib.auth import get_user_model
    from django.core.files import File
    from django.db import connection
    from django_tasks_db.models import DBTaskResult

    from annotate.common import computed
    from annotate.gold.exports import gold_size, start_gold_export
    from annotate.members.services import add_member
    from annotate.models import ComputedReport
    from annotate.projects.opening import open_labelling
    from annotate.projects.services import allow_creating_projects
    from jobs import accept, services
    from jobs.models import Job

    print(f"database: {connection.vendor}; load average at start: {os.getloadavg()}")
    lead = get_user_model().objects.create_user("bench-lead")
    allow_creating_projects(user=lead)  # the import creates the project
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "worker", "--interval", "0.1", "-v", "0"],
        cwd=ROOT,
        env={**os.environ, "DATABASE_URL": os.environ["DATABASE_URL"]},
    )
    try:
        time.sleep(3)  # the worker's start-up: Django, the apps, a first poll
        print(f"worker pid {worker.pid}: idle peak RSS {peak_rss_mb(worker.pid):.0f} MB")

        path = VAR_DIR / "bundle.jsonl"
        lines = write_bundle(path, ANSWERS)
        print(f"bundle: {lines:,} lines, {path.stat().st_size / 1e6:.1f} MB, {ANSWERS:,} answers")
        queued = time.perf_counter()
        with path.open("rb") as stream:
            job = accept.start_import(
                kind=Job.Kind.BUNDLE_IMPORT,
                user=lead,
                upload=File(stream, name="bundle.jsonl"),
                slug="bench",
                params={},
            )
        stored = time.perf_counter()
        stages: dict[str, float] = {}
        job = wait(job.pk, "the import", stages=stages)
        done = time.perf_counter()
        ran = (job.finished_at - job.started_at).total_seconds()
        print(
            "  stages first seen (s after upload): "
            + ", ".join(f"{name} {at:.1f}" for name, at in stages.items())
        )
        print(
            f"import job: {done - queued:.1f} s wall from upload to done "
            f"(storing the upload {stored - queued:.1f} s, in the worker {ran:.1f} s); "
            f"{job.result['counts']['claim']['created']:,} claims; "
            f"worker peak RSS {peak_rss_mb(worker.pid):.0f} MB"
        )

        project = job.project
        reviewers = [
            add_member(project=project, username=f"bench-{n}", role="reviewer").user
            for n in ("a", "b")
        ]
        open_labelling(project=project)
        from django.db import transaction

        with transaction.atomic():
            claims = label_everything(project, reviewers)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        rows = gold_size(project)
        print(f"labelled: {claims:,} doubly-labelled claims; gold set {rows:,} rows")

        queued = time.perf_counter()
        job = start_gold_export(project=project, user=lead, fmt="jsonl", filters={}, rows=rows)
        job = wait(job.pk, "the gold export")
        done = time.perf_counter()
        ran = (job.finished_at - job.started_at).total_seconds()
        size = services.storage().size(job.output)
        print(
            f"gold export job: {done - queued:.1f} s wall (in the worker {ran:.1f} s), "
            f"{job.result['rows']:,} rows, {size / 1e6:.0f} MB; "
            f"worker peak RSS {peak_rss_mb(worker.pid):.0f} MB"
        )

        before = DBTaskResult.objects.count()
        queued = time.perf_counter()
        first = computed.read(project, "agreement")
        assert first.pending and DBTaskResult.objects.count() == before + 1
        while not ComputedReport.objects.filter(
            project=project, kind="agreement", result__isnull=False
        ).exists():
            time.sleep(0.2)
        done = time.perf_counter()
        row = ComputedReport.objects.get(project=project, kind="agreement")
        print(
            f"agreement report task: {done - queued:.1f} s wall (computing {row.seconds:.1f} s); "
            f"page views then read it in one lookup; worker peak RSS "
            f"{peak_rss_mb(worker.pid):.0f} MB"
        )
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
