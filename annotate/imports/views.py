"""The upload pages: a new project from a bundle or a Ragas dataset, and a project's upload
page (a bundle, a Ragas dataset, labels or gold made elsewhere). Each file is queued for a
worker (jobs.accept.start_import), whose page follows the import."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.utils.text import capfirst

from annotate.common.errors import ServiceError
from annotate.common.pages import posted, render_page
from annotate.common.roles import project_view
from annotate.imports.forms import NewProjectForm, UploadForm
from annotate.imports.lines import BundleInvalid
from annotate.imports.ragas_import import label_schema_problem
from annotate.models import Role
from annotate.projects.creation import check_new_slug
from jobs import accept as jobs
from jobs import views as job_views
from jobs.models import Job


@login_required
def project_new(request):
    form = NewProjectForm(*posted(request), initial=_prefilled(request))
    bundle_errors: BundleInvalid | None = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        ragas, schema = data["format"] == "ragas", data["label_schema"]
        try:
            # Said at once, before the upload waits for a worker; the worker checks again.
            check_new_slug(slug=data["slug"], user=request.user, reimport=False)
            job = jobs.start_import(
                kind=Job.Kind.RAGAS_IMPORT if ragas else Job.Kind.BUNDLE_IMPORT,
                user=request.user,
                upload=data["file"],
                slug=data["slug"],
                params={
                    "name": data["name"] or None,
                    "variant": data["variant"] if ragas else None,
                    "label_schema": schema.as_dict() if schema else None,
                    "reimport": False,
                },
            )
        except jobs.EmptyUpload as exc:
            form.add_error("file", str(exc))
        except ServiceError as exc:
            form.add_error("slug", str(exc))
        else:
            response, bundle_errors = job_views.after_upload(request, job, form)
            if response is not None:
                return response
    context = {"form": form, "bundle_errors": bundle_errors}
    status = 400 if request.method == "POST" else 200
    return render_page(
        request, "annotate/lead/project_new.html", context, partial="upload-form", status=status
    )


def _prefilled(request) -> dict:
    """The new-project form filled in from its query string: a refused upload's page links
    back here with the slug and name it had."""
    return {key: request.GET[key] for key in ("slug", "name") if key in request.GET}


@project_view(Role.LEAD)
def project_upload(request, project, role):
    form = UploadForm(*posted(request))
    bundle_errors: BundleInvalid | None = None
    deletions = None  # a replace that deletes data, listed for the lead to confirm
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        kind = {
            "ragas": Job.Kind.RAGAS_IMPORT,
            "labels": Job.Kind.LABEL_IMPORT,
            "gold": Job.Kind.GOLD_IMPORT,
        }.get(data["format"], Job.Kind.BUNDLE_IMPORT)
        # Said on its field at once, before the upload waits for a worker (which checks again).
        problem = label_schema_problem(project=project, schema=data["label_schema"])
        if problem:
            form.add_error("label_schema", capfirst(problem))
        else:
            response, bundle_errors, deletions = _start_upload(request, project, form, kind)
            if response is not None:
                return response
    context = {
        "project": project,
        "role": role,
        "form": form,
        "bundle_errors": bundle_errors,
        "deletions": deletions,
        "current": "upload",
    }
    status = 400 if request.method == "POST" else 200
    return render_page(
        request, "annotate/lead/upload.html", context, partial="upload-form", status=status
    )


def _start_upload(request, project, form, kind) -> tuple:
    """(response, bundle errors, deletions) of the upload page's file, queued for import."""
    data = form.cleaned_data
    schema = data["label_schema"]
    if kind == Job.Kind.GOLD_IMPORT:
        params = {"source": data["source"], "replace": data["replace_gold"]}
    else:
        params = {
            "replace": data["replace"],
            "confirm_deletions": data["confirm_deletions"],
            "variant": data["variant"],
            "label_schema": schema.as_dict() if schema else None,
        }
    try:
        job = jobs.start_import(
            kind=kind,
            user=request.user,
            upload=data["file"],
            slug=project.slug,
            project=project,
            params=params,
        )
    except jobs.EmptyUpload as exc:
        form.add_error("file", str(exc))
        return None, None, None
    response, bundle_errors = job_views.after_upload(request, job, form)
    return response, bundle_errors, job.result.get("deletions")
