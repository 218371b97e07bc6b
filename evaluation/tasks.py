"""What evaluation's background jobs do: a judge run's import, registered with jobs.kinds as
this module is imported (jobs.apps imports every app's tasks module at start-up), with what
the job's page says of it. annotate/tasks.py holds annotate's kinds, and what every import
shares (a refused file's problems, and how a refusal reads)."""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.urls import reverse

from annotate.models import Project
from annotate.tasks import bundle_errors, refusing
from evaluation.judges.runs import import_judge_run
from jobs import kinds
from jobs.models import Job
from jobs.progress import Progress
from jobs.services import Opened, finish_import


def _judge_import(job: Job, progress: Progress) -> None:
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
        finish_import(job, progress, out, project)


def _run_url(job: Job) -> str:
    slug = job.result.get("project", job.project_slug)
    return reverse("judge_run", kwargs={"slug": slug, "run_pk": job.result["run"]})


def _judges_url(job: Job) -> str:
    return reverse("judges", kwargs={"slug": job.project_slug})


def _announce(request, job: Job) -> None:
    result = job.result
    messages.success(request, f"Imported judge run '{result['run_name']}': {result['summary']}.")
    if result.get("self_judged"):
        messages.warning(
            request,
            f"{result['self_judged']} verdict(s) grade answers of the judge's own model.",
        )


kinds.register(
    Job.Kind.JUDGE_IMPORT,
    run=refusing(_judge_import),
    done_url=_run_url,
    again_url=_judges_url,
    announce=_announce,
    problems=bundle_errors,
)
