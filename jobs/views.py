"""The page a person watches a job on, its retry button, an export's download, and /healthz.

The page's URL names the job, so it survives a reload; while the job runs, htmx asks for the
page's `status` partial every second (hx-trigger="every 1s", allowed by the CSP). A finished
import sends the person on to where its kind says (the project's set-up page, the gold page,
the judge run's page: registered with the kind, jobs.kinds); a refused file shows every
problem by line; an export shows its download.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from jobs import kinds, services
from jobs.accept import CannotRetry, retry_job
from jobs.models import Job

# Only a project's leads see its jobs (Job.objects.visible_to): the role badge base.html shows
# (annotate.models.Role.LEAD).
LEAD = "lead"


def _job_or_404(user, job_id) -> Job:
    job = Job.objects.visible_to(user).select_related("project").filter(pk=job_id).first()
    if job is None:
        raise Http404("Not found")
    return job


def job_url(job: Job) -> str:
    return reverse("job", kwargs={"job_id": job.pk})


def done_url(job: Job) -> str:
    """Where a finished import sends the person: its kind says (jobs.kinds)."""
    return kinds.get(job.kind).done_url(job)


def after_upload(request, job: Job, form) -> tuple:
    """(response, bundle errors) once an upload is queued. A job still waiting or running
    sends the person to its page, which follows it; one already finished (a worker was
    quick, or CLAIMDESK_TASKS=immediate ran it in this request) answers as the page always
    did: on to where the import leads, or the form again with every problem by line."""
    if job.status == Job.Status.SUCCEEDED:
        announce(request, job)
        return _go(request, done_url(job)), None
    if job.status == Job.Status.FAILED:
        errors = kinds.problems(job)
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
    hook = kinds.get(job.kind).announce
    if hook is not None:
        hook(request, job)


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
        "role": LEAD if job.project_id else None,
        "bundle_errors": kinds.problems(job),
        "again_url": _again_url(job),
        "max_attempts": settings.CLAIMDESK_JOB_MAX_ATTEMPTS,
    }
    if request.htmx:
        return render(request, "jobs/job.html#status", context)
    return render(request, "jobs/job.html", context)


def _again_url(job: Job) -> str:
    """The form to upload a corrected file on (its kind says: jobs.kinds)."""
    hook = kinds.get(job.kind).again_url
    return hook(job) if hook is not None else reverse("home")


@require_POST
@login_required
def job_retry(request, job_id):
    job = _job_or_404(request.user, job_id)
    try:
        retry_job(job=job, confirm_deletions=request.POST.get("confirm_deletions") == "1")
    except CannotRetry as exc:
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
        content_type=kinds.download_type(job),
    )
