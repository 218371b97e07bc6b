"""Background jobs, the request's side: accepting work and queueing it, and retrying it.

The upload is stored in the "jobs" storage, a Job row records what was asked, and a task
(jobs.tasks.run_job) is enqueued naming the job; a worker runs it (jobs.services). Verbs with
keyword-only arguments: the pages, the API, the commands and the tests call these.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.files import File
from django.db import transaction
from django.utils import timezone

from jobs.models import Job
from jobs.services import discard_outputs, enqueue, queue_again, storage


class EmptyUpload(Exception):
    """An upload of blank lines only: there is nothing to import."""


class CannotRetry(Exception):
    """A job that a retry cannot help (refused line by line, finished, or still running)."""


def start_import(
    *,
    kind: str,
    user,
    upload,
    slug: str,
    project=None,
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
            enqueue(job)
    except Exception:
        # Not queued (the task backend or the database refused): nobody will import the file.
        storage().delete(name)
        raise
    job.refresh_from_db()
    return job


def start_job(
    *, kind: str, project, user, params: dict[str, Any], rows: int = 0, reuse: bool = False
) -> Job:
    """Queue work of `kind` that reads no upload (an export) on `project`; `rows` is how many
    it will write, for the progress bar. With `reuse`, a job of the same kind and parameters
    that is waiting, running or done is returned instead: its work would be the same (the
    caller puts what its result depends on in `params`)."""
    with transaction.atomic():
        if reuse:
            # Two leads asking in the same instant may start two identical jobs: harmless,
            # and cheaper than a lock on the project's row, which every label save's checks
            # read.
            same = (
                Job.objects.filter(project=project, kind=kind, params=params)
                .exclude(status=Job.Status.FAILED)
                .order_by("-created_at")
                .first()
            )
            if same is not None and not same.stalled and not same.waited_too_long:
                return same
        job = Job.objects.create(
            kind=kind,
            project=project,
            project_slug=project.slug,
            created_by=user,
            params=params,
            rows_total=rows,
        )
        enqueue(job)
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
                raise CannotRetry("This job cannot be retried: upload the file again.")
            if job.status == Job.Status.SUCCEEDED:
                raise CannotRetry("This job has finished: there is nothing to retry.")
            raise CannotRetry("This job is still running: there is nothing to retry.")
        if confirm_deletions:
            # What the lead was shown, and only that: if the replace would delete more by the
            # time it runs, it stops again and lists it.
            shown = (job.result or {}).get("deletions") or True
            job.params = {**job.params, "confirm_deletions": shown}
        if job.waited_too_long:
            job.created_at = timezone.now()  # sent again: its wait starts over
        if job.stalled:
            discard_outputs(job)  # what the lost attempt had written of its file
        job.attempts = 0  # a person asked: the job gets its runs again
        queue_again(job)
    job.refresh_from_db()
    return job


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
