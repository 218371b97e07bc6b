"""`evaluate --project SLUG [--k 1,3,5,10] [--compare A B [--compare-k 5]] [--json]`: the
evaluation report for scripts and CI, with the paired comparison of two variants when asked.
The numbers are those of the report page: both call evaluation.reports."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotate.models import Project
from evaluation.reports.comparison import compare
from evaluation.reports.dataset import load
from evaluation.reports.evaluation import DEFAULT_KS, evaluate
from evaluation.reports.tables import Table, comparison_tables, report_tables, text_value

TEXT_TABLES = ("retrieval", "generation", "abstention", "failure_labels", "stages", "latency")
COMPARISON_TABLES = ("comparison", "fusion", "transitions")


def parse_ks(value: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise CommandError(f"--k takes comma-separated whole numbers, got {value!r}") from None
    if not ks or any(k < 1 for k in ks):
        raise CommandError(f"--k takes whole numbers of at least 1, got {value!r}")
    return ks


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = "Retrieval and generation metrics per variant and slice, with the stage diagnosis."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument(
            "--k",
            default=",".join(map(str, DEFAULT_KS)),
            help="comma-separated cut-offs (default 1,3,5,10)",
        )
        parser.add_argument(
            "--compare",
            nargs=2,
            dest="pair",
            metavar=("A", "B"),
            help="also compare variant A (before) with B (after), cases paired by case id",
        )
        parser.add_argument(
            "--compare-k",
            type=int,
            default=5,
            help="the cut-off of the comparison's retrieval metrics (default 5)",
        )
        parser.add_argument(
            "--json", action="store_true", dest="as_json", help="print the report as JSON"
        )

    def handle(self, *args, project, k, pair, compare_k, as_json: bool, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        ks = parse_ks(k)
        if compare_k < 1:
            raise CommandError(f"--compare-k takes a whole number of at least 1, got {compare_k}")
        data = load(found)
        report = evaluate(found, ks=ks, data=data)
        if pair:
            a, b = pair
            if a == b:
                raise CommandError("--compare takes two different variants.")
            try:
                report["comparison"] = compare(found, a, b, k=compare_k, data=data)
            except ValueError as exc:  # an unknown variant name
                raise CommandError(f"--compare: {exc}") from None
        if as_json:
            self.stdout.write(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False))
            return
        self.stdout.write(render_text(report))


def render_text(report: dict) -> str:
    d = report["definitions"]
    lines = [
        f"Evaluation of '{report['project']}' (corpus {report['corpus_version']})",
        f"nDCG gain: {d['ndcg_gain']}",
        f"p95: {d['p95']}",
        f"Failing: {d['failing']}",
        f"Stage order: {' -> '.join(d['stage_order'])} (retrieved = in the top {d['stage_k']})",
        "Gold: agreed or adjudicated fields only; pending and unlabelled are counted apart.",
        "",
        "Variants",
    ]
    for name, variant in report["variants"].items():
        settings = ", ".join(f"{k}={v}" for k, v in variant["settings"].items()) or "—"
        lines.append(
            f"  {name}: {variant['answers']} answers over {variant['cases']} cases"
            f"{' (repeated samples)' if variant['repeated_samples'] else ''}; {settings}"
        )
    tables = report_tables(report)
    for name in TEXT_TABLES:
        lines += ["", *format_table(tables[name])]
    if "comparison" in report:
        comparison = comparison_tables(report["comparison"])
        lines += ["", "Comparison", "", *format_table(comparison["comparison"])]
        for name in COMPARISON_TABLES[1:]:
            lines += format_table(comparison[name])
    return "\n".join(lines) + "\n"


def format_table(table: Table) -> list[str]:
    lines = [table.title, "=" * len(table.title)]
    for group, columns, rows in table.groups():
        if group is not None:
            lines.append(f"[{group}]")
        cells = [[c.label for c in columns]] + [
            [text_value(v, c.kind) for v, c in zip(row, columns, strict=True)] for row in rows
        ]
        widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
        right = [c.kind not in ("text", "ids", "answer_ids", "json") for c in columns]
        for r in cells:
            lines.append(
                "  ".join(
                    cell.rjust(w) if align else cell.ljust(w)
                    for cell, w, align in zip(r, widths, right, strict=True)
                ).rstrip()
            )
        lines.append("")
    return lines
