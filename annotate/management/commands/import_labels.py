from django.core.management.base import BaseCommand, CommandError

from annotate.imports.label_import import import_labels
from annotate.imports.lines import BundleInvalid
from annotate.models import Project


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = "Import reviewers' submitted labels (JSONL). All or nothing."

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--project", required=True, help="project slug")

    def handle(self, *args, path, project, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        try:
            with open(path, "rb") as stream:
                result = import_labels(lines=stream, project=found)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        except BundleInvalid as exc:
            for error in exc.grouped():
                self.stderr.write(error)
            raise CommandError(
                f"{len(exc.errors)} problem(s) found in {path}; nothing was imported."
            ) from exc
        self.stdout.write(
            f"Imported {result.created} label set(s) into '{found.slug}' "
            f"({result.unchanged} unchanged)."
        )
