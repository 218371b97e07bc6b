"""The queue: which answer a reviewer gets next, and giving a task back."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotate.models import (
    Answer,
    Assignment,
    Membership,
    Project,
    Role,
)
from annotate.services.base import ServiceError

# --- The queue ------------------------------------------------------------------------------


def release_abandoned(*, project: Project, now=None) -> int:
    """Return tasks nobody has touched for CLAIMDESK_ABANDON_AFTER_MINUTES to the pool."""
    now = now or timezone.now()
    cutoff = now - timedelta(minutes=settings.CLAIMDESK_ABANDON_AFTER_MINUTES)
    return Assignment.objects.filter(
        project=project, status=Assignment.Status.IN_PROGRESS, touched_at__lt=cutoff
    ).update(status=Assignment.Status.RELEASED, release_reason="abandoned (no activity)")


def next_task(*, project: Project, reviewer) -> Assignment | None:
    """The reviewer's current task, or a new one: an answer with fewer than `overlap` holders
    that this reviewer has never taken, in the project's shuffled order.

    Safe under concurrency: the reviewer's membership row is locked first (one request per
    reviewer at a time, so nobody holds two new tasks from a double click), then the candidate
    answer is locked with SKIP LOCKED, so two reviewers pressing at once take different
    answers, or the same one only while the count taken under the lock stays below overlap.
    """
    if project.state != Project.State.OPEN:
        raise ServiceError("Labelling is not open in this project yet.")
    release_abandoned(project=project)
    with transaction.atomic():
        Membership.objects.select_for_update().get(
            project=project, user=reviewer, role=Role.REVIEWER
        )
        current = (
            Assignment.objects.for_reviewer(reviewer)
            .filter(project=project, status=Assignment.Status.IN_PROGRESS)
            .order_by("taken_at")
            .first()
        )
        if current is not None:
            return current
        mine = Assignment.objects.filter(answer=OuterRef("pk"), reviewer=reviewer)
        holders = (
            Assignment.objects.holding()
            .filter(answer=OuterRef("pk"))
            .order_by()
            .values("answer")
            .annotate(n=Count("pk"))
            .values("n")
        )
        candidates = (
            Answer.objects.filter(project=project, task_number__isnull=False)
            .exclude(Exists(mine))
            .annotate(holders=Coalesce(Subquery(holders), 0))
            .filter(holders__lt=project.overlap)
            .order_by("task_number")
            .select_for_update(skip_locked=True, of=("self",))
        )
        for answer in candidates[:5]:
            # Re-count under the row lock: a concurrent transaction that took this answer
            # has committed by the time we hold the lock.
            if answer.assignments.holding().count() < project.overlap:
                return Assignment.objects.create(project=project, answer=answer, reviewer=reviewer)
    return None


@transaction.atomic
def release_task(*, assignment: Assignment, reason: str) -> Assignment:
    """Skip: the reviewer gives the task back with a reason; it returns to the pool."""
    assignment = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if assignment.status != Assignment.Status.IN_PROGRESS:
        raise ServiceError("Only a task in progress can be skipped.")
    if not reason.strip():
        raise ServiceError("Say why you skip this task (a lead reads it).")
    assignment.status = Assignment.Status.RELEASED
    assignment.release_reason = reason.strip()
    assignment.save(update_fields=["status", "release_reason"])
    return assignment
