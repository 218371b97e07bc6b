import sys

from django.core.management.base import BaseCommand, CommandError

from annotate.common.jsonl import jsonl
from annotate.imports.bundle_export import bundle_rows
from annotate.models import Project


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = "Write a project back as a bundle (round-trips import_bundle)."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--output", help="file to write (default: standard output)")

    def handle(self, *args, project, output, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        out = open(output, "w", encoding="utf-8") if output else sys.stdout  # noqa: SIM115
        try:
            for line in jsonl(bundle_rows(found)):
                out.write(line)
        finally:
            if output:
                out.close()
