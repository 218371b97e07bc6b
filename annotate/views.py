"""Thin HTML views: parse, call one service or selector, render. htmx requests get a named
partial of the same template. Every project URL resolves the user's role first and answers
404 to anyone without one, so a project's existence does not leak."""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotate import selectors, services
from annotate.forms import AnswerLabelForm, ClaimLabelForm, SkipForm
from annotate.models import (
    FAILURE_LABELS,
    RELEVANCE_RUBRIC,
    Assignment,
    Role,
    Severity,
    Support,
)
from annotate.services import ServiceError


def project_view(*roles: str):
    """Resolve /p/<slug>/ to (project, role) for the logged-in user, or 404."""

    def decorator(view):
        @login_required
        @wraps(view)
        def wrapper(request, slug, *args, **kwargs):
            found = selectors.project_for(request.user, slug)
            if found is None or (roles and found[1] not in roles):
                raise Http404("Not found")
            project, role = found
            return view(request, project, role, *args, **kwargs)

        return wrapper

    return decorator


@login_required
def home(request):
    return render(request, "annotate/home.html", {"projects": selectors.projects_for(request.user)})


@project_view()
def project_page(request, project, role):
    if role == Role.LEAD:
        return redirect("project_setup", slug=project.slug)
    progress = selectors.reviewer_progress(request.user, project)
    return render(
        request,
        "annotate/reviewer_home.html",
        {"project": project, "role": role, "progress": progress},
    )


@require_POST
@project_view(Role.REVIEWER)
def take_next(request, project, role):
    try:
        assignment = services.next_task(project=project, reviewer=request.user)
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("project", slug=project.slug)
    if assignment is None:
        return redirect("queue_empty", slug=project.slug)
    return redirect("task", slug=project.slug, number=assignment.answer.task_number)


@project_view(Role.REVIEWER)
def queue_empty(request, project, role):
    progress = selectors.reviewer_progress(request.user, project)
    return render(
        request,
        "annotate/queue_empty.html",
        {"project": project, "role": role, "progress": progress},
    )


def _assignment_or_404(request, project, number):
    assignment = selectors.task_for_reviewer(request.user, project, number)
    if assignment is None:
        raise Http404("Not found")
    return assignment


def _screen_context(project, role, screen, errors=None, **extra):
    if errors is None:
        errors = services.screen_errors(screen, complete=False)
    missing = services.screen_errors(screen, complete=True)
    return {
        "project": project,
        "role": role,
        "screen": screen,
        "errors": errors.fields,
        "missing": len(missing.fields),
        "complete": not missing,
        "rubric": RELEVANCE_RUBRIC,
        "editable": screen.assignment.status == Assignment.Status.IN_PROGRESS,
        "support_choices": SUPPORT_CHOICES,
        "severity_choices": Severity.choices,
        "failure_labels": FAILURE_LABELS,
        "claim_fields": CLAIM_FIELDS,
        "answer_fields": ANSWER_FIELDS,
        "saved_at": screen.assignment.touched_at,
        **extra,
    }


# (value, label, keyboard key, css class) of the support choices, in shortcut order.
SUPPORT_CHOICES = [
    (Support.SUPPORTED, "supported", "1", "supported"),
    (Support.CONTRADICTED, "contradicted", "2", "contradicted"),
    (Support.INSUFFICIENT, "insufficient evidence", "3", "insufficient"),
]
CLAIM_FIELDS = ("support", "severity", "evidence_ids", "evidence_quote", "citations")
ANSWER_FIELDS = ("relevance", "abstention", "failure_labels")


@project_view(Role.REVIEWER)
def task(request, project, role, number):
    assignment = _assignment_or_404(request, project, number)
    screen = selectors.task_screen(assignment)
    return render(
        request, "annotate/task.html", _screen_context(project, role, screen, skip_form=SkipForm())
    )


@require_POST
@project_view(Role.REVIEWER)
def save_claim(request, project, role, number, index):
    assignment = _assignment_or_404(request, project, number)
    screen = selectors.task_screen(assignment)
    row = next((r for r in screen.claims if r.claim.ordinal == index), None)
    if row is None:
        raise Http404("Not found")
    form = ClaimLabelForm(
        request.POST,
        passage_ids=[p.passage.passage_id for p in screen.passages],
        cited_ids=[c.cited_id for c in row.citations],
    )
    if not form.is_valid():
        return HttpResponse(status=400)
    try:
        _, errors = services.save_claim_label(
            assignment=assignment, claim=row.claim, data=form.label_data()
        )
    except ServiceError as exc:
        return _refused(request, project, number, exc)
    if not request.htmx:
        return redirect(f"{_task_url(project, number)}?claim={index}")
    screen = selectors.task_screen(assignment)
    row = screen.claims[index]
    context = _screen_context(
        project,
        role,
        screen,
        errors,
        row=row,
        row_text=screen.answer.text[row.claim.start : row.claim.end],
    )
    return render(request, "annotate/task.html#claim-saved", context)


@require_POST
@project_view(Role.REVIEWER)
def save_answer(request, project, role, number):
    assignment = _assignment_or_404(request, project, number)
    form = AnswerLabelForm(request.POST)
    if not form.is_valid():
        return HttpResponse(status=400)
    try:
        _, errors = services.save_answer_label(assignment=assignment, data=form.cleaned_data)
    except ServiceError as exc:
        return _refused(request, project, number, exc)
    if not request.htmx:
        return redirect(_task_url(project, number))
    screen = selectors.task_screen(assignment)
    return render(
        request, "annotate/task.html#answer-saved", _screen_context(project, role, screen, errors)
    )


@require_POST
@project_view(Role.REVIEWER)
def submit(request, project, role, number):
    assignment = _assignment_or_404(request, project, number)
    try:
        errors = services.submit_labels(assignment=assignment)
    except ServiceError as exc:
        return _refused(request, project, number, exc)
    if errors:
        screen = selectors.task_screen(assignment)
        messages.error(request, "Some labels are missing or invalid: see the marked fields.")
        context = _screen_context(project, role, screen, errors, skip_form=SkipForm())
        return render(request, "annotate/task.html", context, status=400)
    messages.success(request, f"Task {number} submitted.")
    return take_next(request, project.slug)


@require_POST
@project_view(Role.REVIEWER)
def skip(request, project, role, number):
    assignment = _assignment_or_404(request, project, number)
    form = SkipForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Say why you skip this task (a lead reads it).")
        return redirect(_task_url(project, number))
    try:
        services.release_task(assignment=assignment, reason=form.cleaned_data["reason"])
    except ServiceError as exc:
        return _refused(request, project, number, exc)
    messages.info(request, f"Task {number} skipped.")
    return take_next(request, project.slug)


@require_POST
@project_view(Role.REVIEWER)
def reopen(request, project, role, number):
    assignment = _assignment_or_404(request, project, number)
    try:
        services.reopen_task(assignment=assignment)
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("my_tasks", slug=project.slug)
    return redirect(_task_url(project, number))


@require_http_methods(["GET"])
@project_view(Role.REVIEWER)
def my_tasks(request, project, role):
    return render(
        request,
        "annotate/my_tasks.html",
        {
            "project": project,
            "role": role,
            "tasks": selectors.my_submitted_tasks(request.user, project),
            "progress": selectors.reviewer_progress(request.user, project),
        },
    )


def _task_url(project, number) -> str:
    from django.urls import reverse

    return reverse("task", kwargs={"slug": project.slug, "number": number})


def _refused(request, project, number, exc: ServiceError):
    if request.htmx:
        return HttpResponse(str(exc), status=409)
    messages.error(request, str(exc))
    return redirect(_task_url(project, number))
