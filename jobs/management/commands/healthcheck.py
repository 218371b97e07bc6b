import json

from django.core.management.base import BaseCommand, CommandError

from jobs import health


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = (
        "Check the database, the task backend and the background jobs; exits non-zero when "
        "something is wrong (for monitoring). --liveness checks only what a worker needs to "
        "run (the database and the task backend): a worker container's health check, which "
        "a job lost earlier must not mark unhealthy."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument(
            "--liveness",
            action="store_true",
            help="only the database and the task backend, not the jobs",
        )

    def handle(self, *args, **options):
        report = health.liveness() if options["liveness"] else health.full()
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
        else:
            self.stdout.write(f"database: {report['database']}")
            if "task_backend" in report:
                self.stdout.write(f"task backend ({report['tasks']}): {report['task_backend']}")
            for name, value in report.get("jobs", {}).items():
                self.stdout.write(f"jobs {name.replace('_', ' ')}: {value}")
        if report["problems"]:
            raise CommandError("unhealthy: " + "; ".join(report["problems"]))
        if not options["json"]:
            self.stdout.write("healthy")
