"""The task functions workers run. Thin: each names a job by id, and the
services do the work, so the same code runs under any backend and in tests. run_job runs a
job of any kind: what each kind does is registered by its app's tasks module (jobs.kinds)."""

from __future__ import annotations

from jobs import services
from jobs.framework import task


@task
def run_job(job_id: str) -> None:
    services.run(job_id)
