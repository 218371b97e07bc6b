"""The annotate app's tasks, run by the worker (jobs.framework)."""

from __future__ import annotations

from annotate.common import computed
from jobs.framework import task


@task
def refresh_report(project_id: int, kind: str, key: str) -> None:
    """Compute a stored report at the project's revision now (annotate.common.computed)."""
    computed.refresh(project_id=project_id, kind=kind, key=key)


computed.register_worker_task(refresh_report)
