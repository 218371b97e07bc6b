"""Run a worker for the configured task backend: what `make run`, docker-compose's `worker`
service and a team's process manager start beside the app servers."""

from __future__ import annotations

import logging
import os
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import connections
from django.utils.crypto import get_random_string
from django_tasks_db.management.commands.db_worker import Command as DbWorker
from django_tasks_db.management.commands.db_worker import Worker

logger = logging.getLogger("django_tasks_db")


def resident_mb() -> float | None:
    """This process's resident memory now (VmRSS), where /proc tells it (Linux)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class Command(BaseCommand):
    help = (
        "Take background jobs (imports, exports, reports) from the task backend set by "
        "CLAIMDESK_TASKS: db_worker for 'database', rqworker for 'rq'."
    )
    from_command_line = False

    def add_arguments(self, parser):
        parser.add_argument(
            "--batch", action="store_true", help="run what is waiting, then exit (database only)"
        )
        parser.add_argument("--interval", type=float, default=0.5, help="seconds between polls")

    def run_from_argv(self, argv):
        self.from_command_line = True  # only then may the process replace itself
        super().run_from_argv(argv)

    def handle(self, *args, batch, interval, **options):
        backend = settings.CLAIMDESK_TASKS
        verbosity = options["verbosity"]
        if backend == "immediate":
            self.stdout.write(
                "CLAIMDESK_TASKS=immediate: jobs run inside the requests that ask for them; "
                "no worker is needed."
            )
            return
        if backend == "rq":
            extra = {"burst": True} if batch else {}
            # django-tasks-rq's Job runs a Task; RQ's own would try to call it as a function.
            # RQ runs each job in a forked process: its memory goes with it.
            # with_scheduler: RQ's scheduler moves a task deferred with run_after (a webhook's
            # retry) to the queue when it is due; without it such a task never runs.
            call_command(
                "rqworker",
                "default",
                job_class="django_tasks_rq.Job",
                verbosity=verbosity,
                with_scheduler=True,
                **extra,
            )
            return
        DbWorker(stdout=self.stdout, stderr=self.stderr).configure_logging(verbosity)
        worker = GivesMemoryBack(
            queue_names=["default"],
            interval=interval,
            batch=batch,
            backend_name="default",
            startup_delay=True,
            max_tasks=None,
            worker_id=get_random_string(32),
            excluded_queue_names=[],
            memory_limit_mb=settings.CLAIMDESK_WORKER_MAX_MEMORY_MB,
        )
        worker.configure_signals()
        worker.run()
        if worker.gives_memory_back and self.from_command_line:
            self.stdout.flush()
            sys.stdout.flush()
            connections.close_all()
            # The same command line in a fresh interpreter, in this process (same pid: a
            # process manager, docker or `make run` sees no exit).
            os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])


class GivesMemoryBack(Worker):
    """django-tasks-db's worker, which stops taking jobs after one that left this process
    above CLAIMDESK_WORKER_MAX_MEMORY_MB, so that the command can start afresh.

    A database worker runs every job in its one long-lived process, and memory a big job
    took is not given back to the system when it ends: computing a 10,000-answer project's
    agreement and evaluation took a worker from 79 MB to 544 MB, and it kept 313 MB while it
    waited for the next job (glibc's malloc_trim gives back 40 MB of it; bounding the
    reports' own peaks since brought that to 200-300 MB). RQ does not have this: it forks a
    process per job."""

    def __init__(self, *, memory_limit_mb: int, **kwargs):
        super().__init__(**kwargs)
        self.memory_limit_mb = memory_limit_mb
        self.gives_memory_back = False

    def run_task(self, db_task_result) -> None:
        super().run_task(db_task_result)
        used = resident_mb()
        if self.memory_limit_mb and used is not None and used > self.memory_limit_mb:
            logger.info(
                "Worker %s holds %.0f MB after that job (limit %d MB): starting afresh.",
                self.worker_id,
                used,
                self.memory_limit_mb,
            )
            self.gives_memory_back = True
            self.max_tasks = self._run_tasks  # the loop ends here, as --max-tasks ends it
