"""The page a person watches a job on, its retry button, an export's download, and /healthz.

The page's URL names the job, so it survives a reload; while the job runs, htmx asks for the
page's `status` partial every second (hx-trigger="every 1s", allowed by the CSP). A finished
import sends the person on to the project's set-up page; a refused file shows every problem
by line; an export shows its download.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotate.common.errors import ServiceError
from annotate.gold.exports import content_type
from annotate.models import Role
from jobs import services
from jobs.models import Job


def _job_or_404(user, job_id) -> Job:
    job = Job.objects.visible_to(user).select_related("project").filter(pk=job_id).first()
    if job is None:
        raise Http404("Not found")
    return job


def job_url(job: Job) -> str:
    return reverse("job", kwargs={"job_id": job.pk})


def done_url(job: Job) -> str:
    """Where a finished import sends the person: the judge run's page for a judge run, the
    gold page for gold, the project's set-up page for the rest."""
    slug = job.result.get("project", job.project_slug)
    if job.kind == Job.Kind.JUDGE_IMPORT:
        return reverse("judge_run", kwargs={"slug": slug, "run_pk": job.result["run"]})
    if job.kind == Job.Kind.GOLD_IMPORT:
        return reverse("gold", kwargs={"slug": slug})
    return reverse("project_setup", kwargs={"slug": slug})


def after_upload(request, job: Job, form) -> tuple:
    """(response, bundle errors) once an upload is queued. A job still waiting or running
    sends the person to its page, which follows it; one already finished (a worker was
    quick, or CLAIMDESK_TASKS=immediate ran it in this request) answers as the page always
    did: on to where the import leads, or the form again with every problem by line."""
    if job.status == Job.Status.SUCCEEDED:
        announce(request, job)
        return _go(request, done_url(job)), None
    if job.status == Job.Status.FAILED:
        errors = services.bundle_errors(job)
        if errors is None and not job.result.get("deletions"):  # those are listed apart
            form.add_error(None, job.failure)
        return None, errors
    return _go(request, job_url(job)), None


def _go(request, url: str):
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def announce(request, job: Job) -> None:
    """The finished import's result, as the synchronous upload said it; once per job, however
    many of the page's polls (or reloads) see it finished."""
    announced = request.session.get("jobs_announced", [])
    if str(job.pk) in announced:
        return
    request.session["jobs_announced"] = [*announced[-19:], str(job.pk)]
    result = job.result
    if job.kind == Job.Kind.LABEL_IMPORT:
        messages.success(request, f"Labels: {result.get('summary', 'imported')}.")
        return
    if job.kind == Job.Kind.GOLD_IMPORT:
        messages.success(request, f"Gold: {result.get('summary', 'imported')}.")
        return
    if job.kind == Job.Kind.JUDGE_IMPORT:
        messages.success(
            request, f"Imported judge run '{result['run_name']}': {result['summary']}."
        )
        if result.get("self_judged"):
            messages.warning(
                request,
                f"{result['self_judged']} verdict(s) grade answers of the judge's own model.",
            )
        return
    prefix = "Project created. " if result.get("created_project") else ""
    messages.success(request, f"{prefix}Imported {result.get('summary', '')}.")
    if result.get("proposed_claims"):
        messages.info(
            request,
            f"{result['proposed_claims']} claims were proposed sentence by sentence: review "
            "their boundaries before opening labelling.",
        )


@require_GET
@login_required
def job_page(request, job_id):
    job = _job_or_404(request.user, job_id)
    if job.status == Job.Status.SUCCEEDED and job.is_import:
        announce(request, job)
        url = done_url(job)
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    context = {
        "job": job,
        "project": job.project,
        "role": Role.LEAD if job.project_id else None,
        "bundle_errors": services.bundle_errors(job),
        "again_url": _again_url(job),
    }
    if request.htmx:
        return render(request, "jobs/job.html#status", context)
    return render(request, "jobs/job.html", context)


def _again_url(job: Job) -> str:
    """The form to upload a corrected file on."""
    if job.kind in (Job.Kind.GOLD_EXPORT, Job.Kind.GOLD_RELEASE):
        return reverse("gold", kwargs={"slug": job.project_slug})
    if job.kind == Job.Kind.JUDGE_IMPORT:
        return reverse("judges", kwargs={"slug": job.project_slug})
    if job.project_id is None:
        query = urlencode({"slug": job.project_slug, "name": job.params.get("name") or ""})
        return f"{reverse('project_new')}?{query}"
    return reverse("project_upload", kwargs={"slug": job.project_slug})


@require_POST
@login_required
def job_retry(request, job_id):
    job = _job_or_404(request.user, job_id)
    try:
        services.retry_job(job=job, confirm_deletions=request.POST.get("confirm_deletions") == "1")
    except ServiceError as exc:
        messages.error(request, str(exc))
    return redirect(job_url(job))


@require_GET
@login_required
def job_download(request, job_id):
    job = _job_or_404(request.user, job_id)
    if job.status != Job.Status.SUCCEEDED or not job.output:
        raise Http404("Not ready")
    fmt = job.params.get("format", "jsonl")
    return FileResponse(
        services.storage().open(job.output, "rb"),
        as_attachment=True,
        filename=f"{job.project_slug}-gold.{fmt}",
        content_type=content_type(fmt),
    )
