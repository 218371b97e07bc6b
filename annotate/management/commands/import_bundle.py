import sys

from django.core.management.base import BaseCommand, CommandError

from annotate.imports.bundle_import import import_bundle
from annotate.imports.bundle_plan import DeletionsNotConfirmed
from annotate.imports.lines import BundleInvalid


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = "Import a bundle (JSONL), creating the project if needed. All or nothing."

    def add_arguments(self, parser):
        parser.add_argument("path", help="bundle file (JSONL), or - for standard input")
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--name", help="project name when creating it")
        parser.add_argument(
            "--replace",
            action="store_true",
            help="replace changed items that nobody has labelled yet",
        )
        parser.add_argument(
            "--confirm-deletions",
            action="store_true",
            help="go on when the replace deletes data (the answers it replaces, their claims "
            "and judge verdicts); without it the import lists them and stops",
        )

    def handle(self, *args, path, project, name, replace, **options):
        def progress(step: str, n: int) -> None:
            if n >= 5000:  # small files finish before progress would help anyone
                self.stderr.write(f"  {step}: {n:,}")

        try:
            stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        with stream:
            try:
                result = import_bundle(
                    lines=stream,
                    project_slug=project,
                    name=name,
                    replace=replace,
                    confirm_deletions=options["confirm_deletions"],
                    progress=progress,
                )
            except DeletionsNotConfirmed as exc:
                for line in exc.deletions.lines():
                    self.stderr.write(line)
                raise CommandError(
                    "This replace deletes data (listed above); nothing was imported. Run it "
                    "again with --confirm-deletions to go on."
                ) from exc
            except BundleInvalid as exc:
                for error in exc.grouped():
                    self.stderr.write(error)
                raise CommandError(
                    f"{len(exc.errors)} problem(s) found in {path}; nothing was imported."
                ) from exc
        verb = "created" if result.created_project else "updated"
        self.stdout.write(f"Project '{result.project.slug}' {verb}: {result.summary()}")
        for answer_id, changes, labelled in result.corrections:
            what = ", ".join(f"{k} {v['old']} → {v['new']}" for k, v in changes.items())
            kept = " (labelled: its labels are kept)" if labelled else ""
            self.stdout.write(f"Corrected answer '{answer_id}': {what}{kept}")
        if result.proposed_claims:
            self.stdout.write(
                f"{result.proposed_claims} claim(s) were proposed by the sentence splitter: "
                "review them before opening labelling."
            )
