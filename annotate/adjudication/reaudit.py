"""Re-auditing gold after the guidelines change: which answers' gold was settled under an older
version of the guidelines, and the lead's two answers to each -- keep it (it stands under the
current version) or re-open it (back into the adjudication queue until a lead saves its
adjudication again, annotate.adjudication.services.adjudicate).

The version an answer's gold stands under is the latest of:
- the oldest guidelines version among its submitted label sets (reviewers who agreed under an
  old rule agreed under that rule, whatever the other one read);
- the latest version any lead decided one of its fields under (Decision.guideline_version:
  the lead saw the whole answer then);
- the versions a lead kept it under, or closed a re-open of it under (Reaudit).
Version 0 is "no guidelines written yet". Gold still waiting for a decision is no decision to
re-audit: it is in the adjudication queue already. Re-opening withdraws nothing: the old gold
stands (in exports and releases) until a lead decides again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, Max, Min
from django.utils import timezone

from annotate.common import computed
from annotate.common.errors import ServiceError
from annotate.gold.selectors import pair_summary
from annotate.models import Answer, Assignment, Decision, Project, Reaudit

ADJUDICATED, AGREED = "adjudicated", "agreed"


@dataclass(frozen=True, slots=True)
class ReauditRow:
    answer_pk: int
    task_number: int | None
    question: str
    state: str  # agreed or adjudicated
    version: int  # the guidelines version the gold stands under (0: none written)


@dataclass
class ReauditList:
    """The settled gold of a project older than its current guidelines version (`rows`, oldest
    version first, then by task number), counted by that version (`by_version`), beside the
    answers whose gold stands under the current version (`current_count`: of them, `kept` by a
    lead's keep) and those re-opened and still waiting in the adjudication queue
    (`reopened`)."""

    current: int
    rows: list[ReauditRow] = field(default_factory=list)
    by_version: Counter = field(default_factory=Counter)
    current_count: int = 0
    kept: int = 0
    reopened: int = 0

    @property
    def versions(self) -> list[tuple[int, int]]:
        """(version, answers) oldest first, for the counts the page shows."""
        return sorted(self.by_version.items())


def standing_versions(project: Project) -> tuple[dict[int, int], dict[int, str], set[int], set]:
    """(answer pk -> the version its gold stands under, answer pk -> agreed/adjudicated, the
    answers re-opened and waiting, the answers kept under the current version) for every
    doubly-labelled answer of the project, settled or not. Three grouped queries."""
    label_sets = (
        # A gold check's label set is no part of gold (annotate.checks).
        Assignment.objects.filter(
            project=project, status=Assignment.Status.SUBMITTED, is_check=False
        )
        .values("answer_id")
        .annotate(n=Count("pk"), oldest=Min("guideline_version"))
        .filter(n__gte=2)
        .order_by()
        .values_list("answer_id", "oldest")
    )
    standing = dict(label_sets)
    state = dict.fromkeys(standing, AGREED)
    decided = (
        Decision.objects.filter(answer__project=project)
        .values("answer_id")
        .annotate(latest=Max("guideline_version"))
        .order_by()
        .values_list("answer_id", "latest")
    )
    for pk, latest in decided:
        if pk not in standing:
            continue  # decided, then a label set was reopened: no gold of two reviewers now
        standing[pk] = max(standing[pk], latest)
        state[pk] = ADJUDICATED
    reopened: set[int] = set()
    kept: set[int] = set()
    actions = Reaudit.objects.filter(project=project).values_list(
        "answer_id", "action", "guideline_version", "closed_at", "closed_version"
    )
    for pk, action, version, closed_at, closed_version in actions:
        if pk not in standing:
            continue
        if action == Reaudit.Action.KEEP:
            standing[pk] = max(standing[pk], version)
            if version == project.guidelines_version:
                kept.add(pk)
        elif closed_at is None:
            reopened.add(pk)
        else:
            standing[pk] = max(standing[pk], closed_version or 0)
    return standing, state, reopened, kept


def reaudit_list(project: Project, *, reports: computed.Reports | None = None) -> ReauditList:
    """The project's settled gold decided under an older guidelines version than its current
    one (ReauditList). The pair summary (kept per revision) says which answers still wait for
    a decision; then three grouped queries and one for the listed answers' questions."""
    current = project.guidelines_version
    pending = set(pair_summary(project, reports).scores)
    standing, state, reopened, kept = standing_versions(project)
    found = ReauditList(current=current, reopened=len(reopened - pending))
    older: dict[int, int] = {}
    for pk, version in standing.items():
        if pk in pending or pk in reopened:
            continue
        if version >= current:
            found.current_count += 1
            found.kept += pk in kept
        else:
            older[pk] = version
            found.by_version[version] += 1
    questions = Answer.objects.filter(pk__any=list(older)).values_list(
        "pk", "task_number", "case__question"
    )
    found.rows = sorted(
        (
            ReauditRow(pk, number, question, state[pk], older[pk])
            for pk, number, question in questions
        ),
        key=lambda row: (row.version, row.task_number or 0),
    )
    return found


def reopened_answers(project: Project) -> list[int]:
    """The answers a lead re-opened that no lead has adjudicated since: they wait in the
    adjudication queue. One query."""
    return list(
        Reaudit.objects.filter(
            project=project, action=Reaudit.Action.REOPEN, closed_at__isnull=True
        ).values_list("answer_id", flat=True)
    )


def is_reopened(answer_pk: int) -> bool:
    return Reaudit.objects.filter(
        answer_id=answer_pk, action=Reaudit.Action.REOPEN, closed_at__isnull=True
    ).exists()


# --- The lead's answers ----------------------------------------------------------------------


def _listed(project: Project, answer: Answer) -> int:
    """The version `answer`'s gold stands under, when it is on the re-audit list; else
    ServiceError saying why it is not."""
    if answer.project_id != project.pk:
        raise ServiceError("That task is not in this project.")
    standing, _, reopened, _ = standing_versions(project)
    if answer.pk not in standing:
        raise ServiceError("This task has no gold from two reviewers to re-audit.")
    if answer.pk in reopened:
        raise ServiceError("This task is re-opened already: it waits in the adjudication queue.")
    if answer.pk in pair_summary(project).scores:
        raise ServiceError("This task still waits for a decision in the adjudication queue.")
    if standing[answer.pk] >= project.guidelines_version:
        raise ServiceError(
            f"This task's gold already stands under guidelines v{project.guidelines_version}."
        )
    return standing[answer.pk]


@transaction.atomic
def keep_decision(*, project: Project, answer: Answer, lead) -> Reaudit:
    """Record that `answer`'s gold, decided under an older version, stands under the current
    one. It leaves the re-audit list until the guidelines change again. The gold itself does
    not change, so no report's revision moves."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    _listed(project, answer)
    return Reaudit.objects.create(
        project=project,
        answer=answer,
        action=Reaudit.Action.KEEP,
        guideline_version=project.guidelines_version,
        created_by=lead,
    )


@transaction.atomic
def keep_all(*, project: Project, lead, decided_under: int) -> int:
    """keep_decision for every answer on the re-audit list whose gold was decided under
    version `decided_under`: a lead who has read the change and finds it moves none of them.
    Returns how many were kept (0: none of that version is listed now). One insert.
    ServiceError for the current version or a later one: nothing decided under it is older."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    if decided_under >= project.guidelines_version:
        raise ServiceError(
            f"Choose a version older than the current v{project.guidelines_version}: only gold "
            "decided under an older one waits for a re-audit."
        )
    listed = [row.answer_pk for row in reaudit_list(project).rows if row.version == decided_under]
    Reaudit.objects.bulk_create(
        Reaudit(
            project=project,
            answer_id=pk,
            action=Reaudit.Action.KEEP,
            guideline_version=project.guidelines_version,
            created_by=lead,
        )
        for pk in listed
    )
    return len(listed)


@transaction.atomic
def reopen_decision(*, project: Project, answer: Answer, lead) -> Reaudit:
    """Put `answer` back in the adjudication queue (adjudication.queue reads the open
    re-opens) until a lead saves its adjudication again; its gold stands meanwhile. Moves the
    project's revision: the queue kept for the old one no longer holds."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    _listed(project, answer)
    reaudit = Reaudit.objects.create(
        project=project,
        answer=answer,
        action=Reaudit.Action.REOPEN,
        guideline_version=project.guidelines_version,
        created_by=lead,
    )
    computed.touch(project)
    return reaudit


def close_reopened(*, answer: Answer, version: int) -> int:
    """A lead saved `answer`'s adjudication under guidelines `version`: its open re-opens are
    answered. Called inside adjudicate's transaction. One UPDATE."""
    return Reaudit.objects.filter(
        answer=answer, action=Reaudit.Action.REOPEN, closed_at__isnull=True
    ).update(closed_at=timezone.now(), closed_version=version)
