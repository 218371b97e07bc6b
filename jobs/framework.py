"""The one place claimdesk imports the Tasks API.

Django 6 ships it as `django.tasks`; on Django 5.2 the django-tasks backport provides the same
names (and django-tasks-db / django-tasks-rq the backends, chosen in config/settings.py by
CLAIMDESK_TASKS). Moving to Django 6 is changing the imports below to `django.tasks`.
"""

from django_tasks import TaskResultStatus, default_task_backend, task, task_backends
from django_tasks.backends.immediate import ImmediateBackend

__all__ = [
    "TaskResultStatus",
    "default_task_backend",
    "enqueues_in_transaction",
    "runs_in_process",
    "task",
    "task_backends",
]


def runs_in_process() -> bool:
    """Whether an enqueued task runs at once in this process (CLAIMDESK_TASKS=immediate): then
    nobody can watch it run, and a job needs no heartbeat."""
    return isinstance(task_backends["default"], ImmediateBackend)


def enqueues_in_transaction() -> bool:
    """Whether enqueueing is part of the database transaction that asks for it: the database
    backend's task row commits (or not) with the job's, and the immediate backend runs in it.
    Otherwise (RQ) a task must be sent only once the job it names is committed."""
    backend = task_backends["default"]
    return isinstance(backend, ImmediateBackend) or type(backend).__module__.startswith(
        "django_tasks_db"
    )
