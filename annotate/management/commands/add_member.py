from django.core.management.base import BaseCommand, CommandError

from annotate.models import Project, Role
from annotate.services import ServiceError, add_member


class Command(BaseCommand):
    help = "Create the user if needed and give them a role in the project."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="project slug")
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--password", help="set this password (creates a usable login)")

    def handle(self, *args, slug, username, role, password, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project '{slug}'.")
        try:
            add_member(project=project, username=username, role=role, password=password)
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{username} is a {role} of '{slug}'.")
