import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotate.imports.bundle_plan import DeletionsNotConfirmed
from annotate.imports.lines import BundleInvalid
from annotate.imports.ragas_import import import_ragas
from annotate.schema import LabelSchema, SchemaInvalid


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = (
        "Import a Ragas evaluation dataset (JSONL or CSV) as one variant's answers, creating "
        "the project if needed. All or nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="Ragas dataset (.jsonl or .csv), or - for standard input")
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument(
            "--variant", required=True, help="the system that wrote the responses, e.g. baseline"
        )
        parser.add_argument("--name", help="project name when creating it")
        parser.add_argument(
            "--label-schema",
            metavar="JSON|PATH",
            help="the project's label schema, as a bundle header's label_schema: JSON text "
            '(\'{"support": "binary", "claim_fields": [], "answer_fields": []}\') or a file '
            "holding it; refused once labelling is open unless it is the project's",
        )
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

    def handle(self, *args, path, project, variant, name, replace, **options):
        schema = _label_schema(options["label_schema"])
        try:
            stream = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        with stream:
            try:
                result = import_ragas(
                    lines=stream,
                    project_slug=project,
                    variant=variant,
                    name=name,
                    label_schema=schema,
                    replace=replace,
                    confirm_deletions=options["confirm_deletions"],
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
        self.stdout.write(
            f"Project '{result.project.slug}' {verb} from {result.samples} Ragas sample(s) "
            f"of variant '{variant}': {result.summary()}"
        )
        if result.passed_over:
            self.stdout.write(
                f"Columns a bundle has no place for were passed over: "
                f"{', '.join(result.passed_over)}."
            )
        if result.proposed_claims:
            self.stdout.write(
                f"{result.proposed_claims} claim(s) were proposed by the sentence splitter: "
                "review them before opening labelling."
            )


def _label_schema(given: str | None) -> LabelSchema | None:
    """--label-schema: JSON text when it starts with '{', else the path of a file holding it."""
    if given is None:
        return None
    text = given
    if not given.lstrip().startswith("{"):
        try:
            text = Path(given).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(
                f"--label-schema: '{given}' is neither a JSON object nor a readable file ({exc})"
            ) from exc
    try:
        return LabelSchema.from_json(text)
    except SchemaInvalid as exc:
        raise CommandError(f"--label-schema: {'; '.join(exc.problems)}") from exc
