from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotate.common.errors import ServiceError
from annotate.members.services import add_member
from annotate.models import Project, Role


class Command(BaseCommand):
    help = "Create the user if needed and give them a role in the project."
    # Scripts run it once per person: the system checks (which load every URL and view) add
    # a third of a second each time and check nothing this command touches.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser):
        parser.add_argument("slug", help="project slug")
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument(
            "--password", help="the new account's password (creates a usable login)"
        )
        parser.add_argument(
            "--reset-password",
            action="store_true",
            help="allow --password to replace an existing account's password",
        )

    def handle(self, *args, slug, username, role, password, reset_password, **options):
        project = Project.objects.filter(slug=slug).first()
        if project is None:
            raise CommandError(f"No project '{slug}'.")
        User = get_user_model()
        kept = password and not reset_password and User.objects.filter(username=username).exists()
        try:
            with transaction.atomic():
                add_member(
                    project=project,
                    username=username,
                    role=role,
                    password=password,
                    reset_password=reset_password,
                )
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"{username} is a {role} of '{slug}'.")
        if kept:
            self.stderr.write(
                f"'{username}' already has an account: their password was left unchanged "
                "(--reset-password replaces it)."
            )
