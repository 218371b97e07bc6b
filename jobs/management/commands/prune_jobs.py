"""Forget finished jobs after a while, with their files, and the task framework's rows; remove
files no job points at."""

import re
from datetime import timedelta

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.utils import timezone

from jobs import progress_files, services
from jobs.models import Job

# Every file in the "jobs" storage is named after its job (jobs.services: uploads/<id>.upload,
# exports/<slug>-gold-<id>.<format>).
JOB_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
FOLDERS = ("uploads", services.OUTPUTS)
# A file without a job row yet may be an upload being accepted this very moment (it is stored
# before its job): one is an orphan only once it is this old.
ORPHAN_AFTER = timedelta(hours=1)


def orphans() -> list[str]:
    """Files of the "jobs" storage that no job will read or serve: their job is gone (deleted,
    or never saved: a request that died between storing an upload and queueing it), or has
    ended without pointing at them (what a killed attempt left before the job failed). A
    waiting or running job's files are its own, pointed at or not: it may be writing them."""
    store = services.storage()
    names = []
    for folder in FOLDERS:
        if store.exists(folder):
            names += [f"{folder}/{name}" for name in store.listdir(folder)[1]]
    ids = {name: match.group(0) for name in names if (match := JOB_ID.search(name))}
    jobs = {
        str(pk): (status, file, output)
        for pk, status, file, output in Job.objects.filter(pk__in=set(ids.values())).values_list(
            "pk", "status", "file", "output"
        )
    }
    old = timezone.now() - ORPHAN_AFTER
    found = []
    for name in names:
        job = jobs.get(ids.get(name, ""))
        if job is None:
            if store.get_modified_time(name) < old:
                found.append(name)
        elif job[0] in (Job.Status.SUCCEEDED, Job.Status.FAILED) and name not in job[1:]:
            found.append(name)
    return found


class Command(BaseCommand):
    requires_system_checks: list[str] = []  # as add_member: nothing here needs them
    help = (
        "Delete finished jobs older than --days (their uploads and export files too), files no "
        "job points at, and the database task backend's finished task rows; run it daily "
        "(cron, a scheduled job)."
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
        stray = orphans()
        for name in stray:
            services.storage().delete(name)
        self.stdout.write(f"{len(stray)} file(s) no job points at deleted")
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
