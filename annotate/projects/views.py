"""Lead pages: project set-up, bundle upload, members, guidelines, claim boundaries and
opening labelling. Thin views: a form parses the request, one service decides, the page
renders; an htmx request gets a named partial of the same template.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import capfirst
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotate import blinding, selectors, services
from annotate import boundaries as boundary_services
from annotate.access import may_add_anyone
from annotate.common.errors import ServiceError
from annotate.common.roles import project_view
from annotate.imports.bundle_import import check_new_slug
from annotate.imports.lines import BundleInvalid
from annotate.imports.ragas_import import label_schema_problem
from annotate.lead_forms import (
    BOUNDARY_FORMS,
    AddMemberForm,
    GuidelinesForm,
    ImportMembersForm,
    LabelSchemaForm,
    MemberForm,
    NewProjectForm,
    UploadForm,
)
from annotate.models import Answer, Claim, Membership, Project, Role
from annotate.report_cache import reports_of
from jobs import services as jobs
from jobs import views as job_views
from jobs.models import Job

ANSWERS_PER_PAGE = 50


def _render(request, template: str, context: dict, *, partial: str | None = None, status=200):
    """The page, or for htmx its named partial (htmx swaps only 2xx responses)."""
    if request.htmx and partial:
        return render(request, f"{template}#{partial}", context)
    return render(request, template, context, status=status)


def _go(request, url: str):
    """Redirect after a successful POST; htmx is told to navigate instead of swapping."""
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


def _posted(request) -> tuple:
    """Form data for a POST (even an empty one, which must still be validated), else none."""
    if request.method == "POST":
        return request.POST, request.FILES
    return None, None


def _setup_url(project: Project) -> str:
    return reverse("project_setup", kwargs={"slug": project.slug})


# --- Set-up dashboard ------------------------------------------------------------------------


@require_GET
@project_view(Role.LEAD)
def project_setup(request, project, role):
    return _setup_page(request, project, role, LabelSchemaForm(initial=project.schema.as_dict()))


def _setup_page(request, project, role, schema_form, status=200):
    summary = selectors.setup_summary(project)
    return render(
        request,
        "annotate/lead/setup.html",
        {
            "project": project,
            "role": role,
            "s": summary,
            "current": "setup",
            # Four scans of the project's answers, claims and citations (0.5-0.8 s at 10,000
            # answers): kept until they change, whatever reviewers submit meanwhile.
            "blinding": reports_of(project).get(
                "blinding", lambda: selectors.blinding_check(project), labels=False
            ),
            "blinding_flag_at": round(blinding.FLAG_AT * 100),
            "schema_form": schema_form,
        },
        status=status,
    )


@require_POST
@project_view(Role.LEAD)
def label_schema(request, project, role):
    form = LabelSchemaForm(request.POST)
    if form.is_valid():
        try:
            services.set_label_schema(project=project, schema=form.schema())
        except ServiceError as exc:
            # Shown as a message: once the schema is locked the page has no form to mark.
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Label schema saved: {form.schema().describe()}.")
            return _go(request, _setup_url(project))
    return _setup_page(request, project, role, form, status=400)


@require_POST
@project_view(Role.LEAD)
def open_project(request, project, role):
    try:
        project = services.open_labelling(project=project)
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        queued = project.answers.filter(task_number__isnull=False).count()
        messages.success(request, f"Open for labelling: {queued} answers in the queue")
    return _go(request, _setup_url(project))


# --- Bundles ---------------------------------------------------------------------------------


@login_required
def project_new(request):
    form = NewProjectForm(*_posted(request), initial=_prefilled(request))
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
    return _render(
        request, "annotate/lead/project_new.html", context, partial="upload-form", status=status
    )


def _prefilled(request) -> dict:
    """The new-project form filled in from its query string: a refused upload's page links
    back here with the slug and name it had."""
    return {key: request.GET[key] for key in ("slug", "name") if key in request.GET}


@project_view(Role.LEAD)
def project_upload(request, project, role):
    form = UploadForm(*_posted(request))
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
    return _render(
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


# --- Members ---------------------------------------------------------------------------------


@project_view(Role.LEAD)
def members(request, project, role):
    if request.method != "POST":
        return _members_page(request, project, role, AddMemberForm())
    action = request.POST.get("action")
    if action in ("role", "remove"):
        return _change_member(request, project, role, action)
    if action == "import":
        return _import_members(request, project, role)
    if action != "add":
        return HttpResponseBadRequest("Unknown action.")
    form = AddMemberForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            services.add_project_member(
                project=project,
                username=data["username"],
                role=data["role"],
                by=request.user,
                password=data["password"] or None,
            )
        except services.MemberError as exc:
            form.add_error(exc.field, str(exc))
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                services.ADDED_MEMBER.format(username=data["username"], role=data["role"]),
            )
            return _after_member_change(request, project, role)
    return _members_page(request, project, role, form, status=400)


def _import_members(request, project, role):
    form = ImportMembersForm(request.POST, request.FILES)
    bundle_errors: BundleInvalid | None = None
    if form.is_valid():
        try:
            result = services.import_members(
                lines=form.cleaned_data["file"], project=project, by=request.user
            )
        except BundleInvalid as exc:
            bundle_errors = exc
        else:
            messages.success(request, f"Members: {result.summary()}.")
            if result.without_password:
                messages.info(
                    request,
                    f"{len(result.without_password)} of them cannot log in yet, having no "
                    "password: an administrator sets one.",
                )
            return _after_member_change(request, project, role)
    return _members_page(
        request,
        project,
        role,
        AddMemberForm(),
        import_form=form,
        bundle_errors=bundle_errors,
        status=400,
    )


def _members_page(
    request, project, role, add_form, *, import_form=None, bundle_errors=None, status=200
):
    context = {
        "project": project,
        "role": role,
        "add_form": add_form,
        "import_form": import_form or ImportMembersForm(),
        "bundle_errors": bundle_errors,
        "memberships": project.memberships.select_related("user").order_by(
            "role", "user__username"
        ),
        "roles": Role.choices,
        "may_add_anyone": may_add_anyone(request.user),
        "current": "members",
    }
    return _render(
        request, "annotate/lead/members.html", context, partial="members-panel", status=status
    )


def _change_member(request, project, role, action: str):
    form = MemberForm(request.POST)
    membership = None
    if form.is_valid():
        membership = (
            Membership.objects.filter(project=project, pk=form.cleaned_data["member"])
            .select_related("user", "project")
            .first()
        )
    if membership is None:
        messages.error(request, "That person is no longer a member: the page was out of date.")
        return _after_member_change(request, project, role)
    name = membership.user.get_username()
    try:
        if action == "remove":
            services.remove_member(membership=membership)
            messages.success(request, f"{name} was removed from the project.")
        else:
            new_role = form.cleaned_data["role"]
            services.change_member_role(membership=membership, role=new_role)
            messages.success(request, f"{name} is now a {new_role}.")
    except ServiceError as exc:
        messages.error(request, str(exc))
    return _after_member_change(request, project, role)


def _after_member_change(request, project, role):
    # A lead who removed or demoted themselves can no longer see the set-up pages.
    still_lead = Membership.objects.filter(
        project=project, user=request.user, role=Role.LEAD
    ).exists()
    if not still_lead:
        return _go(request, reverse("home"))
    if request.htmx:
        return _members_page(request, project, role, AddMemberForm())
    return redirect("members", slug=project.slug)


# --- Guidelines ------------------------------------------------------------------------------


@project_view(Role.LEAD)
def guidelines(request, project, role):
    form = GuidelinesForm(*_posted(request)[:1], project=project)
    if request.method == "POST" and form.is_valid():
        try:
            services.update_guidelines(
                project=project,
                guidelines=form.cleaned_data["guidelines"],
                overlap=form.cleaned_data["overlap"],
            )
        except ServiceError as exc:
            form.add_error("overlap", str(exc))
        else:
            messages.success(request, "Guidelines saved.")
            return redirect("guidelines", slug=project.slug)
    context = {"project": project, "role": role, "form": form, "current": "guidelines"}
    status = 400 if request.method == "POST" else 200
    return render(request, "annotate/lead/guidelines.html", context, status=status)


# --- Claim boundaries ------------------------------------------------------------------------


@require_GET
@project_view(Role.LEAD)
def boundaries(request, project, role):
    only_proposed = request.GET.get("proposed") == "1"
    page = Paginator(
        selectors.answers_for_boundaries(project, only_proposed), ANSWERS_PER_PAGE
    ).get_page(request.GET.get("page"))
    url = reverse("boundaries", kwargs={"slug": project.slug})

    def page_url(number: int) -> str:
        query = ({"proposed": 1} if only_proposed else {}) | {"page": number}
        return f"{url}?{urlencode(query)}"

    context = {
        "project": project,
        "role": role,
        "page_obj": page,
        "only_proposed": only_proposed,
        "previous_url": page_url(page.previous_page_number()) if page.has_previous() else "",
        "next_url": page_url(page.next_page_number()) if page.has_next() else "",
        "current": "boundaries",
    }
    return _render(request, "annotate/lead/boundaries.html", context, partial="answer-list")


BOUNDARY_DONE = {
    "split": "Claim split in two.",
    "merge": "Claims merged.",
    "adjust": "Span adjusted.",
    "citations": "Citations saved.",
    "delete": "Claim deleted.",
    "add": "Claim added.",
    "accept": "Boundaries marked as reviewed.",
}


@project_view(Role.LEAD)
def boundary_edit(request, project, role, answer_pk):
    answer = Answer.objects.filter(project=project, pk=answer_pk).select_related("case").first()
    if answer is None:
        raise Http404("Not found")
    only_proposed = request.GET.get("proposed") == "1"
    if request.method == "POST":
        action = request.POST.get("action", "")
        form_class = BOUNDARY_FORMS.get(action)
        if form_class is None:
            return HttpResponseBadRequest("Unknown action.")
        form = form_class(request.POST)
        if not form.is_valid():
            messages.error(request, _first_error(form))
        else:
            try:
                _apply_boundary_action(action, answer, form.cleaned_data)
            except ServiceError as exc:
                messages.error(request, str(exc))
            else:
                messages.success(request, BOUNDARY_DONE[action])
        if not request.htmx:
            url = reverse("boundary_edit", kwargs={"slug": project.slug, "answer_pk": answer.pk})
            query = "?proposed=1" if only_proposed else ""
            return redirect(f"{url}{query}#claims")
    context = {
        "project": project,
        "role": role,
        "current": "boundaries",
        **selectors.boundary_editor(project, answer, only_proposed=only_proposed),
    }
    return _render(request, "annotate/lead/boundary_edit.html", context, partial="editor")


def _first_error(form) -> str:
    for name, errors in form.errors.items():
        label = form.fields[name].label if name in form.fields else None
        label = label or name.replace("_", " ")
        return f"{label.capitalize()}: {errors[0]}" if name != "__all__" else errors[0]
    return "The form was not valid."


def _apply_boundary_action(action: str, answer: Answer, data: dict) -> None:
    if action == "add":
        boundary_services.add_claim(answer=answer, start=data["start"], end=data["end"])
        return
    if action == "accept":
        boundary_services.accept_claims(answer=answer)
        return
    claim = Claim.objects.filter(answer=answer, pk=data["claim"]).first()
    if claim is None:
        raise ServiceError("That claim no longer exists: reload the page to see the claims.")
    if action == "split":
        boundary_services.split_claim(claim=claim, at=data["at"])
    elif action == "merge":
        boundary_services.merge_with_next(claim=claim)
    elif action == "adjust":
        boundary_services.adjust_span(claim=claim, start=data["start"], end=data["end"])
    elif action == "citations":
        ids = boundary_services.parse_cited_ids(data["citations"])
        boundary_services.edit_citations(claim=claim, cited_ids=ids)
    elif action == "delete":
        boundary_services.delete_claim(claim=claim)
