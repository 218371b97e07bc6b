"""Run a worker for the configured task backend: what `make run`, docker-compose's `worker`
service and a team's process manager start beside the app servers."""

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "Take background jobs (imports, exports, reports) from the task backend set by "
        "CLAIMDESK_TASKS: db_worker for 'database', rqworker for 'rq'."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--batch", action="store_true", help="run what is waiting, then exit (database only)"
        )
        parser.add_argument("--interval", type=float, default=0.5, help="seconds between polls")

    def handle(self, *args, batch, interval, **options):
        backend = settings.CLAIMDESK_TASKS
        verbosity = options["verbosity"]
        if backend == "immediate":
            self.stdout.write(
                "CLAIMDESK_TASKS=immediate: jobs run inside the requests that ask for them; "
                "no worker is needed."
            )
            return
        if backend == "rq":
            extra = {"burst": True} if batch else {}
            # django-tasks-rq's Job runs a Task; RQ's own would try to call it as a function.
            call_command(
                "rqworker", "default", job_class="django_tasks_rq.Job", verbosity=verbosity, **extra
            )
            return
        call_command(
            "db_worker",
            queue_name="default",
            interval=interval,
            batch=batch,
            reload=False,
            verbosity=verbosity,
        )
