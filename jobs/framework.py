"""The one place claimdesk imports the Tasks API.

Django 6 ships it as `django.tasks`; on Django 5.2 the django-tasks backport provides the same
names (and django-tasks-db / django-tasks-rq the backends, chosen in config/settings.py by
CLAIMDESK_TASKS). Moving to Django 6 is changing the imports below to `django.tasks`.
"""

from django_tasks import TaskResultStatus, default_task_backend, task, task_backends
from django_tasks.backends.immediate import ImmediateBackend
from django_tasks.exceptions import TaskResultDoesNotExist

try:
    from redis.exceptions import RedisError
except ImportError:  # redis comes with django-rq: without it there is no RQ backend
    RedisError = None

__all__ = [
    "BackendUnavailable",
    "TaskResultStatus",
    "default_task_backend",
    "enqueues_in_transaction",
    "runs_in_process",
    "send",
    "task",
    "task_backends",
]


class BackendUnavailable(Exception):
    """The task backend cannot take a task now (Redis down or unreachable, for RQ): the request
    that asked answers 503 and may be made again (config.errors)."""


def _connection_errors() -> tuple[type[BaseException], ...]:
    """What a backend raises when it cannot be reached. The database backend's failures are
    the database's own (django.db.OperationalError), answered 503 as any other query's."""
    if RedisError is None:
        return (ConnectionError,)
    return (RedisError, ConnectionError)


def send(task, *args):
    """``task.enqueue(*args)``, the one way claimdesk enqueues: a backend that cannot be
    reached raises BackendUnavailable, whatever its own exception."""
    try:
        return task.enqueue(*args)
    except _connection_errors() as exc:
        raise BackendUnavailable(f"the task backend does not answer: {exc}") from exc


def task_alive(task, task_id: str) -> bool:
    """Whether the backend still holds the task `task_id` of `task`, waiting or running. A
    backend that cannot be reached raises BackendUnavailable: nobody can tell then."""
    try:
        result = task.get_result(task_id)
    except TaskResultDoesNotExist:
        return False
    except _connection_errors() as exc:
        raise BackendUnavailable(f"the task backend does not answer: {exc}") from exc
    return result.status in (TaskResultStatus.READY, TaskResultStatus.RUNNING)


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
