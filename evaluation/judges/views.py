"""Lead pages for model judges: the runs, uploading one, a run's calibration against gold,
comparing two runs, one answer as judge and gold see it, and the few-shot download.

Thin views: parse the request, call evaluation.judges.runs (writes) or evaluation.reports
(reads), render. Every page is lead-only; anyone else gets 404 from `project_view`.

A run's page and its JSON show the calibration a worker stored (annotate.common.computed):
they import no statistics library. judge_reports (numpy, scipy, scikit-learn) is imported by
the views that compute in the request -- a comparison, one answer's detail, the few-shot
file -- when first called: a web worker that only showed a run's page went from 76 to
198 MB, and its first view took 1.7 s, importing them.
"""

from __future__ import annotations

import itertools
import json

from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotate.common import computed, csvsafe
from annotate.common.paging import paginate
from annotate.common.roles import project_view
from annotate.models import Answer, Role
from evaluation.caveats import one_label_reason
from evaluation.intervals import wilson_interval
from evaluation.judges.list_views import CompareForm, SampleForm, SplitForm, StrataForm
from evaluation.judges.plan_gate import plan_and_gate
from evaluation.judges.samples import design_estimates, designs_of
from evaluation.models import JudgeRun
from evaluation.report_kinds import CALIBRATION
from evaluation.reports import charts
from evaluation.reports.strata import with_strata
from evaluation.reports.tables import csv_value
from evaluation.views.agreement import short_label


def _run_or_404(project, run_pk: int) -> JudgeRun:
    run = JudgeRun.objects.filter(project=project, pk=run_pk).select_related("imported_by").first()
    if run is None:
        raise Http404("Not found")
    run.project = project  # already loaded: saves the reports a query
    return run


def _confusion_rows(block: dict) -> list[tuple[str, list[int]]]:
    return list(zip(block["labels"], block["matrix"], strict=True))


def _readable_kappa(label, kappa, ci, n, confusion, reason, who, colour) -> charts.IntervalRow:
    """A kappa row of the calibration chart; one that cannot be read says why."""
    one_label = one_label_reason(confusion["labels"], confusion["matrix"], who=who)
    if kappa is None or one_label:
        why = one_label or reason or "undefined"
        return charts.IntervalRow(label, None, None, n, undefined=f"undefined — {why}")
    return charts.IntervalRow(label, kappa, tuple(ci) if ci else None, n, colour=colour)


def calibration_charts(report: dict) -> dict:
    """The judge against the human ceiling (kappa, each with its bootstrap interval), the
    rates with their Wilson intervals, and the confusion as a heat map."""
    human, binary = report["human_agreement"], report["binary"]
    reviewers, judge = ("reviewer A", "reviewer B"), ("gold", "the judge")
    ceiling, judged = charts.INK, charts.VARIANT_COLOURS[1]
    scale = "three-way" if report["scale"] == "three_way" else "binary"
    kappas = [
        _readable_kappa(
            "Reviewers A vs B (the ceiling)",
            human["kappa"],
            human["ci95"],
            human["n"],
            human["confusion"],
            human["kappa_undefined_reason"],
            reviewers,
            ceiling,
        ),
        _readable_kappa(
            f"Judge vs gold ({scale})",
            report["kappa"],
            report["kappa_ci95"],
            report["scale_n"],
            report["confusion"] or binary["confusion"],
            report["kappa_undefined_reason"],
            judge,
            judged,
        ),
    ]
    if report["scale"] == "three_way" or report["kappa"] is None:
        kappas += [
            _readable_kappa(
                "Reviewers A vs B, supported vs unsupported",
                human["binary"]["kappa"],
                human["binary"]["ci95"],
                human["binary"]["n"],
                human["binary"]["confusion"],
                human["binary"]["kappa_undefined_reason"],
                reviewers,
                ceiling,
            ),
            _readable_kappa(
                "Judge vs gold, supported vs unsupported",
                binary["kappa"],
                binary["kappa_ci95"],
                binary["n"],
                binary["confusion"],
                binary["kappa_undefined_reason"],
                judge,
                judged,
            ),
        ]
    rates = report["rates"]
    matched = sum(row[i] for i, row in enumerate((report["confusion"] or {}).get("matrix", [])))
    human_matches = round((human["raw_agreement"] or 0) * human["n"])

    def rate(label: str, hits: int, n: int, colour: str) -> charts.IntervalRow:
        value = hits / n if n else None
        why = "" if n else "undefined — no item of this kind"
        return charts.IntervalRow(label, value, wilson_interval(hits, n), n, why, colour)

    rate_rows = [
        rate("Reviewers' raw agreement", human_matches, human["n"], ceiling),
        rate(f"Judge accuracy ({scale})", matched, report["scale_n"], judged)
        if report["confusion"]
        else charts.IntervalRow(
            f"Judge accuracy ({scale})",
            None,
            None,
            0,
            f"undefined — {report['kappa_undefined_reason'] or 'no scored item'}",
        ),
        rate("TPR: unsupported caught", rates["true_positives"], rates["positives"], judged),
        rate("TNR: supported passed", rates["true_negatives"], rates["negatives"], judged),
    ]
    confusion = report["confusion"] or binary["confusion"]
    return {
        "kappa": charts.interval_chart(
            "Cohen's kappa: the judge against the human ceiling",
            kappas,
            low=charts.kappa_axis(kappas),
            reference=0.0,
        ),
        "rates": charts.interval_chart("Rates with 95% Wilson intervals", rate_rows),
        "confusion": charts.heatmap(
            "Confusion: rows gold, columns the judge (shade: share of the row)",
            confusion["labels"],
            confusion["matrix"],
            short=[short_label(label) for label in confusion["labels"]],
        ),
    }


def strata_table(report: dict, by: str | None) -> dict | None:
    """The strata of one grouping as the page's table shows them: each stratum with its
    weight w_h = N_h / N beside its counts, and the stratified estimate; None when none is
    chosen."""
    if by is None:
        return None
    block = report["strata_by"][by]
    total = sum(row["target_n"] for row in block["strata"])
    rows = [
        {**row, "weight": row["target_n"] / total if total else None} for row in block["strata"]
    ]
    return {"by": by, "rows": rows, "stratified": block["stratified"], "target_n": total}


# The run page's per-item tables: shown a page at a time, filterable, in full as CSV.
ITEMS_PER_PAGE = 50
PROBLEM_KINDS = (
    ("malformed", "malformed"),
    ("timeout", "timed out"),
    ("quote_not_found", "quote not found"),
)
DISAGREEMENT_COLUMNS = (
    "case_id",
    "answer_id",
    "task_number",
    "claim_index",
    "claim",
    "gold",
    "gold_source",
    "judge",
    "quote",
    "quote_found",
)
PROBLEM_COLUMNS = (
    "line",
    "kind",
    "case_id",
    "answer_id",
    "task_number",
    "claim_index",
    "problem",
    "raw",
    "quote",
    "evidence_ids",
)


def problem_rows(report: dict) -> list[dict]:
    """The run's unscored verdicts and unfound quotes as one list, in file order."""
    kinds = {"malformed": "malformed", "timeouts": "timeout", "quotes_not_found": "quote_not_found"}
    rows = [
        {**row, "kind": kinds[name]} for name, items in report["problems"].items() for row in items
    ]
    return sorted(rows, key=lambda row: (row["line"], row["kind"]))


def _items_page(request, rows: list[dict], *, filters: dict, page: str, anchor: str) -> dict:
    """A filtered page of a per-item table, with its filters for the template."""
    chosen = {
        param: request.GET.get(param, "")
        for param, (_, choices) in filters.items()
        if request.GET.get(param, "") in {value for value, _ in choices}
    }
    kept = [
        row
        for row in rows
        if all(str(row.get(filters[p][0])) == value for p, value in chosen.items())
    ]
    pager = paginate(kept, request.GET, per_page=ITEMS_PER_PAGE, param=page, anchor=anchor)
    return {
        "pager": pager,
        "total": len(rows),
        "filtered": bool(chosen),
        "filters": [
            {"param": p, "label": FILTER_LABELS[p], "choices": choices, "chosen": chosen.get(p, "")}
            for p, (_, choices) in filters.items()
        ],
        "keep": [
            (name, value)
            for name, value in request.GET.items()
            if name not in filters and name != page
        ],
    }


FILTER_LABELS = {"gold": "Gold", "judge": "Judge", "kind": "Failure"}


@require_GET
@project_view(Role.LEAD)
def judge_run(request, project, role, run_pk):
    """A run's calibration: headline figures and charts, then the disagreements with gold and
    the run's failures a page at a time (filterable; full tables as CSV)."""
    run = _run_or_404(project, run_pk)
    split_form = SplitForm(request.GET or None)
    split = split_form.chosen_split()
    strata_form = StrataForm(request.GET or None)
    stored = _calibration(project, run, split)
    answer = computed.pending_answer(
        request,
        stored,
        project=project,
        role=role,
        title=f"Calibration of {run.name}",
        current="judges",
    )
    if answer is not None:
        return answer
    report = stored.result
    fmt = request.GET.get("format")
    if fmt == "csv":
        return _items_csv(project, run, report, request.GET.get("table", ""))
    labels = report["confusion"] or report["binary"]["confusion"]
    choices = [(label, label.replace("_", " ")) for label in labels["labels"]]
    disagreements = _items_page(
        request,
        report["disagreements"],
        filters={"gold": ("gold", choices), "judge": ("judge", choices)},
        page="dpage",
        anchor="#disagreements-section",
    )
    problems = _items_page(
        request,
        problem_rows(report),
        filters={"kind": ("kind", list(PROBLEM_KINDS))},
        page="ppage",
        anchor="#problems-section",
    )
    context = {
        "stored": stored,
        "project": project,
        "role": role,
        "run": run,
        "split_form": split_form,
        "r": report,
        "confusion": _confusion_rows(report["confusion"] or report["binary"]["confusion"]),
        "relevance_confusion": _confusion_rows(report["relevance"]["confusion"])
        if report.get("relevance")
        else None,
        "per_label": report["per_label"],
        "charts": calibration_charts(report),
        "strata_form": strata_form,
        "strata": strata_table(report, strata_form.chosen()),
        "settings_json": json.dumps(run.settings, ensure_ascii=False, sort_keys=True),
        "disagreements": disagreements,
        "problems": problems,
        "csv_query": f"?split={split}&format=csv&table=",
    }
    target = request.htmx.target if request.htmx else None
    if target in ("disagreements-section", "problems-section", "strata-section"):
        partial = target.removesuffix("-section")
        # The split switch in the page's head keeps the strata chosen here (out of band).
        context["strata_oob"] = partial == "strata"
        return render(request, f"evaluation/judge_run.html#{partial}", context)
    context.update(plan_and_gate(request, project=project, run=run, report=report))
    if request.htmx:
        return render(request, "evaluation/judge_run.html#report", context)
    # The calibration samples: one query when there is none; their estimates are computed
    # here from the samples' gold (small: the sampled answers only), not stored.
    designs = designs_of(run)
    context["samples"] = design_estimates(designs) if designs else []
    context["sample_form"] = SampleForm()
    return render(request, "evaluation/judge_run.html", context)


def _items_csv(project, run, report: dict, table: str) -> StreamingHttpResponse:
    """The full disagreements or failures table of the run, as CSV."""
    if table == "disagreements":
        columns, rows = DISAGREEMENT_COLUMNS, report["disagreements"]
    elif table == "problems":
        columns, rows = PROBLEM_COLUMNS, problem_rows(report)
    else:
        raise Http404("No such table.")
    writer = csvsafe.writer(_Echo())
    lines = itertools.chain(
        [writer.writerow(columns)],
        (writer.writerow([csv_value(row.get(c)) for c in columns]) for row in rows),
    )
    response = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    filename = f"{project.slug}-{run.name}-{report['split']}-{table}.csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


class _Echo:
    def write(self, value):
        return value


@require_GET
@project_view(Role.LEAD)
def judge_run_json(request, project, role, run_pk):
    run = _run_or_404(project, run_pk)
    stored = _calibration(project, run, SplitForm(request.GET or None).chosen_split())
    if stored.pending:
        response = JsonResponse({"detail": "Being computed: ask again in a moment."}, status=202)
        response["Retry-After"] = "3"
        return response
    result = with_strata(stored.result, StrataForm(request.GET or None).chosen())
    return JsonResponse(result, json_dumps_params={"ensure_ascii": False, "indent": 2})


def _calibration(project, run: JudgeRun, split: str) -> computed.Stored:
    """The run's calibration on `split`, as stored for the project's revision
    (annotate.common.computed)."""
    return computed.read(project, CALIBRATION, f"{run.pk}:{split}")


@require_GET
@project_view(Role.LEAD)
def judge_compare(request, project, role):
    runs = JudgeRun.objects.filter(project=project)
    form = CompareForm(request.GET or None, runs=runs)
    comparison = None
    if form.is_valid():
        # late import: heavy library (memory) -- numpy and scikit-learn, through the report
        from evaluation.reports.judge_comparison import compare_runs

        comparison = compare_runs(
            run_a=form.cleaned_data["a"], run_b=form.cleaned_data["b"], split=form.chosen_split()
        )
    return render(
        request,
        "evaluation/judge_compare.html",
        {
            "project": project,
            "role": role,
            "form": form,
            "c": comparison,
            "run_count": runs.count(),
        },
    )


@require_GET
@project_view(Role.LEAD)
def judge_answer(request, project, role, run_pk, answer_pk):
    run = _run_or_404(project, run_pk)
    answer = Answer.objects.filter(project=project, pk=answer_pk).select_related("case").first()
    if answer is None:
        raise Http404("Not found")
    # late import: heavy library (memory) -- numpy and scikit-learn, through the report
    from evaluation.reports.answer_detail import answer_detail

    detail = answer_detail(run=run, answer=answer)
    return render(
        request,
        "evaluation/judge_answer.html",
        {"project": project, "role": role, "run": run, "d": detail},
    )


@require_GET
@project_view(Role.LEAD)
def judge_few_shot(request, project, role):
    # late import: heavy library (memory) -- numpy and scikit-learn, through the report
    from evaluation.reports.few_shot import few_shot_examples

    examples = few_shot_examples(project)
    lines = (json.dumps(example, ensure_ascii=False) + "\n" for example in examples)
    response: HttpResponse = StreamingHttpResponse(lines, content_type="application/jsonl")
    filename = f"{project.slug}-judge-dev-examples.jsonl"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
