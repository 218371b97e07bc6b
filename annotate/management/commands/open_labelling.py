from django.core.management.base import BaseCommand, CommandError

from annotate.common.errors import ServiceError
from annotate.models import Project
from annotate.projects.opening import open_labelling


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = "Lock the claims and open the project's queue (the lead's Open for labelling button)."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")

    def handle(self, *args, project, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        try:
            opened = open_labelling(project=found)
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"'{opened.slug}' is open for labelling: {opened.answers.count()} answers in the queue."
        )
