import os

from django.core.management.base import BaseCommand, CommandError

from annotate.imports.gold_import import import_gold
from annotate.imports.lines import BundleInvalid
from annotate.models import Project


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = (
        "Import gold from elsewhere: one adjudicated label per answer (the reviewer-label "
        "format without reviewer), as gold with source 'imported'. All or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument(
            "--source", required=True, help="where the labels come from (a benchmark's name)"
        )
        parser.add_argument(
            "--replace",
            action="store_true",
            help="replace the imported gold of answers this file labels differently",
        )

    def handle(self, *args, path, project, source, replace, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        try:
            with open(path, "rb") as stream:
                result = import_gold(
                    lines=stream,
                    project=found,
                    source=source,
                    file_name=os.path.basename(path),
                    replace=replace,
                )
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        except BundleInvalid as exc:
            for error in exc.errors:
                self.stderr.write(str(error))
            raise CommandError(
                f"{len(exc.errors)} problem(s) found in {path}; nothing was imported."
            ) from exc
        self.stdout.write(
            f"Imported gold for {result.created} answer(s) ({result.claims} claim(s)) into "
            f"'{found.slug}' from '{result.source}': {result.replaced} replaced, "
            f"{result.unchanged} unchanged."
        )
