"""Forget finished jobs after a while, with their files, and the task framework's rows."""

from datetime import timedelta

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.utils import timezone

from jobs import progress_files, services
from jobs.models import Job


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = (
        "Delete finished jobs older than --days (their uploads and export files too) and the "
        "database task backend's finished task rows; run it daily (cron, a scheduled job)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=30)

    def handle(self, *args, days, **options):
        cutoff = timezone.now() - timedelta(days=days)
        old = Job.objects.filter(
            status__in=(Job.Status.SUCCEEDED, Job.Status.FAILED), finished_at__lt=cutoff
        )
        files = 0
        for upload, output in old.values_list("file", "output"):
            for name in (upload, output):
                if name:
                    services.storage().delete(name)
                    files += 1
        deleted, _ = old.delete()
        self.stdout.write(f"{deleted} job(s) older than {days} days deleted, {files} file(s)")
        # On SQLite: the live progress of jobs that have ended, whenever they ended (their rows
        # hold the final figures; a lost worker's job keeps its last beat until it is retried).
        running = Job.objects.filter(status=Job.Status.RUNNING).values_list("pk", flat=True)
        progress_files.prune({str(pk) for pk in running})
        if settings.CLAIMDESK_TASKS == "database":
            call_command(
                "prune_db_task_results",
                min_age_days=days,
                failed_min_age_days=days,
                verbosity=0,
            )
