"""How far a running job has got, and the heartbeat that says its worker is alive.

The work updates a Progress in memory (a counter per line read, a stage per step written);
a thread writes it twice a second, on PostgreSQL to the job's row on a connection of its own,
on SQLite to a file beside the database (jobs.progress_files: there the import's write lock
would hold the row until it commits). The import itself runs in one long transaction, so
nothing it writes is visible until it commits: progress has to travel outside it, and a
worker killed mid-import leaves a heartbeat that stops ageing -- which is how a lost worker
is told from a slow one (Job.stalled).

With CLAIMDESK_TASKS=immediate the job runs inside the request that asked for it: nobody can
poll it, and no thread is started.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator

from django.db import DatabaseError, connection
from django.utils import timezone

from jobs import progress_files
from jobs.models import Job

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 0.5
# The steps import_bundle reports as it writes (annotate.imports.bundle_write.write_import),
# in order.
WRITE_STEPS = ("passages", "cases", "answers", "retrieved passages", "claims", "citations")


def first_stage(job: Job) -> str:
    """What a job does first: the stage its claim records, before the first beat."""
    return "reading" if job.is_import else "writing"


class Progress:
    def __init__(self, job: Job, *, heartbeat: bool):
        self.job = job
        self.stage = first_stage(job)
        self.lines_total = job.lines_total
        self.lines_read = 0
        self.rows_total = job.rows_total
        self.rows_written = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if heartbeat:
            self._thread = threading.Thread(
                target=self._beat, name=f"heartbeat-{job.pk}", daemon=True
            )
            self._thread.start()

    # --- What the work calls ----------------------------------------------------------------

    def count_lines(self, lines: Iterable) -> Iterator:
        """The lines, counted as the importer reads them."""
        for line in lines:
            self.lines_read += 1
            yield line
        self.stage = "checking"

    def step(self, name: str, n: int) -> None:
        """import_bundle's progress callback: ('parsed', lines) while reading, then each
        write step with the rows it wrote."""
        if name == "parsed":
            return
        self.stage = name
        self.rows_written += n

    def fields(self) -> dict:
        return {
            "stage": self.stage[:40],
            "lines_total": self.lines_total,
            "lines_read": self.lines_read,
            "rows_total": self.rows_total,
            "rows_written": self.rows_written,
        }

    def stop(self) -> None:
        """Stop the heartbeat and wait for it. Called before the work writes the job's own row
        inside its transaction: a heartbeat blocked on that row would never be joined."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    # --- The heartbeat thread -------------------------------------------------------------

    def _beat(self) -> None:
        try:
            while not self._stop.wait(HEARTBEAT_SECONDS):
                self.flush()
        finally:
            connection.close()  # this thread's own connection

    def flush(self) -> None:
        now = timezone.now()
        # On SQLite, beside the database: the import's write lock holds the row until it
        # commits (jobs.progress_files says why and how readers find it).
        if progress_files.write(
            self.job.pk, attempt=self.job.attempt, at=now, fields=self.fields()
        ):
            return
        try:
            # Only while this attempt still owns the job: a retry may have taken it over.
            Job.objects.filter(
                pk=self.job.pk, attempt=self.job.attempt, status=Job.Status.RUNNING
            ).update(heartbeat_at=now, **self.fields())
        except DatabaseError:
            # An SQLite database whose folder cannot take the file: the import holds the one
            # write lock, and the next beat tries again. PostgreSQL gets here when its
            # connection was dropped: the next beat opens a new one (this thread's own).
            logger.debug("heartbeat of job %s not written", self.job.pk, exc_info=True)
            connection.close_if_unusable_or_obsolete()
