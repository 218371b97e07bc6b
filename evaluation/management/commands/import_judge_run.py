import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotate.imports.lines import BundleInvalid
from annotate.models import Project
from evaluation.judges.runs import import_judge_run


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = "Import a model judge's run (JSONL) into a project. All or nothing."

    def add_arguments(self, parser):
        parser.add_argument("path", help="judge-run file (JSONL), or - for standard input")
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--name", help="name the run (default: the file's `judge`)")

    def handle(self, *args, path, project, name, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        try:
            stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        with stream:
            try:
                result = import_judge_run(
                    lines=stream,
                    project=found,
                    name=name,
                    source_name="" if path == "-" else Path(path).name,
                )
            except BundleInvalid as exc:
                for error in exc.grouped():
                    self.stderr.write(error)
                raise CommandError(
                    f"{len(exc.errors)} problem(s) found in {path}; nothing was imported."
                ) from exc
        self.stdout.write(f"Judge run '{result.run.name}' imported: {result.summary()}.")
        if result.self_judged:
            self.stdout.write(
                f"Warning: {result.self_judged} verdict(s) grade answers written by the judge's "
                f"own model ({result.run.model}): no independent confirmation."
            )
