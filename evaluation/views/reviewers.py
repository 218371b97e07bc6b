"""The lead's Reviewers page: one row per reviewer (tasks, time per claim, throughput, share
overruled, accuracy on gold checks and the drift flag, kappa with each co-reviewer), sortable
on the server, with its CSV. The table is the stored Reviewers report (computed once per
revision of the project, by a worker when the project is large): the page only arranges it."""

from __future__ import annotations

import io
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_POST

from annotate.common import computed, csvsafe
from annotate.common.pages import render_page
from annotate.common.roles import project_view
from annotate.models import Role
from evaluation import clearances
from evaluation.report_kinds import REVIEWERS
from evaluation.views.agreement import FIELD_TITLES

TEMPLATE = "evaluation/reviewers.html"
# Checks compare a claim's citations and an answer's failure labels whole (accuracy only);
# kappa between reviewers reads each citation verdict as an item ("citation").
TITLES = {
    **FIELD_TITLES,
    "citations": "Citations (all of a claim's)",
    "failure_labels": "Failure labels",
}


def _accuracy(row: dict, field: str) -> dict | None:
    return row["checks"]["accuracy"].get(field)


# Sort keys: what each column sorts by (None: undefined, always last).
SORTS = {
    "username": lambda row, field: row["username"].casefold(),
    "tasks": lambda row, field: row["tasks"],
    "median": lambda row, field: row["seconds_per_claim"]["median"],
    "p90": lambda row, field: row["seconds_per_claim"]["p90"],
    "per_day": lambda row, field: row["per_day"],
    "overruled": lambda row, field: row["overruled_share"],
    "checks": lambda row, field: row["checks"]["n"],
    "accuracy": lambda row, field: (_accuracy(row, field) or {}).get("value"),
    "drift": lambda row, field: row["drift"]["flag"],
}
DEFAULT_SORT = "username"


def sort_rows(rows: list[dict], key: str, descending: bool, field: str) -> list[dict]:
    """The rows by one column; rows where it is undefined come last either way, by name."""
    value = SORTS[key]
    defined = [row for row in rows if value(row, field) is not None]
    undefined = [row for row in rows if value(row, field) is None]
    defined.sort(key=lambda row: row["username"].casefold())
    defined.sort(key=lambda row: value(row, field), reverse=descending)
    undefined.sort(key=lambda row: row["username"].casefold())
    return defined + undefined


def _params(request, fields: list[str]) -> tuple[str, bool, str]:
    sort = request.GET.get("sort") or DEFAULT_SORT
    descending = sort.startswith("-")
    sort = sort.lstrip("-")
    if sort not in SORTS:
        sort, descending = DEFAULT_SORT, False
    field = request.GET.get("field") or "support"
    if field not in fields:
        field = fields[0] if fields else "support"
    return sort, descending, field


def _columns(sort: str, descending: bool, field: str) -> list[dict]:
    """The sortable headers, each with the address that sorts by it (again: the other way)."""
    titles = [
        ("username", "Reviewer"),
        ("tasks", "Tasks"),
        ("median", "s/claim median"),
        ("p90", "s/claim p90"),
        ("per_day", "Per day"),
        ("overruled", "Overruled"),
        ("checks", "Checks"),
        ("accuracy", "Check accuracy"),
        ("drift", "Drift"),
    ]
    columns = []
    for key, title in titles:
        current = key == sort
        # A number reads best largest first; a name A to Z. Clicking the current column
        # turns it round.
        first_descending = key not in ("username",)
        next_descending = (not descending) if current else first_descending
        query = urlencode({"sort": ("-" if next_descending else "") + key, "field": field})
        columns.append(
            {
                "key": key,
                "title": title,
                "query": "?" + query,
                "current": current,
                "aria_sort": ("descending" if descending else "ascending") if current else None,
            }
        )
    return columns


@project_view(Role.LEAD)
def reviewers(request, project, role):
    stored = computed.read(project, REVIEWERS)
    answer = computed.pending_answer(
        request, stored, project=project, role=role, title="Reviewers", current="reviewers"
    )
    if answer is not None:
        return answer
    report = stored.result
    fields = list(dict.fromkeys([*report["fields"], *report["check_fields"]]))
    sort, descending, field = _params(request, fields)
    rows = sort_rows(report["reviewers"], sort, descending, field)
    if request.GET.get("format") == "csv":
        return _csv(project, rows, field)
    names = [row["username"] for row in sort_rows(report["reviewers"], "username", False, field)]
    shown = [_shown(row, field, names) for row in rows]
    context = {
        "project": project,
        "role": role,
        "stored": stored,
        "report": report,
        "rows": shown,
        "names": names,
        "columns": _columns(sort, descending, field),
        "sort": ("-" if descending else "") + sort,
        "field": field,
        "field_title": TITLES.get(field, field),
        "field_choices": [(name, TITLES.get(name, name)) for name in fields],
        "csv_query": "?"
        + urlencode({"format": "csv", "sort": ("-" if descending else "") + sort, "field": field}),
        "flagged": [row for row in shown if row["drift"]["flag"]],
        "undefined_notes": undefined_notes(shown),
    }
    return render_page(request, TEMPLATE, context, partial="reviewers-table")


@require_POST
@project_view(Role.LEAD)
def clear_drift(request, project, role, username):
    """The lead has dealt with a reviewer's drift flag: the chart restarts after the check
    claims the page showed (its `trials`), and the page, computed again, says who cleared it."""
    raw = request.POST.get("trials", "")
    trials = int(raw) if raw.isdigit() else None
    back = reverse("reviewers", args=[project.slug])
    if trials is None:
        messages.error(request, f"Nothing cleared: the page sent no count of {username}'s checks.")
        return redirect(back)
    try:
        done = clearances.clear_drift(
            project=project, lead=request.user, username=username, trials=trials
        )
    except clearances.NotAReviewer as exc:
        raise Http404(str(exc)) from exc
    except clearances.NothingToClear as exc:
        messages.error(request, f"Nothing cleared: {exc}")
    else:
        messages.success(
            request,
            f"Drift flag of {username} cleared after {done.clearance.trials} check claims: "
            "the chart starts again from their next check.",
        )
    return redirect(back)


# The undefined rates of a row (report["reviewers"][i]["undefined"]) as the notes name them.
UNDEFINED_WHAT = {
    "seconds_per_claim": "seconds per claim",
    "per_day": "per day",
    "overruled_share": "share overruled",
}


def undefined_notes(rows: list[dict]) -> list[dict]:
    """Each reason a rate is undefined, once, with the reviewers it holds for: the table shows
    a dash, and this list under it says why."""
    notes: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        for key, reason in (row.get("undefined") or {}).items():
            if reason and key in UNDEFINED_WHAT:
                notes.setdefault((UNDEFINED_WHAT[key], reason), []).append(row["username"])
    return [{"what": what, "reason": reason, "who": who} for (what, reason), who in notes.items()]


def _shown(row: dict, field: str, names: list[str]) -> dict:
    """A row as the page shows it: the chosen field's accuracy and kappas, each co-reviewer
    in the order of the matrix (None on the diagonal)."""
    kappas = row["kappa_with"]
    cleared = row["drift"].get("cleared")
    return {
        **row,
        "cleared": cleared,
        "cleared_at": parse_datetime(cleared["at"]) if cleared else None,
        # the claims the chart has run over: since the latest clearance
        "drift_since": row["drift"]["trials"] - row["drift"].get("start", 0),
        "accuracy": _accuracy(row, field),
        "kappa_cells": [
            (other, None if other == row["username"] else (kappas.get(other) or {}).get(field))
            for other in names
        ],
        "co_reviewers": [(other, entry.get(field)) for other, entry in kappas.items()],
    }


def _csv(project, rows: list[dict], field: str) -> HttpResponse:
    buffer = io.StringIO()
    writer = csvsafe.writer(buffer)
    fields = sorted({name for row in rows for name in row["checks"]["accuracy"]})
    others = sorted({name for row in rows for name in row["kappa_with"]})
    header = [
        "username",
        "tasks",
        "timed_tasks",
        "seconds_per_claim_median",
        "seconds_per_claim_p90",
        "seconds_per_claim_tasks",
        "per_day",
        "days_worked",
        "overruled_share",
        "overruled",
        "adjudicated_fields",
        "checks",
    ]
    for name in fields:
        header += [
            f"accuracy_{name}",
            f"accuracy_{name}_correct",
            f"accuracy_{name}_n",
            f"accuracy_{name}_ci95_low",
            f"accuracy_{name}_ci95_high",
            f"kappa_gold_{name}",
        ]
    header += ["drift_flag", "drift_checks"]
    for other in others:
        header += [f"kappa_{field}_with_{other}", f"n_{field}_with_{other}"]
    header += ["undefined"]
    writer.writerow(header)
    for row in rows:
        spent = row["seconds_per_claim"]
        line = [
            row["username"],
            row["tasks"],
            row["timed_tasks"],
            spent["median"],
            spent["p90"],
            spent["n"],
            row["per_day"],
            row["days_worked"],
            row["overruled_share"],
            row["overruled"],
            row["adjudicated_fields"],
            row["checks"]["n"],
        ]
        for name in fields:
            acc = row["checks"]["accuracy"].get(name) or {}
            ci = acc.get("ci95") or [None, None]
            line += [acc.get("value"), acc.get("correct"), acc.get("n"), ci[0], ci[1]]
            line += [acc.get("kappa")]
        drift = row["drift"]
        line += [drift["flag"], " ".join(str(check) for check in drift["checks"])]
        for other in others:
            entry = (row["kappa_with"].get(other) or {}).get(field) or {}
            line += [entry.get("kappa"), entry.get("n")]
        line += ["; ".join(f"{key}: {reason}" for key, reason in row["undefined"].items())]
        writer.writerow(line)
    response = HttpResponse(buffer.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-reviewers.csv"'
    return response
