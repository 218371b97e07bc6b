"""Opening labelling: lock the claims and number the tasks in a blinded order."""

from __future__ import annotations

import heapq
import random

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from annotate.common import bulk, computed
from annotate.common.errors import ServiceError
from annotate.models import Answer, Assignment, Project

# Task order is a blinding matter: a shuffle anyone can replay (one seeded with the project's
# slug, say) tells a reviewer which variant wrote each task number. Draw from the OS.
_SECRET_RANDOM = random.SystemRandom()


def renumber_for_late_answers(project: Project, count: int) -> list[int]:
    """Task numbers for `count` answers imported into an open project. Appending them after
    the last number would give the late answers a block of their own (tasks 21-30, all of one
    variant). Instead the new numbers are shuffled together with the numbers of the answers
    nobody has taken yet (which no reviewer has seen, so renumbering them is invisible), and
    those answers get their share back. Returns the numbers for the new answers; the caller
    inserts them in the same transaction."""
    last = (
        Answer.objects.filter(project=project)
        .order_by("-task_number")
        .values_list("task_number", flat=True)
        .first()
        or 0
    )
    untaken = list(
        Answer.objects.filter(project=project, task_number__isnull=False)
        .exclude(Exists(Assignment.objects.filter(answer=OuterRef("pk"))))
        .values_list("pk", "task_number")
    )
    numbers = [number for _, number in untaken] + list(range(last + 1, last + 1 + count))
    _SECRET_RANDOM.shuffle(numbers)
    if untaken:
        # Free the numbers first: (project, task_number) is unique at every statement.
        pks = [pk for pk, _ in untaken]
        Answer.objects.filter(pk__in=pks).update(task_number=None)
        bulk.update_rows(Answer, ["task_number"], zip(pks, numbers, strict=False))
    return numbers[len(untaken) :]


def queue_keys(count: int) -> list[float]:
    """Queue positions for answers added to an open queue: uniform, so they spread among the
    others instead of waiting at its end."""
    return [_SECRET_RANDOM.random() for _ in range(count)]


@transaction.atomic
def open_labelling(*, project: Project) -> Project:
    """Lock the claims and open the queue. Task numbers are assigned in an order shuffled per
    project, spreading each case's answers apart so two variants' answers to one case do not
    arrive back to back (a reviewer comparing them would learn which system is which)."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    if project.state != Project.State.DRAFT:
        raise ServiceError(
            f"Project '{project.slug}' is already {project.get_state_display().lower()}."
        )
    answers = list(project.answers.values_list("pk", "case_id"))
    if not answers:
        raise ServiceError("The project has no answers to label yet: import a bundle first.")
    total = len(answers)
    numbered = (
        # The queue walks the spread order; each reviewer starts at their own point in it.
        (pk, number, (number - 1 + 0.5) / total, False)
        for number, pk in enumerate(spread_order(answers), start=1)
    )
    bulk.update_rows(Answer, ["task_number", "queue_key", "full"], numbered)
    bulk.after_commit(vacuum=[Answer])  # every answer row was rewritten: clear the old ones
    project.state = Project.State.OPEN
    project.opened_at = timezone.now()
    project.save(update_fields=["state", "opened_at"])
    # No answer's share of the pair summary moves: none has two submitted label sets yet.
    computed.touch(project, content=True)
    return project


def spread_order(items: list[tuple[int, int]], *, rng: random.Random = _SECRET_RANDOM) -> list[int]:
    """Shuffle (pk, group) pairs so that no two consecutive items share a group whenever that
    is possible: always deal from the group with the most items left, other than the one just
    dealt (ties in an order drawn once per group). Dealing the groups round-robin instead put
    a two-answer case back to back whenever it ended one round and began the next alone."""
    groups: dict[int, list[int]] = {}
    for pk, group in items:
        groups.setdefault(group, []).append(pk)
    for members in groups.values():
        rng.shuffle(members)
    heap = [(-len(members), rng.random(), group) for group, members in groups.items()]
    heapq.heapify(heap)
    order: list[int] = []
    held = None  # the group just dealt from, out of the heap for one turn
    while heap:
        left, tie, group = heapq.heappop(heap)
        order.append(groups[group].pop())
        if held is not None:
            heapq.heappush(heap, held)
        held = (left + 1, tie, group) if left + 1 < 0 else None
    if held is not None:  # one group outnumbers all the others: its rest must touch
        order.extend(reversed(groups[held[2]]))
    return order
