"""The task functions workers run. Thin: each names a job by id, and the
services do the work, so the same code runs under any backend and in tests."""

from __future__ import annotations

from jobs.framework import task


@task
def run_job(job_id: str) -> None:
    from jobs import services

    services.run(job_id)
