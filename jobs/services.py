"""Background jobs, the worker's side: running a job, finishing it, failing it, and taking up
again a job whose worker stopped.

A job is claimed under a row lock (so a task delivered twice runs once), its work -- what
its kind registered (jobs.kinds) -- runs in ONE transaction together with the row's final
update, and a worker killed at any point leaves either everything or nothing -- and a job
whose heartbeat has stopped, which the next live worker takes up again (resume_stalled) a
few times before it fails it; a person can retry a failed one (jobs.accept). Files an attempt
leaves unfinished go when it fails or is superseded. The request's side (accepting an upload,
queueing, retrying) is jobs.accept; the task the worker runs is run_job, below.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass

from django.conf import settings
from django.core.files.storage import storages
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.utils import timezone

from jobs import framework, kinds
from jobs.framework import task
from jobs.kinds import Refused
from jobs.models import Job
from jobs.progress import Progress, first_stage
from jobs.signals import job_finished

logger = logging.getLogger(__name__)


class Superseded(Exception):
    """This attempt no longer owns its job (a retry took it over): its work is rolled back."""


def storage():
    return storages["jobs"]


# Where jobs write their outputs, in the "jobs" storage (uploads are in uploads/): each file's
# name holds its job's id (discard_outputs, manage.py prune_jobs).
OUTPUTS = "exports"


@task
def run_job(job_id: str) -> None:
    """The task a worker runs for any job (jobs.tasks names it for django-tasks). Defined
    here, beside what sends it (enqueue), so that queueing a job again from the worker's side
    (resume_stalled, a run the database broke off) needs no import back from the tasks
    module."""
    run(job_id)


# --- Queueing (the request's side calls these through jobs.accept) --------------------------


def enqueue(job: Job, *, locked: bool = False) -> None:
    """Send the job's task. Raises BackendUnavailable when the task backend cannot take it,
    leaving no job waiting for a task that was never sent."""

    def send() -> None:
        result = framework.send(run_job, str(job.pk))
        Job.objects.filter(pk=job.pk, task_id="").update(task_id=result.id)

    def send_or_forget() -> None:
        try:
            send()
        except framework.BackendUnavailable:
            # The row committed, its task did not leave: delete it, or it would wait in the
            # queue for nothing (its upload goes with it: start_import). Until now no worker
            # could have seen it, and a page that did sees it gone.
            Job.objects.filter(pk=job.pk, status=Job.Status.QUEUED, task_id="").delete()
            raise

    # The database backend's task row commits with the job's; the immediate backend runs now.
    # Redis is not part of the transaction: a new job's task is sent once the job is committed,
    # or a fast worker would look for a job that is not there yet. A job `locked` by the
    # caller (a retry) can be sent before its commit: a worker that takes the task waits for
    # the lock, and then finds it queued; should Redis refuse, the retry rolls back.
    if framework.enqueues_in_transaction() or locked:
        send()
    else:
        transaction.on_commit(send_or_forget)


def queue_again(job: Job) -> None:
    """Queue `job`, locked by the caller, as it was asked: nothing of a run before is kept."""
    job.status = Job.Status.QUEUED
    job.errors, job.failure, job.result = [], "", {}
    job.stage, job.lines_read, job.rows_written = "", 0, 0
    job.finished_at = None
    job.save()
    enqueue(job, locked=True)


def resume_stalled() -> list[Job]:
    """Take up again every job whose worker stopped (no heartbeat for
    CLAIMDESK_JOB_STALE_SECONDS): queued once more, for the next live worker -- or, once it
    has been run CLAIMDESK_JOB_MAX_ATTEMPTS times since a person asked, failed with the
    reason. Each is changed under its row lock, so of two workers looking at once only one
    takes it, and the attempt that lost it can no longer finish it. Called by every worker
    now and then (manage.py worker); returns the jobs it changed. A task backend that cannot
    take the task (BackendUnavailable) leaves the job as it was, for the next look."""
    changed = []
    for pk in list(Job.objects.stalled().values_list("pk", flat=True)):
        with transaction.atomic():
            job = Job.objects.select_for_update(skip_locked=True).filter(pk=pk).first()
            if job is None or not job.stalled:
                continue  # another worker, or a person's Retry, took it meanwhile
            discard_outputs(job)
            if job.attempts >= settings.CLAIMDESK_JOB_MAX_ATTEMPTS:
                job.status = Job.Status.FAILED
                job.failure = (
                    f"The worker running this job stopped {job.attempts} times; it was "
                    "killed, ran out of memory or lost its machine each time before it "
                    f"finished{', and nothing of the import was written' if job.is_import else ''}"
                    ". Retry it if the workers were restarted for another reason; if it stops "
                    "again, tell your administrator (the job may need more memory than a "
                    "worker has)."
                )
                job.finished_at = timezone.now()
                job.save()
                logger.warning("job %s failed: its worker stopped %s times", pk, job.attempts)
            else:
                queue_again(job)
                logger.warning(
                    "job %s resumed: its worker (%s) stopped during run %s of %s",
                    pk,
                    job.worker,
                    job.attempts,
                    settings.CLAIMDESK_JOB_MAX_ATTEMPTS,
                )
        changed.append(job)
    return changed


def resend_lost() -> list[Job]:
    """Send again the task of every queued job whose task the backend no longer holds (not
    waiting, not running): with RQ, a task a worker took from Redis and then lost -- its
    process killed, or Redis gone, before the job started -- left the job queued for nobody
    (the chaos soak saw one after a worker kill and a Redis restart 16 s apart). The
    database backend's task commits with its job and is never lost so. Each job is changed
    under its row lock; a task delivered twice runs once. Called beside resume_stalled."""
    if framework.enqueues_in_transaction():
        return []
    sent = []
    for pk, task_id in (
        Job.objects.filter(status=Job.Status.QUEUED)
        .exclude(task_id="")
        .values_list("pk", "task_id")
    ):
        if framework.task_alive(run_job, task_id):
            continue
        with transaction.atomic():
            job = (
                Job.objects.select_for_update(skip_locked=True)
                .filter(pk=pk, status=Job.Status.QUEUED, task_id=task_id)
                .first()
            )
            if job is None:
                continue  # started, retried or resent meanwhile
            job.task_id = ""
            job.save(update_fields=["task_id"])
            enqueue(job, locked=True)
            logger.warning(
                "job %s: its task %s was lost by the task backend; sent again", pk, task_id
            )
        sent.append(job)
    return sent


def discard_outputs(job: Job, *, keep: str = "") -> None:
    """Remove what attempts of `job` wrote under exports/ and no longer need: a file an attempt
    was killed in the middle of, or one a superseded attempt finished -- every file named
    after the job but `keep` (the job's own output, once it has one). Called where no attempt
    of the job is running: when it fails, when it is queued again, once its output is
    committed."""
    store = storage()
    try:
        names = store.listdir(OUTPUTS)[1]
    except FileNotFoundError:
        return
    for name in names:
        path = f"{OUTPUTS}/{name}"
        if str(job.pk) in name and path != keep:
            store.delete(path)
            logger.warning(
                "job %s: %s removed, written by an attempt that did not end it", job.pk, path
            )


# --- Running it (the worker's side) ----------------------------------------------------------


def run(job_id: str) -> None:
    """Run a queued job to its end. Called by the task; a job that is not waiting (already
    run, taken by another worker, or gone) is left as it is."""
    job = _claim(job_id)
    if job is None:
        return
    in_process = framework.runs_in_process()
    progress = Progress(job, heartbeat=not in_process)
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
        _reconnect_if_lost()
        # A worker's job, that is: one run in a request (immediate) ends with the request.
        if _connection_lost(exc) and not in_process and _queued_again(job, exc):
            return
        # The row first, then the log, so that they agree: an error after the job's end was
        # committed (in an after-commit step) does not make a done job a failed one.
        ended = _fail(
            job,
            failure=f"The worker hit an error and stopped ({type(exc).__name__}: "
            f"{str(exc)[:300]}). Nothing was written; it is logged. Retry, and if it fails "
            "again tell your administrator.",
            drop_file=False,
        )
        if ended:
            logger.exception("job %s failed", job.pk)
        else:
            logger.warning(
                "job %s: an error after its run ended (it stands as recorded: %s)",
                job.pk,
                Job.objects.filter(pk=job.pk).values_list("status", flat=True).first(),
                exc_info=True,
            )
    finally:
        progress.stop()


def _connection_lost(exc: Exception) -> bool:
    """What a database says when it went away under a job (terminated, restarted, failed over)
    or gave up on it for the moment (a serialization failure, a deadlock): nothing of the run
    was written, and a new run may well succeed. Django's error, or the driver's own where the
    work used the driver directly (annotate.common.bulk's COPY)."""
    driver = connection.Database
    return isinstance(
        exc, (OperationalError, InterfaceError, driver.OperationalError, driver.InterfaceError)
    )


def _queued_again(job: Job, exc: Exception) -> bool:
    """Queue a job whose run the database broke off, as a worker that stopped would be
    (resume_stalled), if it has runs left; whether it did. Should the database (or the task
    backend) still refuse, the job stays running without a heartbeat, for the next live
    worker to take up once it is stale."""
    try:
        with transaction.atomic():
            current = (
                Job.objects.select_for_update()
                .filter(pk=job.pk, attempt=job.attempt, status=Job.Status.RUNNING)
                .first()
            )
            if current is None or current.attempts >= settings.CLAIMDESK_JOB_MAX_ATTEMPTS:
                return False
            queue_again(current)
    except (DatabaseError, InterfaceError, framework.BackendUnavailable):
        logger.warning(
            "job %s: the database broke off run %s (%s) and it cannot be queued again now; "
            "the next live worker takes it up once its heartbeat is stale",
            job.pk,
            job.attempts,
            exc,
            exc_info=True,
        )
        return True
    logger.warning(
        "job %s: the database broke off run %s of %s (%s: %s); queued again",
        job.pk,
        job.attempts,
        settings.CLAIMDESK_JOB_MAX_ATTEMPTS,
        type(exc).__name__,
        str(exc).strip()[:300],
    )
    return True


def _reconnect_if_lost() -> None:
    """Outside a transaction, drop a connection the database no longer answers on (it was
    terminated, the server restarted): the next query opens a new one. Inside one (a job run
    in a request, CLAIMDESK_TASKS=immediate) the request's own handling decides."""
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()


def _claim(job_id: str) -> Job | None:
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.status != Job.Status.QUEUED:
            return None
        now = timezone.now()
        job.status = Job.Status.RUNNING
        job.attempt += 1
        job.attempts += 1
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
    # Files of attempts before this one (killed halfway, or superseded) go once it commits.
    keep = fields.get("output", "")
    transaction.on_commit(lambda: _discard_quietly(job, keep=keep))
    job_finished.send(sender=Job, job_id=job.pk)


def _discard_quietly(job: Job, *, keep: str) -> None:
    try:
        discard_outputs(job, keep=keep)
    except OSError:
        logger.warning("job %s: files of earlier attempts not removed", job.pk, exc_info=True)


def _fail(
    job: Job,
    *,
    failure: str,
    errors=(),  # objects with line, message and unit (as annotate.imports.lines.BundleError)
    result: dict | None = None,
    drop_file: bool,
) -> bool:
    """End the job as failed, if this attempt is still running it; whether it did."""
    fields = {
        "status": Job.Status.FAILED,
        "failure": failure,
        "errors": [[e.line, e.message, e.unit] for e in errors],
        "result": result or {},
        "finished_at": timezone.now(),
    }
    if drop_file and job.file:
        fields["file"] = ""
    # Only the current attempt ends the job, and only while it runs: a superseded one (its
    # worker thought lost and retried) changes nothing, and above all leaves the file the
    # retry is reading; an error after the job's end committed leaves that end as it is.
    ended = Job.objects.filter(pk=job.pk, attempt=job.attempt, status=Job.Status.RUNNING).update(
        **fields
    )
    if ended:
        job_finished.send(sender=Job, job_id=job.pk)
        if drop_file and job.file:
            storage().delete(job.file)
        _discard_quietly(job, keep="")
    return bool(ended)


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
