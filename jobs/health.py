"""Is this deployment healthy? The database, the task backend, and the jobs waiting on them.

`quick()` is /healthz's answer for load balancers: one `SELECT 1`, nothing else. `full()` is
`manage.py healthcheck`'s: it also asks the task backend (Redis for RQ) and counts the jobs
that are waiting, running, lost or failed.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, connection
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from jobs.models import QUEUED_TOO_LONG, Job


def database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except DatabaseError:
        return False


def quick() -> dict:
    ok = database_ok()
    return {"status": "ok" if ok else "unhealthy", "database": "ok" if ok else "unreachable"}


def backend_problem() -> str | None:
    """Why the task backend cannot take tasks, or None."""
    if settings.CLAIMDESK_TASKS == "rq":
        try:
            # late import: heavy library (memory) -- rq, only where it is the task backend
            import django_rq

            django_rq.get_connection("default").ping()
        except Exception as exc:  # redis raises its own ConnectionError, among others
            return f"Redis at {settings.REDIS_URL} does not answer: {exc}"
    elif settings.CLAIMDESK_TASKS == "database":
        try:
            DBTaskResult.objects.exists()
        except DatabaseError as exc:
            return f"the task table cannot be read: {exc}"
    return None


def liveness() -> dict:
    """The database and the task backend: what a worker process needs to take jobs."""
    if not database_ok():
        return {"database": "unreachable", "problems": ["the database does not answer"]}
    problem = backend_problem()
    return {
        "database": "ok",
        "tasks": settings.CLAIMDESK_TASKS,
        "task_backend": "ok" if problem is None else "unreachable",
        "problems": [problem] if problem else [],
    }


def full() -> dict:
    """Everything `manage.py healthcheck` prints, with `problems` saying what is wrong."""
    problems: list[str] = []
    report: dict = {"database": "ok", "tasks": settings.CLAIMDESK_TASKS}
    if not database_ok():
        report["database"] = "unreachable"
        problems.append("the database does not answer")
        report["problems"] = problems
        return report
    problem = backend_problem()
    report["task_backend"] = "ok" if problem is None else "unreachable"
    if problem:
        problems.append(problem)
    now = timezone.now()
    queued = Job.objects.filter(status=Job.Status.QUEUED)
    oldest = queued.order_by("created_at").values_list("created_at", flat=True).first()
    report["jobs"] = {
        "queued": queued.count(),
        "oldest_queued_seconds": round((now - oldest).total_seconds()) if oldest else None,
        "running": Job.objects.filter(status=Job.Status.RUNNING).count(),
        "stalled": Job.objects.stalled().count(),
        "failed_last_day": Job.objects.filter(
            status=Job.Status.FAILED, finished_at__gte=now - timedelta(days=1)
        ).count(),
    }
    if settings.CLAIMDESK_TASKS != "immediate" and oldest and now - oldest > QUEUED_TOO_LONG:
        problems.append(
            f"a job has waited {report['jobs']['oldest_queued_seconds']} s: is a worker "
            "running (manage.py worker)?"
        )
    if report["jobs"]["stalled"]:
        problems.append(
            f"{report['jobs']['stalled']} job(s) lost their worker (no heartbeat for "
            f"{settings.CLAIMDESK_JOB_STALE_SECONDS} s): a running worker takes them up again "
            "(is one running?), or retry them from their pages"
        )
    report["problems"] = problems
    return report
