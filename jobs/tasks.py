"""The task functions workers run, where django-tasks looks for them. Thin: each names a job by
id, and the services do the work, so the same code runs under any backend and in tests. run_job
runs a job of any kind: what each kind does is registered by its app's tasks module
(jobs.kinds). It is defined in jobs.services, beside what sends it; named here too, so that a
task queued under this name before it moved still runs."""

from __future__ import annotations

from jobs.services import run_job

__all__ = ["run_job"]
