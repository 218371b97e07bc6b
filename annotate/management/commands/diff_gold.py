import json

from django.core.management.base import BaseCommand, CommandError

from annotate.models import Project
from annotate.releases.diff import diff_releases
from annotate.releases.selectors import release_named


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as export_gold: nothing here needs them
    help = "Compare two gold releases: rows added, removed and changed, field by field."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("before", help="the earlier release's name")
        parser.add_argument("after", help="the later release's name")
        parser.add_argument("--json", action="store_true", help="the diff as JSON")

    def handle(self, *args, project, before, after, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        releases = []
        for name in (before, after):
            release = release_named(found, name)
            if release is None:
                raise CommandError(f"Project '{project}' has no release named '{name}'.")
            releases.append(release)
        diff = diff_releases(*releases)
        if options["json"]:
            self.stdout.write(json.dumps(diff.as_dict(), ensure_ascii=False, indent=2))
        else:
            self.stdout.write("\n".join(diff.lines()))
