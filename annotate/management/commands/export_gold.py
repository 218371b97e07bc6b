import sys

from django.core.management.base import BaseCommand, CommandError

from annotate.common import collector
from annotate.common.jsonl import jsonl
from annotate.gold.exports import FORMATS, ITEMS, JUDGE_SPLITS, gold_csv, gold_rows
from annotate.gold.parquet import write_parquet
from annotate.models import Project


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = "Export the gold set: one row per claim and per answer of doubly-labelled answers."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument(
            "--format",
            choices=FORMATS,
            default="jsonl",
            help="jsonl, csv, or parquet (typed columns; needs --output)",
        )
        parser.add_argument("--output", help="file to write (default: standard output)")
        parser.add_argument(
            "--item",
            choices=ITEMS,
            default="all",
            help="claim rows, answer rows (the samples Ragas reads), or all",
        )
        parser.add_argument("--split", choices=JUDGE_SPLITS, default="all", help="judge split")
        parser.add_argument(
            "--decided-only",
            action="store_true",
            help="leave out rows with a field a lead still has to decide",
        )
        parser.add_argument(
            "--with-context",
            action="store_true",
            help="repeat the answer's question, text and passages on every claim row",
        )

    def handle(self, *args, project, format, output, item, split, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        if format == "parquet" and not output:
            raise CommandError("--format parquet needs --output: Parquet is a binary file.")
        rows = gold_rows(
            found,
            item=item,
            split=split,
            decided_only=options["decided_only"],
            with_context=options["with_context"],
        )
        if format == "parquet":
            with collector.paused():
                write_parquet(rows, output)
            return
        lines = jsonl(rows) if format == "jsonl" else gold_csv(rows)
        out = open(output, "w", encoding="utf-8", newline="") if output else sys.stdout  # noqa: SIM115
        try:
            with collector.paused():  # each chunk's rows would send the collector over them all
                for line in lines:
                    out.write(line)
        finally:
            if output:
                out.close()
