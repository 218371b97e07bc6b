"""Lead-only evaluation report: one page, six sections, every table also as CSV.

The view parses the GET parameters (which two variants to compare, k, the latency budget and
the unsupported-answer limit), calls evaluation.reports once (eleven queries whatever the size
of the project) and renders; ``?format=csv&table=NAME`` returns that table instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.http import Http404, StreamingHttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_GET

from annotate import csvsafe
from annotate.models import Role
from annotate.views import project_view
from evaluation import charts
from evaluation.reports import (
    STAGE_ROWS,
    Table,
    compare,
    comparison_tables,
    evaluate,
    limits_table,
    load,
    report_tables,
    text_value,
    variant_limits,
)
from jobs import reports as stored_reports

DEFAULT_COMPARE_K = 5
# Long, case-by-case tables start folded; their counts are in the tables above them.
COLLAPSED = frozenset({"diagnosis"})
NUMERIC = frozenset({"int", "rate", "float", "diff", "ms", "ci"})
SECTIONS = (
    ("retrieval", "Retrieval"),
    ("generation", "Generation"),
    ("abstention", "Abstention"),
    ("stages", "Stage diagnosis"),
    ("variants", "Variants"),
    ("latency", "Latency"),
)
# Which tables each section shows, in order.
SECTION_TABLES = {
    "retrieval": ("retrieval",),
    "generation": ("generation", "failure_labels"),
    "abstention": ("abstention",),
    "stages": ("stages", "diagnosis"),
    "variants": ("variants", "comparison", "fusion", "transitions"),
    "latency": ("latency",),
}


class _Csv:
    def write(self, value):
        return value


@dataclass
class Params:
    a: str | None
    b: str | None
    k: int
    latency_budget: float | None
    unsupported_limit: float | None
    errors: dict[str, str]


def _number(raw: str | None, *, name: str, errors: dict, low: float, high: float | None = None):
    if raw is None or not raw.strip():
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < low or (high is not None and value > high):
        bound = f"between {low:g} and {high:g}" if high is not None else f"at least {low:g}"
        errors[name] = f"Enter a number {bound}."
        return None
    return value


def parse_params(get, variant_names: list[str]) -> Params:
    errors: dict[str, str] = {}
    a, b = get.get("a") or None, get.get("b") or None
    for name, value in (("a", a), ("b", b)):
        if value is not None and value not in variant_names:
            errors[name] = f"No variant named {value!r}."
    if "a" in errors or a is None:
        a = variant_names[0] if variant_names else None
    if "b" in errors or b is None:
        b = next((n for n in variant_names if n != a), None)
    elif b == a and len(variant_names) > 1:
        errors["b"] = "Choose a variant other than a: a comparison needs two."
    k = _number(get.get("k"), name="k", errors=errors, low=1)
    if k is not None and k != int(k):
        errors["k"] = "Enter a whole number of at least 1."
    return Params(
        a=a,
        b=b,
        k=int(k) if k is not None and "k" not in errors else DEFAULT_COMPARE_K,
        latency_budget=_number(
            get.get("latency_budget"), name="latency_budget", errors=errors, low=0
        ),
        unsupported_limit=_number(
            get.get("unsupported_limit"), name="unsupported_limit", errors=errors, low=0, high=1
        ),
        errors=errors,
    )


@require_GET
@project_view(Role.LEAD)
def report(request, project, role):
    data = load(project)
    stored = stored_reports.current(
        project=project,
        kind=stored_reports.Kind.EVALUATION,
        compute=lambda: evaluate(project, data=data),
    )
    result = stored.result
    names = list(result["variants"])
    params = parse_params(request.GET, names)
    comparison = None
    if params.a and params.b and params.a != params.b:
        comparison = compare(project, params.a, params.b, k=params.k, data=data)
    limits = variant_limits(
        result,
        latency_budget_ms=params.latency_budget,
        unsupported_limit=params.unsupported_limit,
    )
    tables = {**report_tables(result), "variants": limits_table(result, limits)}
    if comparison is not None:
        tables.update(comparison_tables(comparison))

    if request.GET.get("format") == "csv":
        table = tables.get(request.GET.get("table", ""))
        if table is None:
            raise Http404("No such table.")
        return _csv_response(project.slug, table)

    answer_pks = {a.answer_id: a.pk for a in data.answers}
    sections = [
        {
            "id": section,
            "title": title,
            "tables": [
                _html_table(tables[name], request, project.slug, answer_pks)
                for name in SECTION_TABLES[section]
                if name in tables and section not in result["not_available"]
            ],
        }
        for section, title in SECTIONS
    ]
    context = {
        "project": project,
        "role": role,
        "report": result,
        "variants": list(result["variants"].values()),
        "sections": sections,
        "charts": _charts(result, data, params.k),
        "params": params,
        "comparison": comparison,
        "limits": limits,
        "limits_set": params.latency_budget is not None or params.unsupported_limit is not None,
        "meeting": [row["variant"] for row in limits if row["meets_both"]],
        "variant_names": names,
        "has_labels": any(a.labelled for a in data.answers),
        "stored": stored,
    }
    return render(request, "evaluation/report.html", context)


def _csv_response(slug: str, table: Table) -> StreamingHttpResponse:
    writer = csvsafe.writer(_Csv())

    rows = (writer.writerow(row) for row in table.csv_rows())

    response = StreamingHttpResponse(rows, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{slug}-{table.name}.csv"'
    return response


def _answer_url(slug: str, pk: int | None) -> str | None:
    if pk is None:
        return None
    try:
        return reverse("boundary_edit", kwargs={"slug": slug, "answer_pk": pk})
    except NoReverseMatch:
        return None


def _html_table(table: Table, request, slug: str, answer_pks: dict[str, int]) -> dict:
    query = request.GET.copy()
    query["format"] = "csv"
    query["table"] = table.name
    groups = []
    for group, columns, rows in table.groups():
        body = []
        for row in rows:
            cells = []
            for value, column in zip(row, columns, strict=True):
                cell = {
                    "text": text_value(value, column.kind),
                    "num": column.kind in NUMERIC,
                    "undefined": value is None and column.kind in NUMERIC - {"int"},
                }
                if column.kind == "answer_ids" and value:
                    cell["links"] = [(v, _answer_url(slug, answer_pks.get(v))) for v in value]
                elif column.kind == "answer_id":
                    cell["links"] = [(value, _answer_url(slug, answer_pks.get(value)))]
                cells.append(cell)
            body.append(cells)
        header = [{"label": c.label, "num": c.kind in NUMERIC} for c in columns]
        groups.append({"name": group, "columns": header, "rows": body})
    return {
        "name": table.name,
        "title": table.title,
        "groups": groups,
        "csv": f"?{query.urlencode()}",
        "empty": not table.rows,
        "collapsed": table.name in COLLAPSED,
    }


def _charts(report: dict, data, k: int) -> dict:
    variants = list(report["variants"].items())
    colours = {name: charts.variant_colour(i) for i, (name, _) in enumerate(variants)}
    ks = report["ks"]
    chart_k = str(k if k in ks else (5 if 5 in ks else ks[-1]))

    def retrieval(metric: str, ranking: str, label: str):
        bars = []
        for name, v in variants:
            row = v["retrieval"]["all"][ranking][chart_k]
            bars.append(charts.Bar(name, row[metric], row["eligible"], colours[name]))
        return charts.bar_chart(f"{label}@{chart_k} · {ranking.replace('_', '-')}", bars)

    def generation(title: str, get, *, needs: str | None = None, max_value=1.0):
        if needs is not None and any(needs not in v["generation"]["all"] for _, v in variants):
            return None  # a field the project does not label has no chart
        bars = []
        for name, v in variants:
            value, n = get(v["generation"]["all"])
            bars.append(charts.Bar(name, value, n, colours[name]))
        return charts.bar_chart(title, bars, max_value=max_value)

    all_ms = [a.elapsed_ms for a in data.answers if a.elapsed_ms is not None]
    edges = charts.latency_bins(all_ms)
    latency = []
    per_variant = {
        name: [a.elapsed_ms for a in data.answers_of(name) if a.elapsed_ms is not None]
        for name, _ in variants
    }
    max_count = max(
        (max(charts.bin_counts(values, edges), default=0) for values in per_variant.values()),
        default=1,
    )
    for name, v in variants:
        summary = v["generation"]["all"]["latency"]
        latency.append(
            charts.latency_histogram(
                name,
                per_variant[name],
                edges,
                max_count=max_count,
                mean=summary["mean"],
                p95=summary["p95"],
                colour=colours[name],
            )
        )
    missing = report["not_available"]
    return {
        "k": chart_k,
        "retrieval": []
        if "retrieval" in missing
        else [
            retrieval("recall", "full", "Recall"),
            retrieval("mrr", "full", "MRR"),
            retrieval("ndcg", "full", "nDCG"),
            retrieval("recall", "in_prompt", "Recall"),
            retrieval("ndcg", "in_prompt", "nDCG"),
        ],
        "generation": [
            chart
            for chart in [
                generation(
                    "Claim faithfulness",
                    lambda g: (g["faithfulness"]["rate"], g["faithfulness"]["n"]),
                ),
                generation(
                    "Citation precision",
                    lambda g: (g["citation_precision"]["rate"], g["citation_precision"]["links"]),
                    needs="citation_precision",
                ),
                generation(
                    "Citation coverage",
                    lambda g: (
                        g["citation_coverage"]["rate"],
                        g["citation_coverage"]["requiring_evidence"],
                    ),
                    needs="citation_coverage",
                ),
                generation(
                    "Unsupported answers (share)",
                    lambda g: (g["unsupported_answers"]["rate"], g["unsupported_answers"]["n"]),
                ),
                generation(
                    "Relevance (mean, 0–2)",
                    lambda g: (g["relevance"]["mean"], g["relevance"]["n"]),
                    needs="relevance",
                    max_value=2.0,
                ),
            ]
            if chart is not None
        ],
        "abstention": [
            generation(
                "Unanswerable: abstained",
                lambda g: (g["abstention"]["abstention_rate"], g["abstention"]["unanswerable"]),
            ),
            generation(
                "Unanswerable: unsupported",
                lambda g: (g["abstention"]["unsupported_rate"], g["abstention"]["unanswerable"]),
            ),
            generation(
                "Answerable: false abstention",
                lambda g: (
                    g["abstention"]["false_abstention_rate"],
                    g["abstention"]["answerable"],
                ),
            ),
        ],
        "stages": []
        if "stages" in missing
        else [
            charts.stage_bar(
                name,
                {s: v["stages"]["answerable"]["rows"][s]["answers"] for s in STAGE_ROWS},
            )
            for name, v in variants
        ],
        "latency": latency,
    }
