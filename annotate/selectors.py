"""Reads. Scoping (who may see what) and eager loading live here, so views never hold a bare
`get(pk=...)` on answers or labels."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Prefetch, Q

from annotate.models import (
    Answer,
    Assignment,
    Citation,
    Claim,
    ClaimLabel,
    Membership,
    Passage,
    Project,
    RetrievedPassage,
)


def projects_for(user) -> list[dict]:
    """The user's projects with their role and progress, one query."""
    memberships = (
        Membership.objects.filter(user=user)
        .select_related("project")
        .annotate(
            answers=Count("project__answers", distinct=True),
        )
        .order_by("project__name")
    )
    return [{"project": m.project, "role": m.role, "answers": m.answers} for m in memberships]


def project_for(user, slug: str) -> tuple[Project, str] | None:
    """The project and the user's role in it, or None when the user has no role (the caller
    answers 404 so that existence itself does not leak)."""
    membership = (
        Membership.objects.filter(user=user, project__slug=slug).select_related("project").first()
    )
    if membership is None:
        return None
    return membership.project, membership.role


# --- The labelling screen --------------------------------------------------------------------


@dataclass
class ClaimRow:
    claim: Claim
    label: ClaimLabel | None
    citations: list[Citation]

    @property
    def state(self) -> str:
        """CSS state of the claim's mark: supported, contradicted, insufficient or unlabelled."""
        support = self.label.support if self.label else ""
        return {"insufficient_evidence": "insufficient"}.get(support, support) or "unlabelled"


@dataclass
class Segment:
    text: str
    row: ClaimRow | None = None


@dataclass
class PassageRow:
    passage: Passage
    rank: int | None
    in_prompt: bool
    retrieved: bool


@dataclass
class TaskScreen:
    assignment: Assignment
    answer: Answer
    question: str
    segments: list[Segment]
    claims: list[ClaimRow]
    passages: list[PassageRow]
    total_tasks: int
    done_by_me: int
    project_done: int
    project_slots: int


def task_for_reviewer(user, project: Project, task_number: int) -> Assignment | None:
    """The reviewer's own assignment for this task number, or None (the caller answers 404).
    A reviewer never reaches an answer through anything but their own assignment."""
    return (
        Assignment.objects.for_reviewer(user)
        .filter(project=project, answer__task_number=task_number)
        .exclude(status=Assignment.Status.RELEASED)
        .select_related("answer__case", "project")
        .first()
    )


def task_screen(assignment: Assignment) -> TaskScreen:
    """Everything the labelling page shows, in a fixed number of queries whatever the number
    of claims and passages. Deliberately never touches the variant or the answer id."""
    answer = assignment.answer
    claims = list(
        Claim.objects.filter(answer=answer)
        .order_by("ordinal")
        .prefetch_related(
            Prefetch("citations", queryset=Citation.objects.select_related("passage"))
        )
    )
    labels = {label.claim_id: label for label in assignment.claim_labels.all()}
    retrieved = list(
        RetrievedPassage.objects.filter(answer=answer).select_related("passage").order_by("rank")
    )
    rows = [PassageRow(r.passage, r.rank, r.in_prompt, True) for r in retrieved]
    shown = {r.passage.passage_id for r in rows}
    for claim in claims:
        for citation in claim.citations.all():
            if citation.passage is not None and citation.passage.passage_id not in shown:
                rows.append(PassageRow(citation.passage, None, False, False))
                shown.add(citation.passage.passage_id)
    counts = Assignment.objects.filter(project=assignment.project_id).aggregate(
        done=Count("pk", filter=Q(status=Assignment.Status.SUBMITTED)),
        mine=Count(
            "pk",
            filter=Q(status=Assignment.Status.SUBMITTED, reviewer=assignment.reviewer_id),
        ),
    )
    total = Answer.objects.filter(project=assignment.project_id, task_number__isnull=False).count()
    claim_rows = [ClaimRow(c, labels.get(c.pk), list(c.citations.all())) for c in claims]
    return TaskScreen(
        assignment=assignment,
        answer=answer,
        question=answer.case.question,
        segments=segments(answer.text, claim_rows),
        claims=claim_rows,
        passages=rows,
        total_tasks=total,
        done_by_me=counts["mine"],
        project_done=counts["done"],
        project_slots=total * assignment.project.overlap,
    )


def segments(text: str, rows: list[ClaimRow]) -> list[Segment]:
    """Split the answer text into plain runs and claim spans, for highlighting."""
    out: list[Segment] = []
    position = 0
    for row in sorted(rows, key=lambda r: r.claim.start):
        claim = row.claim
        if claim.start > position:
            out.append(Segment(text[position : claim.start]))
        out.append(Segment(text[claim.start : claim.end], row))
        position = claim.end
    if position < len(text):
        out.append(Segment(text[position:]))
    return out


def reviewer_progress(user, project: Project) -> dict:
    mine = Assignment.objects.for_reviewer(user).filter(project=project)
    return {
        "submitted": mine.filter(status=Assignment.Status.SUBMITTED).count(),
        "in_progress": mine.filter(status=Assignment.Status.IN_PROGRESS)
        .select_related("answer")
        .first(),
        "total": project.answers.filter(task_number__isnull=False).count(),
    }


def my_submitted_tasks(user, project: Project):
    return (
        Assignment.objects.for_reviewer(user)
        .filter(project=project, status=Assignment.Status.SUBMITTED)
        .select_related("answer")
        .order_by("-submitted_at")
    )
