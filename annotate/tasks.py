"""What annotate's background jobs do: the work a worker runs for each kind of job annotate
starts (bundle, Ragas, label and gold imports; the gold export), registered with jobs.kinds
as this module is imported (jobs.apps imports every app's tasks module at start-up), with
what the job's page says of each: where a finished import leads, what it announces, and a
refused file's problems.

jobs runs any job (jobs.services.run, under the task jobs.tasks.run_job); this module says
what a job of annotate's kinds is. evaluation/tasks.py does the same for judge-run imports.
"""

from __future__ import annotations

import contextlib
import functools
import tempfile
from urllib.parse import urlencode

from django.contrib import messages
from django.core.files import File
from django.db import connection, transaction
from django.urls import reverse

from annotate.common import collector, computed, jsonl
from annotate.common.errors import ServiceError
from annotate.gold import exports
from annotate.gold.parquet import write_parquet
from annotate.imports.bundle_import import import_bundle
from annotate.imports.bundle_plan import DeletionsNotConfirmed
from annotate.imports.gold_import import import_gold
from annotate.imports.label_import import import_labels
from annotate.imports.lines import BundleError, BundleInvalid
from annotate.imports.ragas_import import import_ragas, import_ragas_new_project
from annotate.models import Project
from annotate.projects.creation import import_new_project
from annotate.releases.services import create_release
from annotate.schema import LabelSchema
from jobs import kinds
from jobs.framework import task
from jobs.kinds import Refused
from jobs.models import Job
from jobs.progress import Progress
from jobs.services import Opened, Superseded, finish, finish_import, storage


def refusing(work):
    """`work`, with what annotate's services refuse (a file with problems by line, a replace
    that deletes data, any ServiceError) as the job's failure in words."""

    @functools.wraps(work)
    def run(job: Job, progress: Progress) -> None:
        try:
            work(job, progress)
        except BundleInvalid as exc:
            raise Refused(
                f"The file was not imported: {len(exc.errors)} problem(s) found. "
                "Nothing was written.",
                errors=exc.errors,
            ) from exc
        except DeletionsNotConfirmed as exc:
            # Kept, with what it would delete: confirming queues the same file again.
            raise Refused(
                "This replace deletes data. Nothing was written: confirm to import it.",
                result={"deletions": exc.deletions.lines()},
                keep_file=True,
            ) from exc
        except ServiceError as exc:
            raise Refused(str(exc)) from exc

    return run


def bundle_errors(job: Job) -> BundleInvalid | None:
    """A refused file's problems, as the upload pages show them."""
    if not job.errors:
        return None
    return BundleInvalid([BundleError(line, message, unit) for line, message, unit in job.errors])


# --- The work of each kind ---------------------------------------------------------------------


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


def _bundle_import(job: Job, progress: Progress) -> None:
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
        finish_import(job, progress, _import_result(result), result.project)


def _ragas_import(job: Job, progress: Progress) -> None:
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
        finish_import(job, progress, out, result.project)


def _label_import(job: Job, progress: Progress) -> None:
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
        finish_import(job, progress, out, project)


def _gold_import(job: Job, progress: Progress) -> None:
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
        finish_import(job, progress, out, project)


def _gold_export(job: Job, progress: Progress) -> None:
    project = Project.objects.get(pk=job.project_id)
    fmt = job.params["format"]
    # Through the modules (exports.gold_rows, jsonl.jsonl): what the tests replace.
    rows = exports.gold_rows(project, **job.params["filters"])

    def counted():
        for row in rows:
            progress.rows_written += 1
            yield row

    body = jsonl.jsonl(counted()) if fmt == "jsonl" else exports.gold_csv(counted())
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
            if fmt == "parquet":  # written whole first: Parquet's footer comes last
                with tempfile.TemporaryFile() as out:
                    write_parquet(counted(), out)
                    out.seek(0)
                    saved = _save_whole(name, File(out))
            else:
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


def _gold_release(job: Job, progress: Progress) -> None:
    project = Project.objects.get(pk=job.project_id)
    # create_release reads the rows in one snapshot and commits the release itself; the job's
    # row is written after, as an export's is (its heartbeats update that row meanwhile).

    def written() -> None:
        progress.rows_written += 1

    release = create_release(
        project=project, user=job.created_by, on_row=written, **job.params["release"]
    )
    try:
        with transaction.atomic():
            finish(
                job,
                progress,
                result={
                    "rows": release.row_count,
                    "release": release.name,
                    "sha256": release.sha256,
                },
                output=release.file,
            )
    except Superseded:
        release.delete()  # the retry that owns the job makes it again
        storage().delete(release.file)
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


# --- What the job's page says of each kind ---------------------------------------------------


def _setup_url(job: Job) -> str:
    return reverse("project_setup", kwargs={"slug": job.result.get("project", job.project_slug)})


def _gold_url(job: Job) -> str:
    return reverse("gold", kwargs={"slug": job.result.get("project", job.project_slug)})


def _upload_url(job: Job) -> str:
    """The form to upload a corrected file on: a new project's, or the project's upload."""
    if job.project_id is None:
        query = urlencode({"slug": job.project_slug, "name": job.params.get("name") or ""})
        return f"{reverse('project_new')}?{query}"
    return reverse("project_upload", kwargs={"slug": job.project_slug})


def _announce_project_import(request, job: Job) -> None:
    result = job.result
    prefix = "Project created. " if result.get("created_project") else ""
    messages.success(request, f"{prefix}Imported {result.get('summary', '')}.")
    if result.get("proposed_claims"):
        messages.info(
            request,
            f"{result['proposed_claims']} claims were proposed sentence by sentence: review "
            "their boundaries before opening labelling.",
        )


def _announce_labels(request, job: Job) -> None:
    messages.success(request, f"Labels: {job.result.get('summary', 'imported')}.")


def _announce_gold(request, job: Job) -> None:
    messages.success(request, f"Gold: {job.result.get('summary', 'imported')}.")


# An import's page: on to the project's set-up once done, the upload form to try again.
IMPORTS = {"done_url": _setup_url, "again_url": _upload_url, "problems": bundle_errors}

kinds.register(
    Job.Kind.BUNDLE_IMPORT,
    run=refusing(_bundle_import),
    announce=_announce_project_import,
    **IMPORTS,
)
kinds.register(
    Job.Kind.RAGAS_IMPORT,
    run=refusing(_ragas_import),
    announce=_announce_project_import,
    **IMPORTS,
)
kinds.register(
    Job.Kind.LABEL_IMPORT, run=refusing(_label_import), announce=_announce_labels, **IMPORTS
)
kinds.register(
    Job.Kind.GOLD_IMPORT,
    run=refusing(_gold_import),
    announce=_announce_gold,
    **{**IMPORTS, "done_url": _gold_url},
)


def _download_type(job: Job) -> str:
    return exports.content_type(job.params.get("format", "jsonl"))


kinds.register(
    Job.Kind.GOLD_EXPORT,
    run=refusing(_gold_export),
    is_import=False,
    again_url=_gold_url,
    problems=bundle_errors,
    content_type=_download_type,
)
kinds.register(
    Job.Kind.GOLD_RELEASE,
    run=refusing(_gold_release),
    is_import=False,
    again_url=_gold_url,
    content_type=_download_type,
)


# --- Reports ------------------------------------------------------------------------------------


@task
def refresh_report(project_id: int, kind: str, key: str) -> None:
    """Compute a stored report at the project's revision now (annotate.common.computed)."""
    computed.refresh(project_id=project_id, kind=kind, key=key)


computed.register_worker_task(refresh_report)
