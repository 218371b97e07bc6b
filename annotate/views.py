"""Thin HTML views: parse, call one service or selector, render. htmx requests get a named
partial of the same template. Every project URL resolves the user's role first and answers
404 to anyone without one, so a project's existence does not leak."""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotate import exports, gold, selectors, services
from annotate.forms import AnswerLabelForm, ClaimLabelForm, GoldExportForm, SkipForm
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


def task_view(view):
    """Resolve /p/<slug>/tasks/<number>/ to the reviewer's own assignment in one query (the
    project and the role come with it), or 404 -- for anyone else, and for a task that is not
    theirs, alike."""

    @login_required
    @wraps(view)
    def wrapper(request, slug, number, *args, **kwargs):
        assignment = selectors.reviewer_task(request.user, slug, number)
        if assignment is None:
            raise Http404("Not found")
        return view(request, assignment.project, Role.REVIEWER, assignment, *args, **kwargs)

    return wrapper


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


def _screen_context(project, role, screen, errors=None, **extra):
    schema = project.schema
    if errors is None:
        errors = services.screen_errors(screen, complete=False)
    missing = services.screen_errors(screen, complete=True)
    return {
        "project": project,
        "role": role,
        "screen": screen,
        "errors": errors.fields,
        # Items (claims, the answer) still to finish, not fields: choosing "supported" on a
        # claim that needs evidence must not make the count go up.
        "missing": len({key.rsplit(".", 1)[0] for key in missing.fields}),
        "complete": not missing,
        "rubric": RELEVANCE_RUBRIC,
        "editable": screen.assignment.status == Assignment.Status.IN_PROGRESS,
        "support_choices": SUPPORT_CHOICES[schema.support],
        # Which fields the project labels: a field that is off is not on the screen at all.
        "on": {
            **{name: schema.claim(name) for name in ("severity", "requires_evidence")},
            **{name: schema.claim(name) for name in ("evidence", "citations")},
            **{name: schema.answer(name) for name in ("relevance", "abstention")},
            "failure_labels": schema.answer("failure_labels"),
            "answer": bool(schema.answer_fields),
        },
        "evidence_choices": [(passage_id, passage_id) for passage_id in screen.shown],
        "severity_choices": Severity.choices,
        "failure_labels": FAILURE_LABELS,
        "claim_fields": [f for f in CLAIM_FIELDS if schema.claim(_FIELD_OF.get(f, f))],
        "answer_fields": [f for f in ANSWER_FIELDS if schema.answer(f)],
        "saved_at": screen.assignment.touched_at if _drafted(screen) else None,
        **extra,
    }


def _drafted(screen) -> bool:
    """Whether the reviewer has saved anything on this task yet (a fresh task says how drafts
    work instead of 'Saved' at the time it was taken)."""
    a = screen.assignment
    answer_labelled = a.relevance is not None or a.abstention or a.failure_labels or a.note
    return bool(answer_labelled) or any(row.label is not None for row in screen.claims)


# (value, label, css class, keyboard key) of the support choices, in shortcut order, per scale.
SUPPORT_CHOICES = {
    "three_way": [
        (Support.SUPPORTED, "supported", "supported", "1"),
        (Support.CONTRADICTED, "contradicted", "contradicted", "2"),
        (Support.INSUFFICIENT, "insufficient evidence", "insufficient", "3"),
    ],
    "binary": [
        (Support.SUPPORTED, "supported", "supported", "1"),
        (Support.UNSUPPORTED, "unsupported", "contradicted", "2"),
    ],
}
CLAIM_FIELDS = ("support", "severity", "evidence_ids", "evidence_quote", "citations")
_FIELD_OF = {"evidence_ids": "evidence", "evidence_quote": "evidence"}
ANSWER_FIELDS = ("relevance", "abstention", "failure_labels")


@task_view
def task(request, project, role, assignment):
    screen = selectors.task_screen(assignment)
    return render(
        request, "annotate/task.html", _screen_context(project, role, screen, skip_form=SkipForm())
    )


@require_POST
@task_view
def save_claim(request, project, role, assignment, index):
    number = assignment.answer.task_number
    screen = selectors.task_screen(assignment, progress=False)
    row = next((r for r in screen.claims if r.claim.ordinal == index), None)
    if row is None:
        raise Http404("Not found")
    form = ClaimLabelForm(
        request.POST,
        passage_ids=list(screen.shown),
        cited_ids=[c.cited_id for c in row.citations],
    )
    if not form.is_valid():
        return HttpResponse(status=400)
    try:
        row.label, errors = services.save_claim_label(
            assignment=assignment, claim=row.claim, data=form.label_data(), shown=screen.shown
        )
    except ServiceError as exc:
        return _refused(request, project, number, exc)
    if not request.htmx:
        return redirect(f"{_task_url(project, number)}?claim={index}")
    # The screen read before the save is current but for this label and the assignment the
    # save locked and wrote (its save time).
    screen.assignment = row.label.assignment
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
@task_view
def save_answer(request, project, role, assignment):
    number = assignment.answer.task_number
    form = AnswerLabelForm(request.POST)
    if not form.is_valid():
        return HttpResponse(status=400)
    try:
        saved, errors = services.save_answer_label(assignment=assignment, data=form.cleaned_data)
    except ServiceError as exc:
        return _refused(request, project, number, exc)
    if not request.htmx:
        return redirect(_task_url(project, number))
    screen = selectors.task_screen(assignment, progress=False)
    screen.assignment = saved  # the status bar counts the answer labels just saved
    return render(
        request, "annotate/task.html#answer-saved", _screen_context(project, role, screen, errors)
    )


@require_POST
@task_view
def submit(request, project, role, assignment):
    number = assignment.answer.task_number
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
@task_view
def skip(request, project, role, assignment):
    number = assignment.answer.task_number
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
@task_view
def reopen(request, project, role, assignment):
    number = assignment.answer.task_number
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
    return reverse("task", kwargs={"slug": project.slug, "number": number})


def _refused(request, project, number, exc: ServiceError):
    if request.htmx:
        return HttpResponse(str(exc), status=409)
    messages.error(request, str(exc))
    return redirect(_task_url(project, number))


# --- Adjudication (lead) -----------------------------------------------------------------------


@project_view(Role.LEAD)
def adjudication_queue(request, project, role):
    queue = gold.adjudication_queue(project)
    return render(
        request,
        "annotate/adjudication_queue.html",
        {
            "project": project,
            "role": role,
            "queue": queue,
            "doubly_labelled": queue or selectors.doubly_labelled(project),
        },
    )


def _parse_choice(row, request) -> tuple[bool, object]:
    """The gold value the lead chose for one field: (changed, value)."""
    choice = request.POST.get(f"f-{row.key}", "keep")
    if choice == "a":
        return True, row.a
    if choice == "b":
        return True, row.b
    if choice == "other":
        raw = request.POST.get(f"o-{row.key}", "")
        if row.name == "relevance":
            # Only ASCII digits: "²".isdigit() is true, and int("²") raises. Anything else
            # stays a string for the service to refuse with a message.
            return True, int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 4 else raw
        if row.name == "requires_evidence":
            return True, {"True": True, "False": False}.get(raw, raw)
        return True, raw
    return False, None


@project_view(Role.LEAD)
def adjudicate(request, project, role, number):
    answer = selectors.answer_by_task_number(project, number)
    # Freeze the labels first, then read them: a reviewer's reopen cannot slip in between.
    if answer is None or services.start_adjudication(answer=answer, lead=request.user) is None:
        raise Http404("Not found")
    screen = selectors.adjudication_screen(project, number)
    if screen is None:
        raise Http404("Not found")
    error, status = None, 200
    if request.method == "POST":
        decisions = _decisions(screen, request)
        version = request.POST.get("version", "")
        if not (version.isascii() and version.isdigit() and len(version) < 10):
            error, status = STALE_FORM, 400
        elif not decisions and screen.pending:
            error, status = NOTHING_CHOSEN, 400
        else:
            try:
                services.adjudicate(
                    answer=screen.answer,
                    lead=request.user,
                    version=int(version),
                    decisions=decisions,
                    rationale=request.POST.get("rationale", ""),
                )
            except ServiceError as exc:
                error, status = str(exc), 409 if isinstance(exc, services.Conflict) else 400
                screen = selectors.adjudication_screen(project, number)
            else:
                messages.success(request, f"Task {number}: {len(decisions)} decision(s) saved.")
                queue = gold.adjudication_queue(project)
                queue = [d for d in queue if d.answer.task_number != number]
                if queue:
                    next_number = queue[0].answer.task_number
                    return redirect("adjudicate", slug=project.slug, number=next_number)
                return redirect("adjudication_queue", slug=project.slug)
    return render(
        request,
        "annotate/adjudicate.html",
        {
            "project": project,
            "role": role,
            "screen": screen,
            "error": error,
            "posted": _posted_choices(request) if error else {},
            "rationale": request.POST.get("rationale", "") if error else "",
        },
        status=status,
    )


STALE_FORM = "This form is incomplete or out of date: reload the page and choose again."
NOTHING_CHOSEN = (
    "Nothing was chosen: pick the gold value of at least one disagreement, or go back to the "
    "queue to leave this task for later."
)


def _decisions(screen, request) -> list[services.DecisionInput]:
    """The lead's choices that change something: a pending field decided, or gold changed."""
    decisions = []
    rows = [
        *[(c.claim, f) for c in screen.claims for f in c.fields],
        *[(None, f) for f in screen.answer_fields],
    ]
    for claim, row in rows:
        changed, value = _parse_choice(row, request)
        if changed and (row.source == gold.PENDING or value != row.gold):
            decisions.append(services.DecisionInput(claim=claim, field=row.name, value=value))
    return decisions


def _posted_choices(request) -> dict[str, str]:
    """The lead's radio choices, keyed like FieldRow.key, to re-check them after a conflict."""
    return {k[2:]: v for k, v in request.POST.items() if k.startswith("f-")}


@require_http_methods(["GET"])
@project_view(Role.LEAD)
def gold_page(request, project, role):
    """The gold set before it is downloaded: how much is agreed, adjudicated and pending,
    and the download's filters."""
    form = GoldExportForm(request.GET or None)
    return render(
        request,
        "annotate/gold.html",
        {
            "project": project,
            "role": role,
            "form": form,
            "counts": exports.gold_counts(project),
            "written_by_worker": exports.gold_size(project)
            > settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS,
        },
    )


@project_view(Role.LEAD)
def gold_download(request, project, role, fmt):
    if fmt not in ("jsonl", "csv"):
        raise Http404("Not found")
    form = GoldExportForm(request.GET)
    if not form.is_valid():
        return HttpResponse(
            "; ".join(f"{k}: {' '.join(v)}" for k, v in form.errors.items()), status=400
        )
    size = exports.gold_size(project)
    if size > settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS:
        # Too long to stream within a request: a worker writes the file and its page offers
        # the download (the same file again while the labels stay as they are).
        from jobs import services as jobs

        job = jobs.start_gold_export(
            project=project, user=request.user, fmt=fmt, filters=form.options(), rows=size
        )
        return redirect("job", job_id=job.pk)
    rows = exports.gold_rows(project, **form.options())
    body = exports.jsonl(rows) if fmt == "jsonl" else exports.gold_csv(rows)
    content_type = "application/x-ndjson" if fmt == "jsonl" else "text/csv"
    response = StreamingHttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-gold.{fmt}"'
    return response
