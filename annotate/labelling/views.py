"""The reviewer's labelling pages: a task's screen, its drafts (one claim, the whole answer),
submitting, skipping and reopening it, the reviewer's submitted tasks, and a person's
preferences for the screen. Thin HTML views: parse, call one service or selector, render.
htmx requests get a named partial of the same template. A task URL resolves the reviewer's
own assignment first (task_view) and answers 404 to anyone else."""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from annotate.common.errors import ServiceError
from annotate.common.paging import paginate
from annotate.common.roles import project_view
from annotate.labelling import selectors, task_status
from annotate.labelling.forms import (
    AnswerLabelForm,
    ClaimLabelForm,
    FlagForm,
    MyTasksFilterForm,
    PreferencesForm,
    SkipForm,
)
from annotate.labelling.preferences import set_preferences
from annotate.labelling.services import (
    StaleDraft,
    can_reopen,
    flag_task,
    reopen_task,
    save_answer_label,
    save_claim_label,
    submit_labels,
)
from annotate.models import FAILURE_LABELS, RELEVANCE_RUBRIC, Assignment, Role, Severity, Support
from annotate.queue.services import release_task
from annotate.queue.views import take_next


def task_view(view=None, *, page: bool = True):
    """Resolve /p/<slug>/tasks/<number>/ to the reviewer's own assignment in one query (the
    project and the role come with it), or 404 -- for anyone else, and for a task that is not
    theirs, alike. `page=False` for a draft save, which needs less of it."""
    if view is None:
        return lambda view: task_view(view, page=page)

    @login_required
    @wraps(view)
    def wrapper(request, slug, number, *args, **kwargs):
        assignment = selectors.reviewer_task(request.user, slug, number, page=page)
        if assignment is None:
            raise Http404("Not found")
        return view(request, assignment.project, Role.REVIEWER, assignment, *args, **kwargs)

    return wrapper


def _screen_context(project, role, screen, errors=None, *, selected=None, **extra):
    """The labelling page's context. `errors`: the field errors to show (a refused submission
    passes its own); `selected`: the claim whose editor the page renders (?claim=N)."""
    schema = project.schema
    status = task_status.of(screen, errors)
    rows = screen.claims
    if selected is None or not 0 <= selected < len(rows):
        selected = next((r.claim.ordinal for r in rows if not r.complete), 0)
    chosen = rows[selected] if rows else None
    label = chosen.label if chosen else None
    number = screen.answer.task_number
    return {
        "project": project,
        "role": role,
        "screen": screen,
        "progress": screen.progress,
        "status": status,
        "errors": status.answer.problems,
        "answer_state": status.answer,
        "selected": chosen,
        # The passage controls (evidence, citation verdict) are set for the selected claim.
        "selected_evidence": set(label.evidence_ids) if label else set(),
        "selected_cited": {c.cited_id for c in chosen.citations} if chosen else set(),
        "selected_quotes": [(label.evidence_quote, "quote")]
        if label and label.evidence_quote
        else [],
        "claims_url": reverse("save_claim", args=[project.slug, number, 0])[: -len("0/")],
        "answer_field_names": [f for f in ANSWER_FIELDS if schema.answer(f)],
        "rubric": RELEVANCE_RUBRIC,
        "editable": screen.assignment.status == Assignment.Status.IN_PROGRESS,
        "reopenable": can_reopen(screen.assignment),
        "support_choices": SUPPORT_CHOICES[schema.support],
        # Which fields the project labels: a field that is off is not on the screen at all.
        "on": _fields_on(schema, screen.answer),
        "severity_choices": SEVERITY_CHOICES,
        "failure_labels": FAILURE_KEYS,
        "relevance_choices": [(v, t) for v, t in RELEVANCE_RUBRIC.items()],
        "shortcuts": getattr(screen.assignment, "single_key_shortcuts", True),
        "flag_form": FlagForm(),
        "saved_at": screen.assignment.touched_at if _drafted(screen) else None,
        **extra,
    }


def _fields_on(schema, answer) -> dict[str, bool]:
    """Which fields the project labels: a field that is off is not on the screen at all."""
    return {
        **{name: schema.claim(name) for name in ("severity", "requires_evidence")},
        **{name: schema.claim(name) for name in ("evidence", "citations")},
        **{name: schema.answer(name) for name in ("relevance", "abstention")},
        "failure_labels": schema.answer("failure_labels"),
        "abstention_asked": schema.answer("abstention") and answer.abstained,
    }


def _drafted(screen) -> bool:
    """Whether the reviewer has saved anything on this task yet (a fresh task says how drafts
    work instead of 'Saved' at the time it was taken)."""
    return screen.assignment.draft_version > 0 or any(r.label is not None for r in screen.claims)


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
ANSWER_FIELDS = ("relevance", "abstention", "failure_labels")
# Severity by value: Shift and the digit of its rank (⇧1 none … ⇧4 critical).
SEVERITY_CHOICES = [
    (value, text, "", f"⇧{i}") for i, (value, text) in enumerate(Severity.choices, start=1)
]
# Failure labels, each with the letter that toggles it.
FAILURE_KEYS = [
    ("missing_evidence", "m"),
    ("unsupported_claim", "u"),
    ("wrong_citation", "w"),
    ("false_abstention", "f"),
]
assert [value for value, _ in FAILURE_KEYS] == list(FAILURE_LABELS)


@task_view
def task(request, project, role, assignment):
    screen = selectors.task_screen(assignment)
    context = _screen_context(
        project,
        role,
        screen,
        selected=_claim_param(request),
        skip_form=SkipForm(),
        undo=_pop_undo(request, screen),
    )
    return render(request, "annotate/task.html", context)


def _claim_param(request) -> int | None:
    return _small_number(request.GET.get("claim", ""))


def _small_number(value: str) -> int | None:
    """A count or an index from a form or a URL: ASCII digits only ("²".isdigit() is true, and
    int() refuses it) and short (int() refuses 4,300 digits): anything else is None."""
    return int(value) if value.isascii() and value.isdigit() and len(value) < 10 else None


def _pop_undo(request, screen) -> int | None:
    """The task just submitted, once, for the 'Undo' on the page that follows it."""
    if UNDO_KEY not in request.session:
        return None
    number = request.session.pop(UNDO_KEY)
    return number if number != screen.answer.task_number else None


UNDO_KEY = "claimdesk_undo_task"


def _invalid(form) -> HttpResponse:
    """A refused draft: each field's problem, as text the page's script announces."""
    problems = [f"{name}: {' '.join(errors)}" for name, errors in form.errors.items()]
    return HttpResponse("\n".join(problems), status=400, content_type="text/plain; charset=utf-8")


@require_POST
@task_view(page=False)
def save_claim(request, project, role, assignment, index):
    """A draft of one claim. The reply to the page's script is that claim alone (its mark and
    its draft, problems and missing fields in data-label): the script derives the status
    from every claim's; it never needs the other claims read again."""
    number = assignment.answer.task_number
    target = selectors.claim_to_save(assignment, index, request.POST.getlist("evidence_ids"))
    if target is None:
        raise Http404("Not found")
    form = ClaimLabelForm(
        request.POST,
        passage_ids=list(target.shown),
        cited_ids=[c.cited_id for c in target.citations],
    )
    if not form.is_valid():
        return _invalid(form)
    try:
        label, _ = save_claim_label(
            assignment=assignment,
            claim=target.claim,
            data=form.label_data(),
            citations=target.citations,
            shown=target.shown,
            version=form.cleaned_data["version"],
            stored=target.label,
        )
    except StaleDraft as exc:
        if not request.htmx:
            return _stale_page(request, project, role, assignment, exc, selected=index)
        target = selectors.claim_to_save(assignment, index, exc.current.evidence_ids)
        return _claim_reply(request, assignment, target, exc.current, stale=str(exc))
    except ServiceError as exc:
        return _refused(request, project, number, exc)
    if not request.htmx:
        messages.success(request, f"Claim {index + 1} saved.")
        return redirect(f"{_task_url(project, number)}?claim={index}")
    return _claim_reply(request, assignment, target, label)


def _claim_reply(request, assignment, target, label, *, stale: str = ""):
    row = selectors.ClaimRow(target.claim, label if label.pk or stale else None, target.citations)
    task_status.check_claim(row, target.shown, assignment.project.schema)
    context = {
        "row": row,
        "row_text": assignment.answer.text[row.claim.start : row.claim.end],
        "stale": stale,
    }
    return render(request, "annotate/task.html#claim-saved", context, status=409 if stale else 200)


@require_POST
@task_view(page=False)
def save_answer(request, project, role, assignment):
    number = assignment.answer.task_number
    form = AnswerLabelForm(request.POST)
    if not form.is_valid():
        return _invalid(form)
    data = dict(form.cleaned_data)
    version = data.pop("version")
    try:
        saved, _ = save_answer_label(assignment=assignment, data=data, version=version)
    except StaleDraft as exc:
        if not request.htmx:
            return _stale_page(request, project, role, assignment, exc)
        return _answer_reply(request, project, exc.current, stale=str(exc))
    except ServiceError as exc:
        return _refused(request, project, number, exc)
    if not request.htmx:
        messages.success(request, "Whole-answer labels saved.")
        return redirect(_task_url(project, number))
    return _answer_reply(request, project, saved)


def _answer_reply(request, project, assignment, *, stale: str = ""):
    answer_state = task_status.check_answer(assignment)
    context = {
        "project": project,
        "screen": {"assignment": assignment, "answer": assignment.answer},
        "errors": answer_state.problems,
        "answer_state": answer_state,
        "answer_field_names": [f for f in ANSWER_FIELDS if project.schema.answer(f)],
        "on": _fields_on(project.schema, assignment.answer),
        "relevance_choices": list(RELEVANCE_RUBRIC.items()),
        "failure_labels": FAILURE_KEYS,
        "editable": True,
        "stale": stale,
    }
    return render(request, "annotate/task.html#answer-saved", context, status=409 if stale else 200)


def _stale_page(request, project, role, assignment, exc, *, selected=None):
    """409 for a form posted without the page's script: the page again, showing what is
    stored now, and saying that this change was not saved."""
    assignment = selectors.reviewer_task(request.user, project.slug, assignment.answer.task_number)
    screen = selectors.task_screen(assignment)
    context = _screen_context(
        project, role, screen, selected=selected, skip_form=SkipForm(), stale=str(exc)
    )
    return render(request, "annotate/task.html", context, status=409)


@require_POST
@task_view
def submit(request, project, role, assignment):
    number = assignment.answer.task_number
    try:
        errors = submit_labels(assignment=assignment)
    except ServiceError as exc:
        return _refused(request, project, number, exc)
    if errors:
        screen = selectors.task_screen(assignment)
        messages.error(request, "Some labels are missing or invalid: see the marked fields.")
        context = _screen_context(project, role, screen, errors, skip_form=SkipForm())
        return render(request, "annotate/task.html", context, status=400)
    messages.success(request, f"Task {number} submitted.")
    request.session[UNDO_KEY] = number
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
        release_task(assignment=assignment, reason=form.cleaned_data["reason"])
    except ServiceError as exc:
        return _refused(request, project, number, exc)
    messages.info(request, f"Task {number} skipped.")
    return take_next(request, project.slug)


@require_POST
@task_view
def reopen(request, project, role, assignment):
    number = assignment.answer.task_number
    try:
        reopen_task(assignment=assignment)
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("my_tasks", slug=project.slug)
    messages.info(request, f"Task {number} is open again: change it and submit it again.")
    return redirect(_task_url(project, number))


@require_http_methods(["GET", "POST"])
@task_view
def flag(request, project, role, assignment):
    """Flag the task for the lead, with a reason: from the task screen's dialog, or this page
    where scripts are off. The reviewer learns only that their flag is stored."""
    number = assignment.answer.task_number
    form = FlagForm(request.POST if request.method == "POST" else None)
    error = ""
    if form.is_valid():
        try:
            flag_task(
                assignment=assignment,
                reason=form.cleaned_data["reason"],
                note=form.cleaned_data["note"],
            )
        except ServiceError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Task {number} is flagged for the lead.")
            return redirect(_task_url(project, number))
    elif form.is_bound:
        error = "Choose what is wrong with this task."
    context = {"project": project, "role": role, "number": number, "form": form, "error": error}
    return render(request, "annotate/flag.html", context, status=400 if error else 200)


MY_TASKS_PAGE = 50


@require_http_methods(["GET"])
@project_view(Role.REVIEWER)
def my_tasks(request, project, role):
    """The reviewer's tasks (in progress and submitted) with their questions, newest first,
    searched and filtered in the database and shown a page at a time (a reviewer of a large
    project submits thousands), in the same queries whatever the page; an htmx request (a
    search, a filter, another page) gets the table alone."""
    form = MyTasksFilterForm(request.GET)
    filters = form.filters()
    pager = paginate(
        selectors.my_tasks(request.user, project, **filters), request.GET, per_page=MY_TASKS_PAGE
    )
    for assignment in pager.items:
        assignment.reopenable = can_reopen(assignment)
    context = {
        "project": project,
        "role": role,
        "pager": pager,
        "form": form,
        "filtered": bool(filters["status"] or filters["search"]),
    }
    if request.htmx and request.htmx.target == "my-tasks":
        return render(request, "annotate/my_tasks.html#tasks", context)
    context["progress"] = selectors.reviewer_progress(request.user, project)
    context["reopen_minutes"] = settings.CLAIMDESK_REOPEN_MINUTES
    return render(request, "annotate/my_tasks.html", context)


def _task_url(project, number) -> str:
    return reverse("task", kwargs={"slug": project.slug, "number": number})


def _refused(request, project, number, exc: ServiceError):
    if request.htmx:
        return HttpResponse(str(exc), status=409)
    messages.error(request, str(exc))
    return redirect(_task_url(project, number))


@login_required
@require_http_methods(["GET", "POST"])
def preferences(request):
    back = request.POST.get("next") or request.GET.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        back = ""
    if request.method == "POST":
        form = PreferencesForm(request.POST)
        if form.is_valid():
            set_preferences(
                user=request.user, single_key_shortcuts=form.cleaned_data["single_key_shortcuts"]
            )
            messages.success(request, "Preferences saved.")
            return redirect(back or "preferences")
    else:
        form = PreferencesForm(
            initial={"single_key_shortcuts": selectors.single_key_shortcuts(request.user)}
        )
    return render(request, "annotate/preferences.html", {"form": form, "next": back})
