"""A lead's adjudication pages: the queue of disagreements (filtered by slice and field, a page
at a time) and one task's screen, where the lead decides each disputed field and walks on to
the queue's next item."""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotate.adjudication import queue, reaudit, selectors, services
from annotate.adjudication.forms import QueueFilterForm, ResolveFlagForm
from annotate.checks.selectors import is_check
from annotate.common.computed import reports_of
from annotate.common.errors import ServiceError
from annotate.common.pages import render_page
from annotate.common.paging import paginate
from annotate.common.roles import project_view
from annotate.gold.pairs import DERIVED, PENDING, answer_fields, claim_fields, pairs_for_project
from annotate.gold.selectors import pair_summary
from annotate.labelling.selectors import single_key_shortcuts
from annotate.models import Flag, Role
from annotate.report_kinds import QUEUE, QUEUE_DECIDED

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
    key = (filters["slice"], filters["field"])
    reports = reports_of(project)
    disagreements = reports.get(
        QUEUE,
        key,
        lambda: queue.adjudication_queue(
            project, summary=pair_summary(project, reports), **filters
        ),
    )
    pager = paginate(disagreements, request.GET, per_page=QUEUE_PAGE)
    # Kept per revision (a decision moves it), like the queue: no query on a kept view.
    decided, disputed = reports.get(
        QUEUE_DECIDED,
        "",
        lambda: selectors.decided_of(project, set(pair_summary(project, reports).scores)),
    )
    context = {
        "decided": decided,
        "disputed": disputed,
        "project": project,
        "role": role,
        "form": form,
        "filtered": any(filters.values()),
        "pager": pager,
        "rows": [
            {"item": item, "fields": [selectors.field_word(f) for f in item.fields]}
            for item in pager.items
        ],
        "doubly_labelled": bool(disagreements) or selectors.doubly_labelled(project),
    }
    if request.htmx and request.htmx.target == "queue":
        return render(request, "annotate/adjudication_queue.html#queue", context)
    # The open flags, oldest first, in one query (the API lists every one of them).
    flags = list(selectors.flags(project)[: FLAGS_SHOWN + 1])
    context["flags"], context["more_flags"] = flags[:FLAGS_SHOWN], len(flags) > FLAGS_SHOWN
    return render(request, "annotate/adjudication_queue.html", context)


FLAGS_SHOWN = 50


@require_POST
@project_view(Role.LEAD)
def resolve_flag(request, project, role, pk):
    """A lead resolves a reviewer's flag (optional words of their own) and goes back to the
    queue's flags."""
    flag = Flag.objects.filter(project=project, pk=pk).first()
    if flag is None:
        raise Http404("Not found")
    form = ResolveFlagForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
        return redirect(reverse("adjudication_queue", args=[project.slug]) + "#flags")
    try:
        services.resolve_flag(flag=flag, lead=request.user, resolution=form.cleaned_data["note"])
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        number = flag.answer.task_number
        messages.success(request, f"The flag on task {number} is resolved.")
    return redirect(reverse("adjudication_queue", args=[project.slug]) + "#flags")


class NoOtherValue(Exception):
    """'other' was chosen for a field without choosing which value."""


def _parse_choice(row, request) -> tuple[bool, object]:
    """The gold value the lead chose for one field: (changed, value). Nothing chosen, or
    'keep', changes nothing."""
    choice = request.POST.get(f"f-{row.key}", "")
    named, value = row.value_of(choice)
    if named:  # a, b, c …: that reviewer's value
        return True, value
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
            messages.success(request, f"Task {number}: {_decisions_saved(saved)}.")
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
            # The "single-key shortcuts" preference holds here as on the labelling screen.
            "shortcuts": single_key_shortcuts(request.user),
            "is_check": is_check(project, screen.answer),
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
        if any(pair.pending for pair in [*answer_pairs, *claim_pairs]) or reaudit.is_reopened(
            answer_pk
        ):
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
    disagreements = reports.get(
        QUEUE,
        (None, None),
        lambda: queue.adjudication_queue(project, summary=pair_summary(project, reports)),
    )
    ahead = [(d.answer_pk, d.task_number) for d in disagreements if d.task_number != number]
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


def _decisions_saved(count: int) -> str:
    return f"{count} decision{'' if count == 1 else 's'} saved"


def _no_other_value(row) -> str:
    where = "the whole answer" if row.item == "answer" else f"claim {int(row.item) + 1}"
    return f"Choose the other value of {row.label} for {where}, or choose a reviewer's."


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


# --- Re-audit after a guidelines change --------------------------------------------------------

REAUDIT_PAGE = 50


@require_http_methods(["GET"])
@project_view(Role.LEAD)
def reaudit_page(request, project, role):
    """The gold decided under older guidelines than the current version, oldest version
    first, a page at a time, each with keep and re-open."""
    found = reaudit.reaudit_list(project)
    pager = paginate(found.rows, request.GET, per_page=REAUDIT_PAGE)
    context = {
        "project": project,
        "role": role,
        "current": "guidelines",
        "reaudit": found,
        "pager": pager,
    }
    return render_page(request, "annotate/lead/reaudit.html", context, partial="reaudit-table")


REAUDIT_DONE = {
    "keep": "Task {number}: its gold stands under guidelines v{version}.",
    "reopen": "Task {number} is back in the adjudication queue.",
}


@require_POST
@project_view(Role.LEAD)
def reaudit_action(request, project, role, number):
    """Keep or re-open one task's gold, then back to the list (the same page of it)."""
    action = request.POST.get("action", "")
    answer = selectors.answer_by_task_number(project, number)
    if answer is None:
        raise Http404("Not found")
    act = {"keep": reaudit.keep_decision, "reopen": reaudit.reopen_decision}.get(action)
    if act is None:
        messages.error(request, "Choose keep or re-open.")
    else:
        try:
            done = act(project=project, answer=answer, lead=request.user)
        except ServiceError as exc:
            messages.error(request, f"Task {number}: {exc}")
        else:
            done_text = REAUDIT_DONE[action]
            messages.success(
                request, done_text.format(number=number, version=done.guideline_version)
            )
    page = request.POST.get("page", "")
    query = f"?page={page}" if page.isascii() and page.isdigit() and len(page) < 6 else ""
    return redirect(reverse("reaudit", args=[project.slug]) + query)


@require_POST
@project_view(Role.LEAD)
def reaudit_keep_all(request, project, role):
    """Keep every listed answer decided under one older version."""
    raw = request.POST.get("decided_under", "")
    if not (raw.isascii() and raw.isdigit() and len(raw) < 10):
        messages.error(request, "Choose which version's gold to keep.")
        return redirect("reaudit", slug=project.slug)
    try:
        kept = reaudit.keep_all(project=project, lead=request.user, decided_under=int(raw))
    except ServiceError as exc:
        messages.error(request, str(exc))
    else:
        under = f"v{raw}" if int(raw) else "no guidelines"
        messages.success(
            request,
            f"Kept {kept} answer{'' if kept == 1 else 's'} decided under {under}: "
            f"{'it stands' if kept == 1 else 'they stand'} under v{project.guidelines_version}.",
        )
    return redirect("reaudit", slug=project.slug)
