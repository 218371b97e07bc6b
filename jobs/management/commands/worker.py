"""Run a worker for the configured task backend: what `make run`, docker-compose's `worker`
service and a team's process manager start beside the app servers.

A worker outlives its dependencies: a database or Redis error never ends it. It logs, waits
(0.5 s, then twice as long each time up to 30 s), opens new connections and goes on. Beside
the work it looks now and then for jobs whose worker stopped (no heartbeat for
CLAIMDESK_JOB_STALE_SECONDS) and takes them up again (jobs.services.resume_stalled).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import Error as DatabaseFailure
from django.db import connection, connections
from django.utils.crypto import get_random_string
from django_rq.workers import get_worker
from django_tasks_db.management.commands.db_worker import Command as DbWorker
from django_tasks_db.management.commands.db_worker import Worker
from redis.exceptions import RedisError
from rq import Worker as RQWorker
from rq.logutils import setup_loghandlers

from jobs import framework, services

logger = logging.getLogger("django_tasks_db")
# What the worker says about its dependencies and the jobs it takes up again: warnings, seen
# whatever the verbosity (django_tasks_db's own logger is silenced by -v 0).
health_log = logging.getLogger("jobs.worker")

BACKOFF_FIRST = 0.5  # seconds before the first reconnection
BACKOFF_MAX = 30.0
# How often an RQ worker without RQ's scheduler tries to take it (RQ's maintenance interval,
# 600 s by default). Only one scheduler runs per queue, under a lock in Redis that its holder
# refreshes; a worker killed with -9 leaves the lock for 61 s, and the worker restarted in its
# place, finding it taken, would run no deferred task (a webhook's retry) for ten minutes.
SCHEDULER_RETRY_SECONDS = 15


def backoff(failures: int) -> float:
    """How long to wait after `failures` failures in a row: bounded exponential."""
    return min(BACKOFF_MAX, BACKOFF_FIRST * 2 ** min(failures, 16))


def close_connections() -> None:
    """Drop this thread's database connections, whatever state they are in."""
    for conn in connections.all(initialized_only=True):
        try:
            conn.close()
        except DatabaseFailure:
            conn.connection = None  # the server is gone: forget it, the next query reconnects


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


class StopAware(RQWorker):
    """RQ's worker that remembers being asked to stop (SIGTERM, SIGINT, RQ's shutdown command,
    which sends SIGINT): RQ installs request_stop as its handler, and says so nowhere else but
    in its private state."""

    asked_to_stop = False

    def request_stop(self, signum, frame):
        self.asked_to_stop = True
        super().request_stop(signum, frame)


class Command(BaseCommand):
    help = (
        "Take background jobs (imports, exports, reports) from the task backend set by "
        "CLAIMDESK_TASKS: db_worker for 'database', rqworker for 'rq'. Database and Redis "
        "errors never end it: it reconnects and goes on."
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
        resumer = None if batch else Resumer()
        if resumer is not None:
            resumer.start()
        afresh = False
        try:
            if backend == "rq":
                self.run_rq(batch=batch, verbosity=verbosity)
            else:
                afresh = self.run_database(batch=batch, interval=interval, verbosity=verbosity)
        finally:
            if resumer is not None:
                resumer.stop()  # and its connection closed: nothing of it outlives the exec
        if afresh and self.from_command_line:
            self.stdout.flush()
            sys.stdout.flush()
            connections.close_all()
            # The same command line in a fresh interpreter, in this process (same pid: a
            # process manager, docker or `make run` sees no exit).
            os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])

    def run_rq(self, *, batch: bool, verbosity: int) -> None:
        """RQ's worker, made again whenever it stops without being asked to: RQ retries a
        lost Redis while it waits for a job, but quits on other Redis errors (a timeout, one
        while it records a job, its registration lost with a restarted Redis), and does not
        start at all while Redis is down."""
        level = "DEBUG" if verbosity >= 2 else "WARNING" if verbosity == 0 else "INFO"
        setup_loghandlers(level)
        failures = 0
        while True:
            worker = None
            began = time.monotonic()
            try:
                # django-tasks-rq's Job runs a Task; RQ's own would try to call it as a
                # function. RQ runs each job in a forked process: its memory goes with it.
                worker = get_worker(
                    "default",
                    job_class="django_tasks_rq.Job",
                    worker_class=StopAware,
                    maintenance_interval=SCHEDULER_RETRY_SECONDS,
                    # RQ looks at its maintenance between waits for a job, each as long as
                    # this less 15 s (405 s by default): this makes them SCHEDULER_RETRY_SECONDS.
                    worker_ttl=SCHEDULER_RETRY_SECONDS + 15,
                )
                if failures:
                    worker.connection.ping()  # Redis down still: wait longer
                    health_log.warning("RQ worker: Redis answers again; reconnected")
                close_connections()  # RQ forks: no connection shared with a job's process
                # with_scheduler: RQ's scheduler moves a task deferred with run_after (a
                # webhook's retry) to the queue when it is due; without it none ever runs.
                worker.work(burst=batch, logging_level=level, with_scheduler=True)
                problem = "its worker stopped"
            except (RedisError, OSError) as exc:  # redis's ConnectionError is an OSError too
                problem = f"{type(exc).__name__}: {exc}"
            asked_to_stop = worker is not None and worker.asked_to_stop
            if asked_to_stop or (batch and problem == "its worker stopped"):
                return
            # Between RQ's workers a stop request ends the process at once.
            signal.signal(signal.SIGTERM, _exit_now)
            signal.signal(signal.SIGINT, _exit_now)
            if time.monotonic() - began > BACKOFF_MAX:
                failures = 0  # it worked for a while: this is a new outage
            delay = backoff(failures)
            failures += 1
            health_log.warning(
                "RQ worker: Redis at %s failed (%s); reconnecting in %.1f s",
                settings.REDIS_URL,
                problem,
                delay,
            )
            time.sleep(delay)

    def run_database(self, *, batch: bool, interval: float, verbosity: int) -> bool:
        """django-tasks-db's worker, until it stops; whether it stopped to start afresh."""
        DbWorker(stdout=self.stdout, stderr=self.stderr).configure_logging(verbosity)
        worker = Enduring(
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
        return worker.gives_memory_back


def _exit_now(signum, frame) -> None:
    sys.exit(0)


class Enduring(Worker):
    """django-tasks-db's worker, which outlives the database: its loop, ended by a database
    error, starts again on new connections after a wait. It also stops taking jobs after one
    that left this process above CLAIMDESK_WORKER_MAX_MEMORY_MB, so that the command can
    start afresh.

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

    def run(self) -> None:
        failures = 0
        while self.running:
            began = time.monotonic()
            try:
                super().run()
                return
            except DatabaseFailure as exc:
                # The job's own row says how the job ended (jobs.services.run writes it
                # before it logs); what failed here is the task table's bookkeeping or the
                # poll. A job left running without a heartbeat is taken up again later.
                if time.monotonic() - began > BACKOFF_MAX:
                    failures = 0
                delay = backoff(failures)
                failures += 1
                health_log.warning(
                    "Worker %s: the database failed (%s: %s); reconnecting in %.1f s",
                    self.worker_id,
                    type(exc).__name__,
                    str(exc).strip()[:300],
                    delay,
                )
                close_connections()
                self.startup_delay = False
                time.sleep(delay)

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


class Resumer(threading.Thread):
    """Looks, a few times per staleness window, for jobs whose worker stopped, and queues
    them again (jobs.services.resume_stalled) -- on its own database connection, beside the
    work. Every worker has one: whichever looks first takes a job up, under its row lock."""

    def __init__(self):
        super().__init__(name="resume-stalled", daemon=True)
        self._stopped = threading.Event()
        # Often enough that a lost job is taken up within about 1.5 windows; seldom enough
        # to cost the work in hand nothing (each look is a query of an index, and on SQLite
        # a read of the live heartbeat files of the jobs running).
        self.every = max(1.0, min(10.0, settings.CLAIMDESK_JOB_STALE_SECONDS / 2))

    def stop(self) -> None:
        self._stopped.set()
        self.join(timeout=30)  # at most one look, of a few rows

    def run(self) -> None:
        failures = 0
        wait = self.every
        try:
            while not self._stopped.wait(wait):
                try:
                    services.resume_stalled()
                    services.resend_lost()
                except (DatabaseFailure, framework.BackendUnavailable) as exc:
                    wait = backoff(failures)
                    failures += 1
                    health_log.warning(
                        "Worker: jobs whose worker stopped not looked for (%s: %s); again in "
                        "%.1f s",
                        type(exc).__name__,
                        str(exc).strip()[:300],
                        wait,
                    )
                    close_connections()
                else:
                    failures, wait = 0, self.every
        finally:
            connection.close()
