"""Background jobs: accepting work, running it in a worker, retrying it.

Accepting (the request's side): the upload is stored in the "jobs" storage, a Job row records
what was asked, and a task is enqueued naming the job. Running (the worker's side): the job
is claimed under a row lock (so a task delivered twice runs once), its work runs in ONE
transaction together with the row's final update, and a worker killed at any point leaves
either everything or nothing -- and a job whose heartbeat has stopped, which a person can
retry. Verbs with keyword-only arguments: the pages, the API, the commands and the tests call
these.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.files import File
from django.core.files.storage import storages
from django.db import connection, transaction
from django.utils import timezone

from annotate.common import collector
from annotate.common.errors import ServiceError
from annotate.imports.bundle_plan import DeletionsNotConfirmed
from annotate.imports.lines import BundleError, BundleInvalid
from annotate.models import Project
from annotate.schema import LabelSchema
from jobs import framework
from jobs.models import Job
from jobs.progress import Progress, first_stage
from jobs.signals import job_finished

logger = logging.getLogger(__name__)


class EmptyUpload(ServiceError):
    pass


class Superseded(Exception):
    """This attempt no longer owns its job (a retry took it over): its work is rolled back."""


def storage():
    return storages["jobs"]


# --- Accepting work -------------------------------------------------------------------------


def start_import(
    *,
    kind: str,
    user,
    upload,
    slug: str,
    project: Project | None = None,
    params: dict[str, Any] | None = None,
) -> Job:
    """Store `upload` (a file-like object: an UploadedFile, or a request body) and queue its
    import into `project`, or into a new project `slug` when `project` is None. Raises
    EmptyUpload for a file of blank lines only. With CLAIMDESK_TASKS=immediate the import has
    run when this returns."""
    job = Job(
        kind=kind,
        project=project,
        project_slug=project.slug if project is not None else slug,
        created_by=user,
        params=params or {},
        file_name=os.path.basename(getattr(upload, "name", "") or "upload.jsonl")[:255],
    )
    name = storage().save(f"uploads/{job.pk}.upload", _as_file(upload))
    job.file = name
    job.file_size = storage().size(name)
    job.lines_total = _count_lines(name)
    if job.lines_total == 0:
        storage().delete(name)
        raise EmptyUpload("The file is empty.")
    try:
        with transaction.atomic():
            job.save()
            _enqueue(job)
    except Exception:
        # Not queued (the task backend or the database refused): nobody will import the file.
        storage().delete(name)
        raise
    job.refresh_from_db()
    return job


def start_gold_export(
    *, project: Project, user, fmt: str, filters: dict[str, Any], rows: int
) -> Job:
    """Queue the gold set of `project` to be written to a file (`rows` is how many it will
    hold, for the progress bar). An export of the same labels with the same filters that is
    waiting, running or done is reused: the file would be byte-for-byte the same."""
    from annotate.gold.exports import gold_fingerprint

    export_id, _ = gold_fingerprint(project)
    params = {"format": fmt, "filters": filters, "export_id": export_id}
    with transaction.atomic():
        # Two leads asking in the same instant may start two identical exports: harmless, and
        # cheaper than a lock on the project's row, which every label save's checks read.
        same = (
            Job.objects.filter(project=project, kind=Job.Kind.GOLD_EXPORT, params=params)
            .exclude(status=Job.Status.FAILED)
            .order_by("-created_at")
            .first()
        )
        if same is not None and not same.stalled and not same.waited_too_long:
            return same
        job = Job.objects.create(
            kind=Job.Kind.GOLD_EXPORT,
            project=project,
            project_slug=project.slug,
            created_by=user,
            params=params,
            rows_total=rows,
        )
        _enqueue(job)
    job.refresh_from_db()
    return job


def retry_job(*, job: Job, confirm_deletions: bool = False) -> Job:
    """Queue a failed job, or one whose worker was lost, again. The attempt that lost its
    worker, should it still be alive somewhere, can no longer finish: its final update asks
    for the job to be running under its own attempt number. `confirm_deletions` confirms what
    a replace listed it would delete (the job's result.deletions). A task backend that cannot
    take the task (BackendUnavailable) leaves the job as it was."""
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job.pk)
        if not job.retryable:
            if job.status == Job.Status.FAILED:
                raise ServiceError("This job cannot be retried: upload the file again.")
            if job.status == Job.Status.SUCCEEDED:
                raise ServiceError("This job has finished: there is nothing to retry.")
            raise ServiceError("This job is still running: there is nothing to retry.")
        if confirm_deletions:
            # What the lead was shown, and only that: if the replace would delete more by the
            # time it runs, it stops again and lists it.
            shown = (job.result or {}).get("deletions") or True
            job.params = {**job.params, "confirm_deletions": shown}
        if job.waited_too_long:
            job.created_at = timezone.now()  # sent again: its wait starts over
        job.status = Job.Status.QUEUED
        job.errors, job.failure, job.result = [], "", {}
        job.stage, job.lines_read, job.rows_written = "", 0, 0
        job.finished_at = None
        job.save()
        _enqueue(job, locked=True)
    job.refresh_from_db()
    return job


def _enqueue(job: Job, *, locked: bool = False) -> None:
    """Send the job's task. Raises BackendUnavailable when the task backend cannot take it,
    leaving no job waiting for a task that was never sent."""
    from jobs.tasks import run_job

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


def _as_file(upload) -> File:
    if isinstance(upload, File):
        return upload
    return File(upload, name="upload")


def _count_lines(name: str) -> int:
    """Lines that are not blank (0: an empty file), for the progress bar's total."""
    lines = 0
    with storage().open(name, "rb") as stream:
        for line in stream:
            if line.strip():
                lines += 1
    return lines


# --- Running it (the worker's side) ----------------------------------------------------------


def run(job_id: str) -> None:
    """Run a queued job to its end. Called by the task; a job that is not waiting (already
    run, taken by another worker, or gone) is left as it is."""
    job = _claim(job_id)
    if job is None:
        return
    progress = Progress(job, heartbeat=not framework.runs_in_process())
    try:
        WORK[job.kind](job, progress)
    except BundleInvalid as exc:
        progress.stop()
        _fail(
            job,
            failure=f"The file was not imported: {len(exc.errors)} problem(s) found. "
            "Nothing was written.",
            errors=exc.errors,
            drop_file=True,
        )
    except DeletionsNotConfirmed as exc:
        # Kept, with what it would delete: confirming queues the same file again.
        progress.stop()
        _fail(
            job,
            failure="This replace deletes data. Nothing was written: confirm to import it.",
            result={"deletions": exc.deletions.lines()},
            drop_file=False,
        )
    except ServiceError as exc:
        progress.stop()
        _fail(job, failure=str(exc), drop_file=True)
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
    job_finished.send(sender=Job, job_id=job.pk)


def _fail(
    job: Job,
    *,
    failure: str,
    errors: list[BundleError] = (),
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
    if ended:
        job_finished.send(sender=Job, job_id=job.pk)
    if ended and drop_file and job.file:
        storage().delete(job.file)


def bundle_errors(job: Job) -> BundleInvalid | None:
    """A refused file's problems, as the upload pages show them."""
    if not job.errors:
        return None
    return BundleInvalid([BundleError(line, message, unit) for line, message, unit in job.errors])


# --- The work of each kind ---------------------------------------------------------------------


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


def _import_result(result) -> dict:
    return {
        "project": result.project.slug,
        "created_project": result.created_project,
        "counts": {
            kind: {k: counter.get(k, 0) for k in ("created", "unchanged", "replaced", "corrected")}
            for kind, counter in result.counts.items()
        },
        "proposed_claims": result.proposed_claims,
        "label_schema_change": _schema_change(result.label_schema_change),
        "summary": result.summary(),
    }


def _schema_change(change) -> dict | None:
    """A label schema the import set, as {"from", "to"} (the default "from" for a new
    project), or None when it stayed as it was."""
    if change is None:
        return None
    before, after = change
    return {"from": before.as_dict(), "to": after.as_dict()}


def _done_import(job: Job, progress: Progress, result: dict, project: Project) -> None:
    name = job.file
    finish(job, progress, result=result, project=project, file="")
    # The upload is no longer needed once the import is committed; should deleting it fail,
    # the import still stands (a stray file is harmless, a lost import is not).
    transaction.on_commit(lambda: storage().delete(name))


def _bundle_import(job: Job, progress: Progress) -> None:
    from annotate.imports.bundle_import import import_bundle
    from annotate.projects.creation import import_new_project

    p = job.params
    with Opened(job, progress) as lines, transaction.atomic():
        if job.project_id is None:
            result = import_new_project(
                lines=lines,
                slug=job.project_slug,
                name=p.get("name") or None,
                user=job.created_by,
                reimport=p.get("reimport", True),
                progress=progress.step,
            )
        else:
            result = import_bundle(
                lines=lines,
                project_slug=job.project_slug,
                replace=p.get("replace", False),
                confirm_deletions=p.get("confirm_deletions", False),
                progress=progress.step,
            )
        _done_import(job, progress, _import_result(result), result.project)


def _ragas_import(job: Job, progress: Progress) -> None:
    from annotate.imports.ragas_import import import_ragas, import_ragas_new_project

    p = job.params
    # Checked when the upload was accepted; stored as its JSON form.
    schema = LabelSchema.parse(p["label_schema"]) if p.get("label_schema") else None
    with Opened(job, progress) as lines, transaction.atomic():
        if job.project_id is None:
            result = import_ragas_new_project(
                lines=lines,
                variant=p["variant"],
                slug=job.project_slug,
                name=p.get("name") or None,
                user=job.created_by,
                label_schema=schema,
                reimport=p.get("reimport", True),
                progress=progress.step,
            )
        else:
            result = import_ragas(
                lines=lines,
                project_slug=job.project_slug,
                variant=p["variant"],
                label_schema=schema,
                replace=p.get("replace", False),
                confirm_deletions=p.get("confirm_deletions", False),
                progress=progress.step,
            )
        out = _import_result(result)
        out.update(samples=result.samples, passed_over=result.passed_over)
        _done_import(job, progress, out, result.project)


def _label_import(job: Job, progress: Progress) -> None:
    from annotate.imports.label_import import import_labels

    with Opened(job, progress) as lines, transaction.atomic():
        project = Project.objects.get(pk=job.project_id)
        result = import_labels(lines=lines, project=project, progress=progress.step)
        progress.stage = "written"
        progress.rows_written = result.created
        out = {
            "project": project.slug,
            "created": result.created,
            "unchanged": result.unchanged,
            "summary": f"{result.created} label set(s) imported, {result.unchanged} unchanged",
        }
        _done_import(job, progress, out, project)


def _gold_import(job: Job, progress: Progress) -> None:
    from annotate.imports.gold_import import import_gold

    p = job.params
    with Opened(job, progress) as lines, transaction.atomic():
        project = Project.objects.get(pk=job.project_id)
        result = import_gold(
            lines=lines,
            project=project,
            source=p.get("source") or "",
            file_name=job.file_name,
            user=job.created_by,
            replace=p.get("replace", False),
            progress=progress.step,
        )
        progress.stage = "written"
        progress.rows_written = result.created + result.replaced
        record = result.gold_import
        out = {
            "project": project.slug,
            "source": result.source,
            "created": result.created,
            "replaced": result.replaced,
            "unchanged": result.unchanged,
            "claims": result.claims,
            "sha256": record.sha256 if record is not None else None,
            "summary": result.summary(),
        }
        _done_import(job, progress, out, project)


def _judge_import(job: Job, progress: Progress) -> None:
    from evaluation.judges.runs import import_judge_run

    with Opened(job, progress) as lines, transaction.atomic():
        project = Project.objects.get(pk=job.project_id)
        result = import_judge_run(
            lines=lines,
            project=project,
            name=job.params.get("name") or None,
            user=job.created_by,
            source_name=job.file_name,
        )
        progress.stage = "written"
        progress.rows_written = result.verdicts
        out = {
            "project": project.slug,
            "run": result.run.pk,
            "run_name": result.run.name,
            "summary": result.summary(),
            "self_judged": result.self_judged,
        }
        _done_import(job, progress, out, project)


def _gold_export(job: Job, progress: Progress) -> None:
    from annotate.common.jsonl import jsonl
    from annotate.gold.exports import gold_csv, gold_rows

    project = Project.objects.get(pk=job.project_id)
    fmt = job.params["format"]
    rows = gold_rows(project, **job.params["filters"])

    def counted():
        for row in rows:
            progress.rows_written += 1
            yield row

    body = jsonl(counted()) if fmt == "jsonl" else gold_csv(counted())
    name = f"exports/{project.slug}-gold-{job.pk}.{fmt}"
    # One snapshot of the labels for the whole file, as one long SELECT would see them. The
    # job's row is written after it, outside: under REPEATABLE READ the heartbeat's updates
    # of that row would make the final one a serialization failure.
    # SQLite has no read-only transaction here: settings open every transaction IMMEDIATE
    # (the write lock), and holding that for the whole file would stall every label save
    # until SQLite's timeout. There the file is read outside a transaction, query by query:
    # SQLite is the single-machine demo setting; a team runs PostgreSQL (README).
    fresh_transaction = not connection.in_atomic_block  # inside a request's, it has a snapshot
    snapshot = (
        transaction.atomic() if connection.vendor != "sqlite" or not fresh_transaction else None
    )
    with snapshot or contextlib.nullcontext():
        if connection.vendor == "postgresql" and fresh_transaction:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        # The rows of each chunk of answers live long enough to reach the collector's oldest
        # generation, and each full collection walked them and everything the worker holds:
        # 0.6 of 3.3 s for 55,000 rows. (The download a request streams keeps the collector:
        # a slow reader would hold it off for the whole web process.)
        with collector.paused():
            saved = _save_whole(name, _Chunks(body))
    try:
        with transaction.atomic():
            finish(
                job,
                progress,
                result={"rows": progress.rows_written, "format": fmt},
                output=saved,
            )
    except Superseded:
        storage().delete(saved)
        raise


def _save_whole(name: str, content: File) -> str:
    """Storage.save, but a file that fails halfway (a database error in the middle of the
    rows, a full disk) is removed rather than left behind, unlisted, under exports/."""
    store = storage()
    name = store.get_available_name(name)
    try:
        return store.save(name, content)
    except BaseException:
        if store.exists(name):
            store.delete(name)
        raise


class _Chunks(File):
    """A generator of text as a file Storage.save can read, written in chunks as they come."""

    def __init__(self, parts):
        super().__init__(None, name="export")
        self._parts = iter(parts)

    def chunks(self, chunk_size=None):
        buffer: list[bytes] = []
        size = 0
        for part in self._parts:
            data = part.encode("utf-8")
            buffer.append(data)
            size += len(data)
            if size >= 1 << 20:
                yield b"".join(buffer)
                buffer, size = [], 0
        if buffer:
            yield b"".join(buffer)

    def multiple_chunks(self, chunk_size=None):
        return True

    def close(self):
        pass


WORK: dict[str, Callable[[Job, Progress], None]] = {
    Job.Kind.BUNDLE_IMPORT: _bundle_import,
    Job.Kind.RAGAS_IMPORT: _ragas_import,
    Job.Kind.LABEL_IMPORT: _label_import,
    Job.Kind.GOLD_IMPORT: _gold_import,
    Job.Kind.JUDGE_IMPORT: _judge_import,
    Job.Kind.GOLD_EXPORT: _gold_export,
}
