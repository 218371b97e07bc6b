"""Thin HTML views: parse, call one service or selector, render. htmx requests get a named
partial of the same template. Every project URL resolves the user's role first and answers
404 to anyone without one, so a project's existence does not leak."""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotate import selectors, services, task_status
from annotate.access import may_create_projects
from annotate.adjudication import queue as adjudication
from annotate.common.errors import ServiceError
from annotate.common.paging import paginate
from annotate.common.roles import project_view
from annotate.forms import (
    AnswerLabelForm,
    ClaimLabelForm,
    QueueFilterForm,
    SkipForm,
)
from annotate.gold.pairs import DERIVED, PENDING, answer_fields, claim_fields, pairs_for_project
from annotate.gold.selectors import pair_summary
from annotate.models import (
    FAILURE_LABELS,
    RELEVANCE_RUBRIC,
    Assignment,
    Role,
    Severity,
    Support,
)
from annotate.report_cache import reports_of


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


@login_required
def home(request):
    return render(
        request,
        "annotate/home.html",
        {
            "projects": selectors.projects_for(request.user),
            "may_create_projects": may_create_projects(request.user),
        },
    )


@project_view()
def project_page(request, project, role):
    if role == Role.LEAD:
        return redirect("project_setup", slug=project.slug)
    return render(
        request,
        "annotate/reviewer_home.html",
        {
            "project": project,
            "role": role,
            "progress": selectors.reviewer_progress(request.user, project),
            "current": selectors.task_in_progress(request.user, project),
            "reopen_minutes": settings.CLAIMDESK_REOPEN_MINUTES,
        },
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
        "reopenable": services.can_reopen(screen.assignment),
        "support_choices": SUPPORT_CHOICES[schema.support],
        # Which fields the project labels: a field that is off is not on the screen at all.
        "on": _fields_on(schema, screen.answer),
        "severity_choices": SEVERITY_CHOICES,
        "failure_labels": FAILURE_KEYS,
        "relevance_choices": [(v, t) for v, t in RELEVANCE_RUBRIC.items()],
        "shortcuts": getattr(screen.assignment, "single_key_shortcuts", True),
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
        label, _ = services.save_claim_label(
            assignment=assignment,
            claim=target.claim,
            data=form.label_data(),
            citations=target.citations,
            shown=target.shown,
            version=form.cleaned_data["version"],
            stored=target.label,
        )
    except services.StaleDraft as exc:
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
        saved, _ = services.save_answer_label(assignment=assignment, data=data, version=version)
    except services.StaleDraft as exc:
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
        errors = services.submit_labels(assignment=assignment)
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
    messages.info(request, f"Task {number} is open again: change it and submit it again.")
    return redirect(_task_url(project, number))


MY_TASKS_PAGE = 50


@require_http_methods(["GET"])
@project_view(Role.REVIEWER)
def my_tasks(request, project, role):
    """The reviewer's submitted tasks, newest first, a page at a time (a reviewer of a large
    project submits thousands); an htmx request for another page gets the table alone."""
    pager = paginate(
        selectors.my_submitted_tasks(request.user, project), request.GET, per_page=MY_TASKS_PAGE
    )
    for assignment in pager.items:
        assignment.reopenable = services.can_reopen(assignment)
    context = {"project": project, "role": role, "pager": pager}
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


# --- Adjudication (lead) -----------------------------------------------------------------------


QUEUE_PAGE = 50


@require_http_methods(["GET"])
@project_view(Role.LEAD)
def adjudication_queue(request, project, role):
    """The disagreements, most serious first, a page at a time, filtered by slice and field;
    an htmx request gets the table alone."""
    schema = project.schema
    decidable = [f for f in claim_fields(schema) if f not in DERIVED]
    decidable += list(answer_fields(schema))
    form = QueueFilterForm(request.GET, fields=[(f, selectors.field_word(f)) for f in decidable])
    filters = form.filters()
    key = ("adjudication-queue", filters["slice"], filters["field"])
    reports = reports_of(project)
    queue = reports.get(
        key,
        lambda: adjudication.adjudication_queue(
            project, summary=pair_summary(project, reports), **filters
        ),
    )
    pager = paginate(queue, request.GET, per_page=QUEUE_PAGE)
    context = {
        "project": project,
        "role": role,
        "form": form,
        "filtered": any(filters.values()),
        "pager": pager,
        "rows": [
            {"item": item, "fields": [selectors.field_word(f) for f in item.fields]}
            for item in pager.items
        ],
        "doubly_labelled": bool(queue) or selectors.doubly_labelled(project),
    }
    if request.htmx and request.htmx.target == "queue":
        return render(request, "annotate/adjudication_queue.html#queue", context)
    return render(request, "annotate/adjudication_queue.html", context)


class NoOtherValue(Exception):
    """'other' was chosen for a field without choosing which value."""


def _parse_choice(row, request) -> tuple[bool, object]:
    """The gold value the lead chose for one field: (changed, value). Nothing chosen, or
    'keep', changes nothing."""
    choice = request.POST.get(f"f-{row.key}", "")
    if choice == "a":
        return True, row.a
    if choice == "b":
        return True, row.b
    if choice == "other":
        raw = request.POST.get(f"o-{row.key}", "")
        if raw == "":
            raise NoOtherValue(row)
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
    try:
        lock = answer and services.start_adjudication(answer=answer, lead=request.user)
    except services.NotYetAdjudicable as exc:
        context = {"project": project, "role": role, "number": number, "reason": str(exc)}
        return render(request, "annotate/adjudication_waiting.html", context)
    if lock is None:
        raise Http404("Not found")
    screen = selectors.adjudication_screen(project, number)
    if screen is None:
        raise Http404("Not found")
    error, status = None, 200
    if request.method == "POST":
        _carry_queue(request, project, number)  # as read before this decision moves it
        error, status, saved = _save_decisions(request, screen)
        if error is None:
            messages.success(request, f"Task {number}: {saved} decision(s) saved.")
            next_number = _next_to_adjudicate(request, project, number)
            if next_number is not None:
                return redirect("adjudicate", slug=project.slug, number=next_number)
            return redirect("adjudication_queue", slug=project.slug)
        if saved is None:  # the service refused: show what is saved now
            screen = selectors.adjudication_screen(project, number)
    return render(
        request,
        "annotate/adjudicate.html",
        {
            "project": project,
            "role": role,
            "screen": screen,
            "error": error,
            "posted": _posted_choices(request) if error else {},
            "posted_other": _posted_others(request) if error else {},
            "rationales": _rationales(screen, request if error else None),
            "rationale": request.POST.get("rationale", "") if error else "",
        },
        status=status,
    )


# How many of the queue's next items a lead's session carries from one decision to the next.
UPCOMING_KEPT = 50


def _next_to_adjudicate(request, project, number: int) -> int | None:
    """The task to adjudicate after `number`: the next item of the queue as the lead's session
    last read it, still waiting for a decision. Each decision moves the data version, so the
    queue read afresh after each one derived every pair of the project again (2 s at 10,000
    answers, for every decision); here the queue is read once per UPCOMING_KEPT decisions and
    each candidate is checked alone (its own pairs: three small queries). Disagreements that
    arrive meanwhile join when the carried list runs out."""
    key = _upcoming_key(project)
    upcoming = [item for item in request.session.get(key, []) if item[1] != number]
    read_afresh = False
    while True:
        if not upcoming:
            if read_afresh:
                break
            read_afresh = True
            upcoming = _queue_ahead(project, number)
            continue
        answer_pk, candidate = upcoming[0]
        answer_pairs, claim_pairs = pairs_for_project(project, answer_ids=[answer_pk])
        if any(pair.pending for pair in [*answer_pairs, *claim_pairs]):
            request.session[key] = upcoming
            return candidate
        upcoming.pop(0)  # decided meanwhile, by another lead or in another tab
    request.session.pop(key, None)
    return None


def _upcoming_key(project) -> str:
    return f"claimdesk_upcoming_{project.pk}"


def _queue_ahead(project, number: int) -> list[tuple[int, int]]:
    """(answer pk, task number) of the queue's first items other than `number`."""
    reports = reports_of(project)
    queue = reports.get(
        ("adjudication-queue", None, None),
        lambda: adjudication.adjudication_queue(project, summary=pair_summary(project, reports)),
    )
    ahead = [(d.answer_pk, d.task_number) for d in queue if d.task_number != number]
    return ahead[:UPCOMING_KEPT]


def _carry_queue(request, project, number: int) -> None:
    """Before the first decision of a walk, the queue as it is now (kept from the queue page
    the lead came from, usually): read after the decision, it would be derived again."""
    key = _upcoming_key(project)
    if not request.session.get(key):
        request.session[key] = _queue_ahead(project, number)


def _save_decisions(request, screen) -> tuple[str | None, int, int | None]:
    """Parse the lead's choices and save them: (None, 302, decisions saved), or (what went
    wrong, status, 0 when refused before the service, None when the service refused)."""
    version = request.POST.get("version", "")
    try:
        decisions = _decisions(screen, request)
    except NoOtherValue as exc:
        return _no_other_value(exc.args[0]), 400, 0
    if not (version.isascii() and version.isdigit() and len(version) < 10):
        return STALE_FORM, 400, 0
    if not decisions and screen.pending:
        return NOTHING_CHOSEN, 400, 0
    try:
        services.adjudicate(
            answer=screen.answer,
            lead=request.user,
            version=int(version),
            decisions=decisions,
            rationale=request.POST.get("rationale", ""),
        )
    except services.Conflict as exc:
        return str(exc), 409, None
    except ServiceError as exc:
        return str(exc), 400, None
    return None, 302, len(decisions)


def _no_other_value(row) -> str:
    where = "the whole answer" if row.item == "answer" else f"claim {int(row.item) + 1}"
    return f"Choose the other value of {row.label} for {where}, or choose A or B."


STALE_FORM = "This form is incomplete or out of date: reload the page and choose again."
NOTHING_CHOSEN = (
    "Nothing was chosen: pick the gold value of at least one disagreement, or go back to the "
    "queue to leave this task for later."
)


def _decisions(screen, request) -> list[services.DecisionInput]:
    """The lead's choices that change something: a pending field decided, or gold changed.
    Each carries the rationale written for its claim (r-<claim index>) or for the whole
    answer (r-answer); an empty one falls back to the save's shared rationale."""
    decisions = []
    rows = [
        *[(c.claim, f) for c in screen.claims for f in c.fields],
        *[(None, f) for f in screen.answer_fields],
    ]
    for claim, row in rows:
        changed, value = _parse_choice(row, request)
        if changed and (row.source == PENDING or value != row.gold):
            rationale = request.POST.get(f"r-{row.item}", "")
            decisions.append(
                services.DecisionInput(
                    claim=claim, field=row.name, value=value, rationale=rationale
                )
            )
    return decisions


def _posted_choices(request) -> dict[str, str]:
    """The lead's radio choices, keyed like FieldRow.key, to re-check them after a conflict."""
    return {k[2:]: v for k, v in request.POST.items() if k.startswith("f-")}


def _posted_others(request) -> dict[str, str]:
    """The values chosen in the 'other' selects, keyed like FieldRow.key."""
    return {k[2:]: v for k, v in request.POST.items() if k.startswith("o-")}


def _rationales(screen, request=None) -> dict[str, str]:
    """The rationale box of each item (a claim's index, or 'answer'): what the lead typed, when
    a save was refused, else the rationale of the item's latest decision."""
    out = {}
    for item in [*screen.claims, screen]:
        key = item.key
        if request is not None:
            out[key] = request.POST.get(f"r-{key}", "")
        else:
            out[key] = item.rationale
    return out
