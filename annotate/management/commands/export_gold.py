import sys

from django.core.management.base import BaseCommand, CommandError

from annotate.exports import gold_csv, gold_rows, jsonl
from annotate.models import Project


class Command(BaseCommand):
    help = "Export the gold set: one row per doubly-labelled claim and per answer."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
        parser.add_argument("--output", help="file to write (default: standard output)")

    def handle(self, *args, project, format, output, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        lines = jsonl(gold_rows(found)) if format == "jsonl" else gold_csv(gold_rows(found))
        out = open(output, "w", encoding="utf-8", newline="") if output else sys.stdout  # noqa: SIM115
        try:
            for line in lines:
                out.write(line)
        finally:
            if output:
                out.close()
