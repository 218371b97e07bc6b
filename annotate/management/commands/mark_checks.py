from django.core.management.base import BaseCommand, CommandError

from annotate.checks import services
from annotate.common.errors import ServiceError
from annotate.models import Project


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as export_gold: nothing here needs them
    help = (
        "Mark decided answers (agreed or adjudicated gold) as gold checks, which the queue "
        "serves to reviewers who never labelled them at the project's check rate; --rate sets "
        "that rate."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project slug")
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--answers", nargs="+", metavar="ID", help="answer ids of the bundle")
        which.add_argument(
            "--all-decided", action="store_true", help="every decided answer not a check yet"
        )
        parser.add_argument(
            "--rate", type=float, help="the project's check rate, 0 (off) to 1 (0.1: one in ten)"
        )

    def handle(self, *args, project, answers, all_decided, rate, **options):
        found = Project.objects.filter(slug=project).first()
        if found is None:
            raise CommandError(f"No project '{project}'.")
        if rate is not None and not 0 <= rate <= 1:
            raise CommandError("--rate is a number from 0 to 1.")
        try:
            if all_decided:
                marked = services.mark_all_decided(project=found, lead=None)
            else:
                marked = services.mark_checks(project=found, lead=None, answer_ids=answers)
            if rate is not None:
                found = services.set_check_rate(project=found, rate=rate)
        except services.ChecksRefused as exc:
            raise CommandError(
                "Nothing marked:\n" + "\n".join(f"  {line}" for line in _named(exc, answers))
            ) from exc
        except ServiceError as exc:
            raise CommandError(str(exc)) from exc
        total = found.gold_checks.count()
        self.stdout.write(
            f"Marked {marked} answer{'s' if marked != 1 else ''} as checks in {found.slug}: "
            f"{total} check{'s' if total != 1 else ''}, check rate {found.check_rate:g}."
        )


def _named(exc, answers) -> list[str]:
    """The problems, each naming the answer id it is about."""
    return [f"{answers[i]}: {message}" for i, message in exc.problems]
