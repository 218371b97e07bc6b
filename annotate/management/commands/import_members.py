from django.core.management.base import BaseCommand, CommandError

from annotate.imports.lines import BundleInvalid
from annotate.members.services import import_members
from annotate.models import Project


class Command(BaseCommand):
    help = (
        "Add many members at once from a CSV (username,role[,email]; a header row is "
        "optional). All or nothing."
    )

    requires_system_checks: list[str] = []  # as add_member: nothing here needs them

    def add_arguments(self, parser):
        parser.add_argument("path", help="CSV file: username,role[,email] a line")
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument(
            "--reset-password",
            action="store_true",
            help="generate a password for each listed account that has none, and print it "
            "once (a password someone has is never replaced)",
        )

    def handle(self, *args, path, project, reset_password, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        try:
            with open(path, "rb") as stream:
                result = import_members(lines=stream, project=found, reset_password=reset_password)
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        except BundleInvalid as exc:
            for error in exc.grouped():
                self.stderr.write(error)
            raise CommandError(
                f"{len(exc.errors)} problem(s) found in {path}; nobody was added."
            ) from exc
        self.stdout.write(f"Members of '{found.slug}': {result.summary()}.")
        if result.passwords:
            self.stdout.write("New passwords, shown this once (username, password):")
            for username, password in result.passwords.items():
                self.stdout.write(f"{username}\t{password}")
        if result.without_password:
            self.stdout.write(
                f"{len(result.without_password)} account(s) cannot log in yet, having no "
                f"password: {_names(result.without_password)}. An administrator sets one "
                "(Django admin, or manage.py changepassword NAME), or run this again with "
                "--reset-password."
            )
        if result.email_kept:
            self.stdout.write(
                "Existing accounts keep their own email, which differs from the file's: "
                f"{_names(result.email_kept)}."
            )


def _names(names: list[str], shown: int = 10) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")
