from django.core.management.base import BaseCommand, CommandError

from annotate.common.errors import ServiceError
from annotate.gold.exports import ITEMS, JUDGE_SPLITS
from annotate.models import Project
from annotate.releases.folder import NO_TOKEN, hub_token, push_to_hub, write_folder
from annotate.releases.services import ReleaseRefused, create_release


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as export_gold: nothing here needs them
    help = (
        "Freeze the project's gold set as a named release (its rows, content hash and dataset "
        "card), optionally written as a Hugging Face dataset folder and pushed to the Hub."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--name", required=True, help="the release's name: v1, 2026-12-07 ...")
        parser.add_argument("--item", choices=ITEMS, default="all", help="claim, answer or all")
        parser.add_argument("--split", choices=JUDGE_SPLITS, default="all", help="judge split")
        parser.add_argument(
            "--decided-only",
            action="store_true",
            help="leave out rows with a field a lead still has to decide",
        )
        parser.add_argument(
            "--output-dir",
            help="also write the release as a dataset folder here (README.md, data/*.parquet)",
        )
        parser.add_argument(
            "--push-to-hub",
            metavar="REPO",
            help="upload the dataset folder to this Hugging Face dataset repository (HF_TOKEN)",
        )
        parser.add_argument(
            "--public", action="store_true", help="with --push-to-hub: create the repository public"
        )

    def handle(self, *args, project, name, item, split, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        if options["push_to_hub"] and not options["output_dir"]:
            raise CommandError("--push-to-hub needs --output-dir: the folder it uploads.")
        if options["push_to_hub"] and hub_token() is None:
            raise CommandError(NO_TOKEN)
        try:
            release = create_release(
                project=found,
                name=name,
                item=item,
                split=split,
                decided_only=options["decided_only"],
            )
        except ReleaseRefused as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"Release {release.name} of {found.slug}: {release.row_count} rows, "
            f"sha256 {release.sha256}"
        )
        if options["output_dir"]:
            if options["push_to_hub"]:
                try:
                    url = push_to_hub(
                        release,
                        options["push_to_hub"],
                        options["output_dir"],
                        private=not options["public"],
                    )
                except ServiceError as exc:
                    raise CommandError(str(exc)) from exc
                self.stdout.write(f"Pushed to {options['push_to_hub']}: {url}")
            else:
                for path in write_folder(release, options["output_dir"]):
                    self.stdout.write(f"wrote {path}")
