"""The lead's agreement report page, with JSON and CSV downloads of the same numbers."""

from __future__ import annotations

import io
import json

from django.http import Http404, HttpResponse
from django.shortcuts import render

from annotate.common import computed, csvsafe
from annotate.common.roles import project_view
from annotate.models import Role
from evaluation.caveats import one_label_reason
from evaluation.intervals import wilson_interval
from evaluation.report_kinds import AGREEMENT, agreement_key
from evaluation.reports import charts

FIELD_TITLES = {
    "support": "Support",
    "support_binary": "Support (supported vs unsupported)",
    "severity": "Severity",
    "requires_evidence": "Needs evidence",
    "citation": "Citation verdict",
    "relevance": "Relevance",
    "abstention": "Abstention",
}


# Heatmap headers are narrow: abbreviations people read as words (the full label is the
# header's title), never the first four letters of a code ("insu", "Fals").
SHORT_LABELS = {
    "supported": "supp.",
    "contradicted": "contra.",
    "insufficient_evidence": "insuff.",
    "unsupported": "unsupp.",
    "supports": "supp.",
    "does_not_support": "not supp.",
    "citation_not_found": "not found",
    "appropriate": "approp.",
    "unnecessary": "unneeded",
    "critical": "critic.",
    "True": "yes",
    "False": "no",
}


def short_label(label) -> str:
    return SHORT_LABELS.get(str(label), str(label))


def label_words(label) -> str:
    """A label as a person reads it in a sentence: yes/no for a boolean field's values,
    spaces for underscores ("insufficient evidence")."""
    if label is None:
        return ""
    return {"True": "yes", "False": "no"}.get(str(label), str(label).replace("_", " "))


def _heat(confusion: dict) -> list[tuple[str, str, list[tuple[int, float]]]]:
    """Rows of (A's label, its short form, cells), each cell with its share of the largest,
    for shading."""
    matrix = confusion["matrix"]
    top = max((v for row in matrix for v in row), default=0) or 1
    return [
        (label, short_label(label), [(v, v / top) for v in row])
        for label, row in zip(confusion["labels"], matrix, strict=False)
    ]


IDENTICAL = "identical label sets: not two independent reviewers"


def _rows(fields: dict, *, binary: bool = False, identical: bool = False) -> list[dict]:
    """The report's fields in a fixed order; a field outside the project's schema is absent
    from the report and so from the table. In a binary project support already is supported
    vs unsupported: support_binary (in the JSON, as SPEC.md asks) would be the same row twice."""
    rows = []
    for name, title in FIELD_TITLES.items():
        stats = fields.get(name)
        if stats is None or (binary and name == "support_binary"):
            continue
        raw = stats["raw_agreement"]
        matches = None if raw is None else round(raw * stats["n"])
        confusion = stats["confusion"]
        rows.append(
            {
                "name": name,
                "title": title,
                **stats,
                "matches": matches,
                "raw_ci95": wilson_interval(matches, stats["n"]) if matches is not None else None,
                # A reviewer who used one label makes kappa 0 by formula, with a [0, 0]
                # interval: the page says so instead of printing "0.00 [0.00, 0.00]".
                "one_label": one_label_reason(confusion["labels"], confusion["matrix"]),
                "heat": _heat(confusion),
                "top_label": label_words((stats.get("prevalence") or {}).get("label")),
                "columns": [(c, short_label(c)) for c in confusion["labels"]],
                # One label set under two names: its kappa (1.000, or undefined) measures
                # nothing, and the page says that instead.
                "identical": identical,
            }
        )
    return rows


def _label_set_rows(fields: dict, *, binary: bool = False) -> list[dict]:
    """Each field's agreement over every label set (present where some answer has more than
    two): items, raters, Krippendorff's alpha and, for a nominal field, Fleiss' kappa, each
    with its interval and what makes it undefined. Empty for a project of pairs."""
    rows = []
    for name, title in FIELD_TITLES.items():
        stats = fields.get(name)
        if stats is None or "alpha" not in stats or (binary and name == "support_binary"):
            continue
        rows.append(
            {
                "name": name,
                "title": title,
                "level": "ordinal" if stats.get("fleiss_n") is None else "nominal",
                **stats,
            }
        )
    return rows


def _kappa_chart(title: str, rows: list[dict]):
    """Each field's kappa with its bootstrap interval on one axis; a field whose kappa cannot
    be read (no item, a reviewer with one label) says why in its place."""
    interval_rows = []
    for row in rows:
        readable = row["kappa"] is not None and not row["one_label"] and not row["identical"]
        reason = (
            (IDENTICAL if row["identical"] else None)
            or row["one_label"]
            or row["kappa_undefined_reason"]
            or "undefined"
        )
        interval_rows.append(
            charts.IntervalRow(
                row["title"],
                row["kappa"] if readable else None,
                tuple(row["ci95"]) if readable and row["ci95"] else None,
                row["n"],
                undefined="" if readable else f"undefined — {reason}",
            )
        )
    return charts.interval_chart(
        title, interval_rows, low=charts.kappa_axis(interval_rows), reference=0.0
    )


@project_view(Role.LEAD)
def agreement(request, project, role):
    """The report (stored per revision of the project, annotate.common.computed), as a page
    or as its JSON or CSV download."""
    version = guideline_version_of(request.GET, project)
    if version is False:
        raise Http404("No such guidelines version")
    stored = computed.read(project, AGREEMENT, agreement_key(version))
    answer = computed.pending_answer(
        request, stored, project=project, role=role, title="Reviewer agreement", current="agreement"
    )
    if answer is not None:
        return answer
    report = stored.result
    fmt = request.GET.get("format")
    if fmt == "json":
        response = HttpResponse(json.dumps(report, indent=2), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{project.slug}-agreement.json"'
        return response
    if fmt == "csv":
        return _csv(project, report)
    everything = report["slices"]["all"]
    doubly = any(stats.get("n") for stats in everything.values() if isinstance(stats, dict))
    slices = []  # none at all when nothing is doubly labelled: the page says so instead
    binary = project.schema.binary
    notes = [p["identical_label_sets_note"] for p in report["pairs"] if p["identical_label_sets"]]
    # Every pair one label set twice: the slices' figures are all duplicates too.
    only_identical = bool(notes) and len(notes) == len(report["pairs"])
    for name, fields in report["slices"].items() if doubly else ():
        rows = _rows(fields, binary=binary, identical=only_identical)
        chart = _kappa_chart(f"Cohen's kappa with 95% intervals, slice {name}", rows)
        slices.append(
            {
                "name": name,
                "rows": rows,
                "evidence": fields.get("evidence"),
                "chart": chart,
                "label_sets": _label_set_rows(fields, binary=binary),
            }
        )
    pairs = [
        {
            "reviewers": p["reviewers"],
            "rows": _rows(p, binary=binary, identical=p["identical_label_sets"]),
            "identical_note": p.get("identical_label_sets_note"),
        }
        for p in report["pairs"]
    ]
    return render(
        request,
        "evaluation/agreement.html",
        {
            "project": project,
            "role": role,
            "slices": slices,
            "multi": _multi(report),
            "pairs": pairs,
            "identical_notes": notes,
            "stored": stored,
            # Gold with no second reviewer: in no figure here, said so beside them.
            "imported": report.get("gold_without_second_reviewer") or {},
            "guideline_version": version,
            "version_query": "" if version is None else f"guideline_version={version}&",
            "version_choices": [
                (n, f"guidelines v{n}" if n else "no guidelines")
                for n in range(project.guidelines_version, -1, -1)
            ]
            if project.guidelines_version
            else [],
        },
    )


def guideline_version_of(query, project) -> int | None | bool:
    """The `guideline_version` a request asks for: None for every label set, a version
    number (0: label sets made before any guidelines), or False for one the project never
    had (the page answers 404)."""
    raw = query.get("guideline_version", "")
    if raw == "":
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) < 10):
        return False
    number = int(raw)
    return number if number <= project.guidelines_version else False


def _csv(project, report) -> HttpResponse:
    buffer = io.StringIO()
    writer = csvsafe.writer(buffer)
    writer.writerow(
        [
            "scope",
            "field",
            "n",
            "raw_agreement",
            "kappa",
            "ci95_low",
            "ci95_high",
            "weighting",
            "top_label",
            "top_label_share",
            "kappa_undefined_reason",
            *(MULTI_COLUMNS if _multi(report) else ()),
        ]
    )
    scopes = [(name, fields) for name, fields in report["slices"].items()]
    scopes += [(" vs ".join(p["reviewers"]), p) for p in report["pairs"]]
    for scope, fields in scopes:
        for name in FIELD_TITLES:
            s = fields.get(name)
            if s is None:
                continue
            ci = s["ci95"] or [None, None]
            prevalence = s.get("prevalence") or {}
            writer.writerow(
                [
                    scope,
                    name,
                    s["n"],
                    s["raw_agreement"],
                    s["kappa"],
                    ci[0],
                    ci[1],
                    s["weighting"] or "",
                    prevalence.get("label", ""),
                    prevalence.get("share", ""),
                    s["kappa_undefined_reason"] or "",
                    *(_multi_cells(s) if _multi(report) else ()),
                ]
            )
    response = HttpResponse(buffer.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-agreement.csv"'
    return response


# Columns of every label set (more than two on some answer), on the slices' lines; a pair's
# line leaves them empty.
MULTI_COLUMNS = (
    "raters",
    "alpha_n",
    "alpha",
    "alpha_ci95_low",
    "alpha_ci95_high",
    "fleiss_n",
    "fleiss_kappa",
    "fleiss_ci95_low",
    "fleiss_ci95_high",
    "all_agree",
)


def _multi(report) -> bool:
    return any("alpha" in stats for stats in report["slices"]["all"].values())


def _multi_cells(stats: dict) -> list:
    if "alpha" not in stats:
        return [""] * len(MULTI_COLUMNS)
    alpha_ci = stats["alpha_ci95"] or [None, None]
    fleiss_ci = stats.get("fleiss_ci95") or [None, None]
    return [
        stats["raters"],
        stats["alpha_n"],
        stats["alpha"],
        alpha_ci[0],
        alpha_ci[1],
        stats.get("fleiss_n", ""),
        stats.get("fleiss_kappa"),
        fleiss_ci[0],
        fleiss_ci[1],
        stats["all_agree"],
    ]
