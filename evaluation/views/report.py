"""Lead-only evaluation report: one page, six sections, every table also as CSV.

The report is the one stored per revision of the project (annotate.common.computed, as the API reads
it): a small project's is computed in the request, a large one's by a worker, and until the
first one is there the page says it is being computed. The view parses the GET parameters
(which two variants to compare, k, the latency budget and the unsupported-answer limit) and
renders from the stored report; ``?format=csv&table=NAME`` returns one table instead. A
comparison of two variants is stored the same way, under the two variants and k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from django.http import Http404, StreamingHttpResponse
from django.shortcuts import render
from django.urls import NoReverseMatch, reverse
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from annotate.common import csvsafe
from annotate.common.computed import pending_answer, reports_of
from annotate.common.paging import paginate
from annotate.common.roles import project_view
from annotate.models import Answer, Role, Variant
from evaluation.intervals import bounded_mean_interval, wilson_interval
from evaluation.report_kinds import COMPARISON, EVALUATION, comparison_key
from evaluation.reports import charts
from evaluation.reports.comparison import COMPARE_METRICS, DEFAULT_COMPARE_K
from evaluation.reports.evaluation import STAGE_ROWS
from evaluation.reports.limits import variant_limits
from evaluation.reports.tables import (
    Column,
    Table,
    comparison_tables,
    limits_table,
    report_tables,
    text_value,
)

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
    "variants": ("variants", "comparison", "fusion", "transitions", "case_transitions"),
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
    """The report: charts and aggregate tables first, then the per-case tables a page at a
    time (filterable; an htmx request for one of them gets that table alone). Every table's
    CSV is the full table. What the page derives from the stored report (tables, charts) is
    kept in this process (annotate.common.computed) under the project's revision, so a later
    view, another page of a table or a CSV costs no recomputation."""
    reports = reports_of(project)
    stored = reports.read(EVALUATION)
    answer = pending_answer(
        request, stored, project=project, role=role, title="Evaluation report", current="evaluation"
    )
    if answer is not None:
        return answer
    result = stored.result
    names = list(result["variants"])
    params = parse_params(request.GET, names)
    comparison = compared = None
    variant_pks = reports.get(
        "variant-pks",
        "",
        lambda: dict(Variant.objects.filter(project=project).values_list("name", "pk")),
    )
    # (A report from before a re-import can name a variant that is gone: no comparison then.)
    if params.a in variant_pks and params.b in variant_pks and params.a != params.b:
        key = comparison_key(variant_pks[params.a], variant_pks[params.b], params.k)
        compared = reports.read(COMPARISON, key)
        comparison = compared.result  # None while a worker computes the first one
    limits = variant_limits(
        result,
        latency_budget_ms=params.latency_budget,
        unsupported_limit=params.unsupported_limit,
    )
    tables = {
        **reports.get("evaluation-tables", stored.computed_at, lambda: report_tables(result)),
        "variants": limits_table(result, limits),
    }
    if comparison is not None:
        tables.update(
            reports.get(
                "comparison-tables",
                (params.a, params.b, params.k, compared.computed_at),
                lambda: {**comparison_tables(comparison), **case_transitions(comparison)},
            )
        )

    if request.GET.get("format") == "csv":
        table = tables.get(request.GET.get("table", ""))
        if table is None:
            raise Http404("No such table.")
        return _csv_response(project.slug, table)

    answer_pks = reports.get(
        "answer-pks",
        "",
        lambda: dict(Answer.objects.filter(project=project).values_list("answer_id", "pk")),
    )
    shown = TableContext(request, project.slug, answer_pks, names)
    target = request.htmx.target if request.htmx else None
    if target in PAGED_TARGETS and PAGED_TARGETS[target] in tables:
        table = shown.html(tables[PAGED_TARGETS[target]])
        return render(request, "evaluation/report.html#data-table", {"table": table})
    sections = [
        {
            "id": section,
            "title": title,
            "tables": [
                shown.html(tables[name])
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
        "charts": reports.get(
            "charts", (params.k, stored.computed_at), lambda: _charts(result, params.k)
        ),
        "params": params,
        "comparison": comparison,
        "compared": compared,
        "limits": limits,
        "limits_set": params.latency_budget is not None or params.unsupported_limit is not None,
        "meeting": [row["variant"] for row in limits if row["meets_both"]],
        "variant_names": names,
        "has_labels": any(v["generation"]["all"]["labelled"] for v in result["variants"].values()),
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


# --- Tables for people: aggregates in full, per-case rows a page at a time ---------------------

PER_PAGE = 50
# A cell listing cases or answers shows this many; the rest are a link to the per-case table
# filtered to them (and in the CSV).
ID_PREVIEW = 5
# htmx target id -> the per-case table it shows
PAGED_TARGETS = {"table-diagnosis": "diagnosis", "table-case_transitions": "case_transitions"}
DIAGNOSIS_SLICES = {
    "answerable": lambda row: True,  # every diagnosed answer is of an answerable case
    "adversarial": lambda row: bool(row["adversarial"]),
    "dev": lambda row: row["split"] == "dev",
    "heldout": lambda row: row["split"] == "heldout",
}
TRANSITIONS = ("fixed", "broken", "unchanged_pass", "unchanged_fail", "only_a", "only_b")


def case_transitions(comparison: dict) -> dict[str, Table]:
    """The transitions case by case, one row per metric, transition and case: the per-case
    table the page pages through (the summary table lists them by transition)."""
    rows = [
        {"metric": metric, "transition": kind, "case_id": case_id}
        for metric, m in comparison["metrics"].items()
        for kind, ids in m["transitions"].items()
        for case_id in ids
    ]
    a, b = comparison["a"], comparison["b"]
    columns = [
        Column("metric", "Metric"),
        Column("transition", "Transition"),
        Column("case_id", "Case"),
    ]
    return {
        "case_transitions": Table(
            "case_transitions", f"Transitions {a} → {b}, one case a row", columns, rows
        )
    }


@dataclass
class Filter:
    param: str
    label: str
    choices: list[tuple[str, str]]  # (value, as shown)
    keep: object  # (row, value) -> bool


class TableContext:
    """Turns report tables into what the template shows, for one request."""

    def __init__(self, request, slug: str, answer_pks: dict[str, int], variants: list[str]):
        self.request = request
        self.slug = slug
        self.answer_pks = answer_pks
        self.filters = {
            "diagnosis": [
                Filter("dv", "Variant", [(v, v) for v in variants], _equals("variant")),
                Filter("ds", "Stage", [(s, s) for s in STAGE_ROWS], _equals("stage")),
                Filter(
                    "dslice",
                    "Slice",
                    [(s, s) for s in DIAGNOSIS_SLICES],
                    lambda row, value: DIAGNOSIS_SLICES[value](row),
                ),
            ],
            "case_transitions": [
                Filter("tm", "Metric", [(m, m) for m in COMPARE_METRICS], _equals("metric")),
                Filter("tt", "Transition", [(t, t) for t in TRANSITIONS], _equals("transition")),
            ],
        }
        self.page_params = {"diagnosis": "dpage", "case_transitions": "tpage"}

    def url(self, anchor: str, **changes: str) -> str:
        """This page's URL with some query parameters changed (the pages reset)."""
        query = self.request.GET.copy()
        for name in ("dpage", "tpage", "format", "table"):
            query.pop(name, None)
        for name, value in changes.items():
            query[name] = value
        return f"?{query.urlencode()}#{anchor}"

    def more_link(self, table: Table, row: dict, group: str | None, hidden: int):
        """Where the ids a cell leaves out are listed: the per-case table, filtered."""
        if table.name == "stages":
            url = self.url(
                "table-diagnosis", dv=row["variant"], ds=row["stage"], dslice=group or ""
            )
        elif table.name == "transitions":
            url = self.url("table-case_transitions", tm=row["metric"], tt=row["transition"])
        else:
            return {"count": hidden, "url": None}
        return {"count": hidden, "url": url}

    def html(self, table: Table) -> dict:
        filters = self.filters.get(table.name)
        if filters is None:
            return self._html(table)
        get = self.request.GET
        chosen = {
            f.param: get.get(f.param, "")
            for f in filters
            if get.get(f.param, "") in {value for value, _ in f.choices}
        }
        rows = [
            row
            for row in table.rows
            if all(f.keep(row, chosen[f.param]) for f in filters if chosen.get(f.param))
        ]
        anchor = f"#table-{table.name}"
        pager = paginate(
            rows, get, per_page=PER_PAGE, param=self.page_params[table.name], anchor=anchor
        )
        shown = self._html(Table(table.name, table.title, table.columns, pager.items))
        keep = [
            (name, value)
            for name, value in get.items()
            if name not in {f.param for f in filters}
            and name not in ("format", "table", self.page_params[table.name])
        ]
        shown.update(
            paged=True,
            pager=pager,
            total=len(table.rows),
            filters=[
                {
                    "param": f.param,
                    "label": f.label,
                    "choices": f.choices,
                    "chosen": chosen.get(f.param, ""),
                }
                for f in filters
            ],
            keep=keep,
            filtered=bool(chosen),
            clear_url=self.url(f"table-{table.name}"),
            empty=not rows,
        )
        return shown

    def _html(self, table: Table) -> dict:
        query = self.request.GET.copy()
        for name in ("dpage", "tpage"):
            query.pop(name, None)
        query["format"] = "csv"
        query["table"] = table.name
        groups = []
        for group, columns, rows, originals in _groups(table):
            body = []
            for row, original in zip(rows, originals, strict=True):
                cells = (
                    _cell_html(self._cell(table, original, group, value, column))
                    for value, column in zip(row, columns, strict=True)
                )
                body.append(mark_safe("".join(cells)))  # noqa: S308 -- every part escaped
            header = [{"label": c.label, "num": c.kind in NUMERIC} for c in columns]
            groups.append({"name": group, "columns": header, "rows": body})
        return {
            "name": table.name,
            "title": table.title,
            "groups": groups,
            "csv": f"?{query.urlencode()}",
            "empty": not table.rows,
            "collapsed": table.name in COLLAPSED,
            "rows": len(table.rows),
        }

    def _cell(self, table: Table, row: dict, group, value, column) -> dict:
        cell = {
            "text": text_value(value, column.kind),
            "num": column.kind in NUMERIC,
            "undefined": value is None and column.kind in NUMERIC - {"int"},
        }
        if column.kind in ("ids", "answer_ids") and value and len(value) > ID_PREVIEW:
            cell["more"] = self.more_link(table, row, group, len(value) - ID_PREVIEW)
            value = value[:ID_PREVIEW]
            cell["text"] = text_value(value, column.kind)
        if column.kind == "answer_ids" and value:
            cell["links"] = [(v, _answer_url(self.slug, self.answer_pks.get(v))) for v in value]
        elif column.kind == "answer_id":
            cell["links"] = [(value, _answer_url(self.slug, self.answer_pks.get(value)))]
        return cell


def _cell_html(cell: dict) -> str:
    """One cell's <td>, escaped. Written here rather than in the template: a page of the
    10,000-answer report has thousands of cells, and the template's tags for each were most
    of the page's time."""
    classes = ("num" if cell["num"] else "") + (
        " ids" if cell.get("links") or cell.get("more") else ""
    )
    parts = [f'<td class="{classes}">' if classes else "<td>"]
    if cell.get("links"):
        parts.append(
            ", ".join(
                f'<a href="{escape(url)}">{escape(id_)}</a>' if url else escape(id_)
                for id_, url in cell["links"]
            )
        )
    elif cell["undefined"]:
        parts.append('<span class="muted" title="undefined: nothing to measure">—</span>')
    else:
        parts.append(escape(cell["text"]))
    more = cell.get("more")
    if more:
        if more["url"]:
            text = f'<a href="{escape(more["url"])}">and {more["count"]} more</a>'
        else:
            text = f"and {more['count']} more (CSV)"
        parts.append(f'<span class="more-ids">{text}</span>')
    parts.append("</td>")
    return "".join(parts)


def _equals(key: str):
    return lambda row, value: str(row.get(key)) == value


def _groups(table: Table):
    """Table.groups, with each shown row's report row beside it (for links)."""
    columns = [c for c in table.columns if c.for_people and c.key != table.group_by]
    grouped: dict[str | None, tuple[list, list]] = {}
    for row in table.rows:
        key = row[table.group_by] if table.group_by else None
        shown, originals = grouped.setdefault(key, ([], []))
        shown.append([row.get(c.key) for c in columns])
        originals.append(row)
    if not grouped:
        return [(None, columns, [], [])]
    return [(key, columns, shown, originals) for key, (shown, originals) in grouped.items()]


def _charts(report: dict, k: int) -> dict:
    """The report's small multiples, slice "all". Every bar carries its 95% interval: Wilson
    for the rates (counts out of n), the conservative bounded-mean interval for the retrieval
    means and mean relevance (evaluation.intervals)."""
    variants = list(report["variants"].items())
    colours = {name: charts.variant_colour(i) for i, (name, _) in enumerate(variants)}
    ks = report["ks"]
    chart_k = str(k if k in ks else (5 if 5 in ks else ks[-1]))

    def retrieval(metric: str, ranking: str, label: str):
        bars = []
        for name, v in variants:
            row = v["retrieval"]["all"][ranking][chart_k]
            ci = bounded_mean_interval(row[metric], row["eligible"])
            bars.append(charts.Bar(name, row[metric], row["eligible"], colours[name], ci))
        return charts.bar_chart(f"{label}@{chart_k} · {ranking.replace('_', '-')}", bars)

    def generation(title: str, get, *, needs: str | None = None, max_value=1.0):
        """``get`` gives (value, successes, n) of one variant; successes None: a mean."""
        if needs is not None and any(needs not in v["generation"]["all"] for _, v in variants):
            return None  # a field the project does not label has no chart
        bars = []
        for name, v in variants:
            value, successes, n = get(v["generation"]["all"])
            if successes is None:
                ci = bounded_mean_interval(value, n, high=max_value)
            else:
                ci = wilson_interval(successes, n) if value is not None else None
            bars.append(charts.Bar(name, value, n, colours[name], ci))
        return charts.bar_chart(title, bars, max_value=max_value)

    histogram = report["latency_histogram"]
    edges = histogram["edges"]
    max_count = max((max(counts, default=0) for counts in histogram["counts"].values()), default=1)
    latency = []
    for name, v in variants:
        summary = v["generation"]["all"]["latency"]
        latency.append(
            charts.latency_histogram(
                name,
                histogram["counts"][name],
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
                    lambda g: (
                        g["faithfulness"]["rate"],
                        g["faithfulness"]["supported"],
                        g["faithfulness"]["n"],
                    ),
                ),
                generation(
                    "Citation precision",
                    lambda g: (
                        g["citation_precision"]["rate"],
                        g["citation_precision"]["supports"],
                        g["citation_precision"]["links"],
                    ),
                    needs="citation_precision",
                ),
                generation(
                    "Citation coverage",
                    lambda g: (
                        g["citation_coverage"]["rate"],
                        g["citation_coverage"]["covered"],
                        g["citation_coverage"]["requiring_evidence"],
                    ),
                    needs="citation_coverage",
                ),
                generation(
                    "Unsupported answers (share)",
                    lambda g: (
                        g["unsupported_answers"]["rate"],
                        g["unsupported_answers"]["unsupported"],
                        g["unsupported_answers"]["n"],
                    ),
                ),
                generation(
                    "Relevance (mean, 0–2)",
                    lambda g: (g["relevance"]["mean"], None, g["relevance"]["n"]),
                    needs="relevance",
                    max_value=2.0,
                ),
            ]
            if chart is not None
        ],
        "abstention": [
            generation(
                "Unanswerable: abstained",
                lambda g: (
                    g["abstention"]["abstention_rate"],
                    g["abstention"]["abstained"],
                    g["abstention"]["unanswerable"],
                ),
            ),
            generation(
                "Unanswerable: unsupported",
                lambda g: (
                    g["abstention"]["unsupported_rate"],
                    g["abstention"]["unsupported"],
                    g["abstention"]["unanswerable"],
                ),
            ),
            generation(
                "Answerable: false abstention",
                lambda g: (
                    g["abstention"]["false_abstention_rate"],
                    g["abstention"]["false_abstentions"],
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
