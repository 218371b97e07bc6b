"""What background work leaves in the database: one Job per import or export a person asked
for.

A Job is the record people and scripts poll: what was asked (kind, project, file, parameters),
how far it got (stage, lines read, rows written, a heartbeat while it runs), and how it ended
(a result summary, every error by line, or why it failed in words). The task framework keeps
its own bookkeeping (django_tasks_db's rows, or RQ's); this is the one the product reads.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from django.conf import settings
from django.db import models
from django.utils import timezone

from jobs import kinds, progress_files

# A queued job that no worker has started in this long is reported (manage.py healthcheck)
# and may be sent again (Retry).
QUEUED_TOO_LONG = timedelta(minutes=5)


class JobQuerySet(models.QuerySet):
    def visible_to(self, user) -> JobQuerySet:
        """Jobs a person may watch: those of projects they lead, and their own that have no
        project yet (a new project's import). A lead who steps down or leaves no longer sees
        the project's jobs, their own included: a gold export holds every reviewer's labels."""
        if not user.is_authenticated:
            return self.none()
        if user.is_superuser:
            return self
        projects = self.model._meta.get_field("project").related_model  # annotate.Project
        led = projects.objects.led_by(user).values("pk")
        return self.filter(
            models.Q(project__isnull=True, created_by=user) | models.Q(project__in=led)
        )

    def stalled(self) -> JobQuerySet:
        cutoff = timezone.now() - timedelta(seconds=settings.CLAIMDESK_JOB_STALE_SECONDS)
        quiet = self.filter(status=Job.Status.RUNNING, heartbeat_at__lt=cutoff)
        if progress_files.folder(self.db) is None:
            return quiet
        # On SQLite a running job's row keeps its claim's heartbeat: each of these few is read
        # with its live one (Job.from_db) and kept only if that is old too.
        beating = [job.pk for job in quiet if not job.stalled]
        return quiet.exclude(pk__in=beating)


class Job(models.Model):
    # The names the database knows, and how a page calls them. What each kind runs is
    # registered by its app's tasks module (jobs.kinds); jobs.apps checks the two agree.
    class Kind(models.TextChoices):
        BUNDLE_IMPORT = "bundle_import", "Bundle import"
        RAGAS_IMPORT = "ragas_import", "Ragas dataset import"
        LABEL_IMPORT = "label_import", "Label import"
        GOLD_IMPORT = "gold_import", "Gold import"
        JUDGE_IMPORT = "judge_import", "Judge run import"
        GOLD_EXPORT = "gold_export", "Gold export"
        GOLD_RELEASE = "gold_release", "Gold release"

    class Status(models.TextChoices):
        QUEUED = "queued", "Waiting for a worker"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Done"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kind = models.CharField(max_length=20, choices=Kind)
    status = models.CharField(max_length=10, choices=Status, default=Status.QUEUED)
    # Set once the project exists: an import that creates one names only its slug until then.
    project = models.ForeignKey(
        "annotate.Project",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="jobs",
        db_index=False,
    )
    project_slug = models.CharField(max_length=80)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    params = models.JSONField(default=dict, blank=True)
    # The uploaded file, in the "jobs" storage, until the job no longer needs it.
    file = models.CharField(max_length=255, blank=True)
    file_name = models.CharField(max_length=255, blank=True, help_text="As it was uploaded.")
    file_size = models.BigIntegerField(default=0)
    # What an export wrote, in the "jobs" storage.
    output = models.CharField(max_length=255, blank=True)

    stage = models.CharField(max_length=40, blank=True)
    lines_total = models.BigIntegerField(default=0)
    lines_read = models.BigIntegerField(default=0)
    rows_total = models.BigIntegerField(default=0)
    rows_written = models.BigIntegerField(default=0)

    result = models.JSONField(default=dict, blank=True)
    # Every problem of a refused file: [line, message, unit] as annotate.imports.lines.BundleError.
    errors = models.JSONField(default=list, blank=True)
    failure = models.TextField(blank=True, help_text="Why it failed, in words.")

    # Every run of the job, ever: a run's writes ask for its own number, so one that lost the
    # job (resumed or retried meanwhile) changes nothing.
    attempt = models.PositiveIntegerField(default=0)
    # Runs since a person asked (the upload, or Retry): a worker that stopped mid-run leaves
    # the job to the next live one, up to settings.CLAIMDESK_JOB_MAX_ATTEMPTS runs.
    attempts = models.PositiveIntegerField(default=0)
    task_id = models.CharField(max_length=64, blank=True)
    worker = models.CharField(max_length=120, blank=True, help_text="host:pid of the last run.")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = JobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["status", "heartbeat_at"], name="job_status_heartbeat"),
            models.Index(fields=["project", "kind", "-created_at"], name="job_project_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} {self.pk} ({self.status})"

    @classmethod
    def from_db(cls, db, field_names, values):
        """A running job as its row says, with the heartbeat and progress its worker keeps
        beside an SQLite database while the import holds the write lock (jobs.progress_files):
        every reader -- the job page, the API, a retry, the staleness checks -- sees them."""
        job = super().from_db(db, field_names, values)
        if job.get_deferred_fields() or job.status != cls.Status.RUNNING:
            return job
        beat = progress_files.read(job.pk, attempt=job.attempt, using=db)
        if beat is not None and (
            job.heartbeat_at is None or beat["heartbeat_at"] > job.heartbeat_at
        ):
            job.heartbeat_at = beat["heartbeat_at"]
            for name in progress_files.LIVE_FIELDS:
                setattr(job, name, beat[name])
        return job

    @property
    def is_import(self) -> bool:
        return kinds.get(self.kind).is_import

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.SUCCEEDED, self.Status.FAILED)

    @property
    def stalled(self) -> bool:
        """Running, but its worker has stopped writing heartbeats: killed or gone."""
        if self.status != self.Status.RUNNING or self.heartbeat_at is None:
            return False
        age = (timezone.now() - self.heartbeat_at).total_seconds()
        return age > settings.CLAIMDESK_JOB_STALE_SECONDS

    @property
    def waited_too_long(self) -> bool:
        """Queued for longer than any worker should take to start it: no worker runs, or its
        task was lost on the way (Redis restarted without persistence, a worker killed before
        it claimed it). Sending it again is safe: a task delivered twice runs once."""
        if self.status != self.Status.QUEUED:
            return False
        return timezone.now() - self.created_at > QUEUED_TOO_LONG

    @property
    def retryable(self) -> bool:
        """A failure the same file may get past: a crash, a lost worker, a database error, a
        task that never reached a worker. A file refused line by line would be refused
        again, and is not kept."""
        if self.stalled or self.waited_too_long:
            return True
        return self.status == self.Status.FAILED and bool(self.file or not self.is_import)

    @property
    def percent(self) -> int | None:
        """How far along, for a progress bar. An import spends about a quarter of its time
        reading and checking the file and the rest writing (bench/tasks.py measures where);
        the bar follows that. None while nothing can be said (waiting)."""
        if self.status == self.Status.SUCCEEDED:
            return 100
        if self.status != self.Status.RUNNING:
            return None
        if not self.is_import:
            done = self.rows_written / self.rows_total if self.rows_total else 0.0
            return int(100 * min(done, 1.0))
        if self.stage in WRITE_SHARE:
            return int(100 * (READ_SHARE + (1 - READ_SHARE) * WRITE_SHARE[self.stage]))
        read = min(self.lines_read / self.lines_total, 1.0) if self.lines_total else 0.0
        return int(100 * READ_SHARE * read)


# An import's progress: the share of its time spent reading and checking the file, then how
# much of the writing is done once each step (annotate.imports.bundle_write.write_import) has
# finished.
# Measured by bench/tasks.py on a 100,000-claim bundle (stages at 1.8, 2.3, 3.4, 3.8, 4.4 s
# of 6.3 s): after the citations come the judgments, the planner's statistics and the commit.
READ_SHARE = 0.25
WRITE_SHARE = {
    "passages": 0.03,
    "cases": 0.06,
    "answers": 0.16,
    "retrieved passages": 0.39,
    "claims": 0.47,
    "citations": 0.6,
    "written": 0.95,
}
