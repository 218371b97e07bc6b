"""The lead's agreement report page, with JSON and CSV downloads of the same numbers."""

from __future__ import annotations

import io
import json

from django.http import HttpResponse
from django.shortcuts import render

from annotate import csvsafe
from annotate.models import Role
from annotate.views import project_view
from jobs import reports as stored_reports

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


def _heat(confusion: dict) -> list[tuple[str, str, list[tuple[int, float]]]]:
    """Rows of (A's label, its short form, cells), each cell with its share of the largest,
    for shading."""
    matrix = confusion["matrix"]
    top = max((v for row in matrix for v in row), default=0) or 1
    return [
        (label, short_label(label), [(v, v / top) for v in row])
        for label, row in zip(confusion["labels"], matrix, strict=False)
    ]


def _rows(fields: dict) -> list[dict]:
    """The report's fields in a fixed order; a field outside the project's schema is absent
    from the report and so from the table."""
    rows = []
    for name, title in FIELD_TITLES.items():
        stats = fields.get(name)
        if stats is None:
            continue
        raw = stats["raw_agreement"]
        matches = None if raw is None else round(raw * stats["n"])
        rows.append(
            {
                "name": name,
                "title": title,
                **stats,
                "matches": matches,
                "heat": _heat(stats["confusion"]),
                "columns": [(c, short_label(c)) for c in stats["confusion"]["labels"]],
            }
        )
    return rows


@project_view(Role.LEAD)
def agreement(request, project, role):
    stored = stored_reports.read(project=project, kind=stored_reports.Kind.AGREEMENT)
    if stored.pending:
        return stored_reports.pending_page(
            request, project=project, role=role, title="Reviewer agreement", current="agreement"
        )
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
    slices = [  # none at all when nothing is doubly labelled: the page says so instead
        {"name": name, "rows": _rows(fields), "evidence": fields.get("evidence")}
        for name, fields in report["slices"].items()
        if doubly
    ]
    pairs = [{"reviewers": p["reviewers"], "rows": _rows(p)} for p in report["pairs"]]
    return render(
        request,
        "evaluation/agreement.html",
        {"project": project, "role": role, "slices": slices, "pairs": pairs, "stored": stored},
    )


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
                ]
            )
    response = HttpResponse(buffer.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{project.slug}-agreement.csv"'
    return response
