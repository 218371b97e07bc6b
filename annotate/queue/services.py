"""The queue: which answer a reviewer gets next, and giving a task back."""

from __future__ import annotations

import hashlib
import hmac
import random
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotate.common.errors import ServiceError
from annotate.models import Answer, Assignment, GoldCheck, Membership, Project, Role

# --- The queue ------------------------------------------------------------------------------


def release_abandoned(*, project: Project, now=None) -> int:
    """Return tasks nobody has touched for CLAIMDESK_ABANDON_AFTER_MINUTES to the pool. A
    task its reviewer reopened (Undo) is not abandoned: it holds a submitted label set
    (revision > 0), which releasing would drop from agreement and gold and give to someone
    else; it waits for its reviewer to submit again."""
    now = now or timezone.now()
    cutoff = now - timedelta(minutes=settings.CLAIMDESK_ABANDON_AFTER_MINUTES)
    stale = Assignment.objects.filter(
        project=project,
        status=Assignment.Status.IN_PROGRESS,
        touched_at__lt=cutoff,
        revision=0,
    )
    # Every next_task asks, and there is almost never anything to release: one read then,
    # not a transaction with an UPDATE of no rows (four round trips).
    if not stale.exists():
        return 0
    with transaction.atomic():
        # Locked and filtered again: a task touched since is not abandoned any more, and each
        # answer that gets room back is the answer of a task released here.
        rows = list(stale.select_for_update().values_list("pk", "answer_id", "is_check"))
        Assignment.objects.filter(pk__in=[pk for pk, _, _ in rows]).update(
            status=Assignment.Status.RELEASED, release_reason="abandoned (no activity)"
        )
        # A check held no slot of its answer (a decided answer, full): nothing comes free.
        answers = [answer for _, answer, is_check in rows if not is_check]
        if answers:
            Answer.objects.filter(pk__in=answers, full=True).update(full=False)
    return len(rows)


# How many open answers one call looks at before it waits for a row another reviewer holds.
WINDOW = 16


def reviewer_offset(project: Project, reviewer) -> float:
    """Where a reviewer starts walking the queue, in [0, 1): secret (keyed with SECRET_KEY, so
    nobody can replay it) and fixed per reviewer and project, so each reviewer gets their own
    order while the project's spread (one case's answers kept apart) holds within it."""
    key = settings.SECRET_KEY.encode()
    digest = hmac.new(key, f"queue:{project.pk}:{reviewer.pk}".encode(), hashlib.sha256)
    return int.from_bytes(digest.digest()[:8], "big") / 2**64


# Draws whether a task is a check. Unpredictable by default (a reviewer must not be able to
# tell a check by replaying the draw); tests pass a seeded random.Random to next_task.
_CHECK_DRAW = random.SystemRandom()


def next_task(*, project: Project, reviewer, rng: random.Random | None = None) -> Assignment | None:
    """The reviewer's current task, or a new one: an open answer (fewer than `overlap`
    holders) that this reviewer has never taken, walking the queue from the reviewer's own
    starting point. With the project's check rate r, a new task is a gold check instead with
    probability r (`_take_check`: a marked answer the reviewer never held, never twice), while
    there are new answers to give at all: an empty queue says so whatever the draw, so the
    end of the queue tells no check from a task.

    Safe under concurrency and never empty while capacity exists: the reviewer's membership
    row is locked first (one request per reviewer at a time), then a window of candidate
    answers is locked with SKIP LOCKED, so reviewers pressing at once take different answers.
    When every open answer in reach is held by someone else's transaction, the call waits for
    the first one instead of reporting an empty queue (PostgreSQL re-checks the row when the
    other transaction commits). The holders are counted again under the row lock, and the
    answer's `full` flag is kept true to that count.
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
        offset = reviewer_offset(project, reviewer)
        mine = Assignment.objects.filter(answer=OuterRef("pk"), reviewer=reviewer)
        open_answers = Answer.objects.filter(
            project=project, full=False, queue_key__isnull=False
        ).exclude(Exists(mine))
        # The draw costs no query, so a project without checks reads exactly as before.
        if project.check_rate > 0 and (rng or _CHECK_DRAW).random() < project.check_rate:
            check = _take_check(project, reviewer, open_answers, rng or _CHECK_DRAW)
            if check is not None:
                return check
        for _ in range(5):
            candidates = _window(open_answers, offset, skip_locked=True)
            if not candidates:
                if not open_answers.exists():
                    return None  # nothing open at all, locked or not
                # Everything in reach is locked by reviewers taking tasks right now: wait for
                # one. The row may come back full and so not at all; then look again.
                candidates = _window(open_answers, offset, skip_locked=False, size=1)
            for answer in candidates:
                # A check is labelled beside the answer's slots, never in one.
                holders = answer.assignments.holding().filter(is_check=False).count()
                if holders < project.overlap:
                    taken = Assignment.objects.create(
                        project=project, answer=answer, reviewer=reviewer
                    )
                    if holders + 1 >= project.overlap:
                        Answer.objects.filter(pk=answer.pk).update(full=True)
                    return taken
                # The flag was behind the count (an import, an admin's edit): repair it.
                Answer.objects.filter(pk=answer.pk).update(full=True)
    return None


def _take_check(project: Project, reviewer, open_answers, rng: random.Random):
    """A gold check for the reviewer, as an assignment like any other (flagged `is_check`,
    which only lead-side reads look at): one of the project's checks the reviewer never held
    in any way (labelled, skipped or abandoned), drawn at random. None when there is none
    left, or when there is no new answer either (then the queue is empty for the reviewer,
    as it would be without checks). Runs under the reviewer's membership lock, so one
    reviewer never takes the same check twice; the unique (answer, reviewer) row holds it."""
    held = Assignment.objects.filter(answer=OuterRef("answer_id"), reviewer=reviewer)
    eligible = list(
        GoldCheck.objects.filter(project=project)
        .exclude(Exists(held))
        .order_by("answer_id")
        .values_list("answer_id", flat=True)
    )
    if not eligible or not open_answers.exists():
        return None
    return Assignment.objects.create(
        project=project, answer_id=rng.choice(eligible), reviewer=reviewer, is_check=True
    )


def _window(open_answers, offset: float, *, skip_locked: bool, size: int = WINDOW) -> list:
    """Up to `size` open answers: first those of the front band (keys below 0: the answers
    a calibration sample drew, evaluation.judges.samples.to_front), in the project's spread
    order; then from the reviewer's starting point on, wrapping around to the start of the
    queue. Each part is one range scan of the open-queue index.

    The band is served in one order to every reviewer, not from each one's own point: a
    sampled answer counts once two reviewers have labelled it, so its second reviewer should
    follow the first soon. Nothing a reviewer sees changes with it (the task number is drawn
    apart from the key), so a reviewer cannot tell a sampled answer from another."""

    def part(queryset, limit):
        locked = queryset.order_by("queue_key").select_for_update(
            skip_locked=skip_locked, of=("self",)
        )
        return list(locked[:limit])

    found = part(open_answers.filter(queue_key__lt=0), size)
    if len(found) < size:
        found += part(open_answers.filter(queue_key__gte=offset), size - len(found))
    if len(found) < size:
        found += part(
            open_answers.filter(queue_key__gte=0, queue_key__lt=offset), size - len(found)
        )
    return found


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
    if not assignment.is_check:  # a check held no slot of its answer
        Answer.objects.filter(pk=assignment.answer_id, full=True).update(full=False)
    return assignment
