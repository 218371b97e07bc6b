"""A project's pages before and around labelling: the list of one's projects, the lead's set-up
dashboard (with the blinding check and the label schema), the guidelines, the claim boundary
editor and opening labelling. Thin views: a form parses the request, one service decides, the
page renders; an htmx request gets a named partial of the same template.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotate.adjudication.reaudit import reaudit_list
from annotate.checks.forms import CheckRateForm
from annotate.common.computed import reports_of
from annotate.common.errors import ServiceError
from annotate.common.pages import go, posted, render_page
from annotate.common.roles import project_view
from annotate.models import Answer, Claim, Project, Role
from annotate.projects import blinding
from annotate.projects import boundaries as boundary_services
from annotate.projects.access import may_create_projects
from annotate.projects.forms import BOUNDARY_FORMS, GuidelinesForm, LabelSchemaForm
from annotate.projects.opening import open_labelling
from annotate.projects.selectors import (
    answers_for_boundaries,
    blinding_check,
    boundary_editor,
    guideline_versions,
    projects_for,
    setup_summary,
)
from annotate.projects.services import set_label_schema, update_guidelines
from annotate.report_kinds import BLINDING

ANSWERS_PER_PAGE = 50


@login_required
def home(request):
    return render(
        request,
        "annotate/home.html",
        {
            "projects": projects_for(request.user),
            "may_create_projects": may_create_projects(request.user),
        },
    )


def _setup_url(project: Project) -> str:
    return reverse("project_setup", kwargs={"slug": project.slug})


# --- Set-up dashboard ------------------------------------------------------------------------


@require_GET
@project_view(Role.LEAD)
def project_setup(request, project, role):
    return _setup_page(request, project, role, LabelSchemaForm(initial=project.schema.as_dict()))


def _setup_page(request, project, role, schema_form, status=200):
    summary = setup_summary(project)
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
            "blinding": reports_of(project).get(BLINDING, "", lambda: blinding_check(project)),
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
            set_label_schema(project=project, schema=form.schema())
        except ServiceError as exc:
            # Shown as a message: once the schema is locked the page has no form to mark.
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Label schema saved: {form.schema().describe()}.")
            return go(request, _setup_url(project))
    return _setup_page(request, project, role, form, status=400)


@require_POST
@project_view(Role.LEAD)
def open_project(request, project, role):
    try:
        project = open_labelling(project=project)
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        queued = project.answers.filter(task_number__isnull=False).count()
        messages.success(request, f"Open for labelling: {queued} answers in the queue")
    return go(request, _setup_url(project))


# --- Guidelines ------------------------------------------------------------------------------


@project_view(Role.LEAD)
def guidelines(request, project, role):
    form = GuidelinesForm(*posted(request)[:1], project=project)
    if request.method == "POST" and form.is_valid():
        try:
            before = project.guidelines_version
            project = update_guidelines(
                project=project,
                guidelines=form.cleaned_data["guidelines"],
                overlap=form.cleaned_data["overlap"],
                author=request.user,
            )
        except ServiceError as exc:
            form.add_error("overlap", str(exc))
        else:
            changed = project.guidelines_version != before
            saved = f"Guidelines saved as v{project.guidelines_version}." if changed else "Saved."
            messages.success(request, saved)
            return redirect("guidelines", slug=project.slug)
    context = {
        "project": project,
        "role": role,
        "form": form,
        "rate_form": CheckRateForm(initial={"check_rate": project.check_rate}),
        "current": "guidelines",
        "versions": guideline_versions(project),
        # Labels exist only once labelling opens: before that there is nothing to re-audit.
        "reaudit": None if project.is_draft else reaudit_list(project),
    }
    status = 400 if request.method == "POST" else 200
    return render(request, "annotate/lead/guidelines.html", context, status=status)


# --- Claim boundaries ------------------------------------------------------------------------


@require_GET
@project_view(Role.LEAD)
def boundaries(request, project, role):
    only_proposed = request.GET.get("proposed") == "1"
    page = Paginator(answers_for_boundaries(project, only_proposed), ANSWERS_PER_PAGE).get_page(
        request.GET.get("page")
    )
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
    return render_page(request, "annotate/lead/boundaries.html", context, partial="answer-list")


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
        **boundary_editor(project, answer, only_proposed=only_proposed),
    }
    return render_page(request, "annotate/lead/boundary_edit.html", context, partial="editor")


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
