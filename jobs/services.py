"""Background jobs, the worker's side: running a job, finishing it, failing it.

A job is claimed under a row lock (so a task delivered twice runs once), its work -- what
its kind registered (jobs.kinds) -- runs in ONE transaction together with the row's final
update, and a worker killed at any point leaves either everything or nothing -- and a job
whose heartbeat has stopped, which a person can retry. The request's side (accepting an
upload, queueing, retrying) is jobs.accept; the task the worker runs is jobs.tasks.run_job.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass

from django.core.files.storage import storages
from django.db import transaction
from django.utils import timezone

from jobs import framework, kinds
from jobs.kinds import Refused
from jobs.models import Job
from jobs.progress import Progress, first_stage

logger = logging.getLogger(__name__)


class Superseded(Exception):
    """This attempt no longer owns its job (a retry took it over): its work is rolled back."""


def storage():
    return storages["jobs"]


# --- Running it (the worker's side) ----------------------------------------------------------


def run(job_id: str) -> None:
    """Run a queued job to its end. Called by the task; a job that is not waiting (already
    run, taken by another worker, or gone) is left as it is."""
    job = _claim(job_id)
    if job is None:
        return
    progress = Progress(job, heartbeat=not framework.runs_in_process())
    try:
        kinds.get(job.kind).run(job, progress)
    except Refused as exc:
        progress.stop()
        _fail(
            job,
            failure=exc.failure,
            errors=exc.errors,
            result=exc.result,
            drop_file=exc.drop_file,
        )
    except Superseded:
        progress.stop()
        logger.warning("job %s attempt %s was superseded by a retry", job.pk, job.attempt)
    except Exception as exc:
        progress.stop()
        logger.exception("job %s failed", job.pk)
        _fail(
            job,
            failure=f"The worker hit an error and stopped ({type(exc).__name__}: "
            f"{str(exc)[:300]}). Nothing was written; it is logged. Retry, and if it fails "
            "again tell your administrator.",
            drop_file=False,
        )
    finally:
        progress.stop()


def _claim(job_id: str) -> Job | None:
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.status != Job.Status.QUEUED:
            return None
        now = timezone.now()
        job.status = Job.Status.RUNNING
        job.attempt += 1
        job.started_at = job.heartbeat_at = now
        # Until the first beat: the page read "writing: 0 rows written ()" of a job just taken.
        job.stage = first_stage(job)
        job.worker = f"{socket.gethostname()}:{os.getpid()}"[:120]
        job.save()
    return job


def finish(job: Job, progress: Progress, *, result: dict, **fields) -> None:
    """Mark the job done. Called by the work INSIDE its transaction, so the data and the
    job's 'done' commit together; raises Superseded when a retry owns the job now."""
    progress.stop()
    updated = Job.objects.filter(pk=job.pk, attempt=job.attempt, status=Job.Status.RUNNING).update(
        status=Job.Status.SUCCEEDED,
        result=result,
        finished_at=timezone.now(),
        heartbeat_at=timezone.now(),
        **{**progress.fields(), "stage": "done"},
        **fields,
    )
    if not updated:
        raise Superseded()


def _fail(
    job: Job,
    *,
    failure: str,
    errors=(),  # objects with line, message and unit (as annotate.imports.lines.BundleError)
    result: dict | None = None,
    drop_file: bool,
) -> None:
    fields = {
        "status": Job.Status.FAILED,
        "failure": failure,
        "errors": [[e.line, e.message, e.unit] for e in errors],
        "result": result or {},
        "finished_at": timezone.now(),
    }
    if drop_file and job.file:
        fields["file"] = ""
    # Only the current attempt ends the job: a superseded one (its worker thought lost and
    # retried) changes nothing, and above all leaves the file the retry is reading.
    ended = Job.objects.filter(pk=job.pk, attempt=job.attempt).update(**fields)
    if ended and drop_file and job.file:
        storage().delete(job.file)


# --- What the work of every kind uses -----------------------------------------------------


@dataclass
class Opened:
    """The stored upload, opened and counted line by line."""

    job: Job
    progress: Progress

    def __enter__(self):
        self._stream = storage().open(self.job.file, "rb")
        return self.progress.count_lines(self._stream)

    def __exit__(self, *exc) -> None:
        self._stream.close()


def finish_import(job: Job, progress: Progress, result: dict, project) -> None:
    """finish() for an import, which leaves `project` (created or written to) on the job."""
    name = job.file
    finish(job, progress, result=result, project=project, file="")
    # The upload is no longer needed once the import is committed; should deleting it fail,
    # the import still stands (a stray file is harmless, a lost import is not).
    transaction.on_commit(lambda: storage().delete(name))
