"""Reads. Scoping (who may see what) and eager loading live here, so views never hold a bare
`get(pk=...)` on answers or labels."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from django.db import connection
from django.db.models import Count, F, Prefetch, Q, Sum
from django.utils import timezone

from annotate.labelling import rows
from annotate.models import (
    Answer,
    Assignment,
    Case,
    Citation,
    Claim,
    ClaimLabel,
    Passage,
    Preferences,
    Project,
    RetrievedPassage,
    Role,
)

# --- The labelling screen --------------------------------------------------------------------


@dataclass
class ClaimRow:
    claim: Claim
    label: ClaimLabel | None
    citations: list[Citation]
    # Set by the view from the label services' checks: field -> message. `problems` are what
    # is wrong now, `missing` what a submission still needs.
    problems: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """CSS state of the claim's mark: supported, contradicted, insufficient or unlabelled."""
        support = self.label.support if self.label else ""
        # A binary project's "unsupported" wears the contradicted mark (✗): not supported.
        css = {"insufficient_evidence": "insufficient", "unsupported": "contradicted"}
        return css.get(support, support) or "unlabelled"

    @property
    def version(self) -> int:
        return self.label.version if self.label else 0

    @property
    def complete(self) -> bool:
        return not self.missing and not self.problems


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
class Progress:
    """A reviewer's own progress in a project, in numbers they can reach: what they have
    submitted, and what the queue can still give them (answers they have not taken that
    still lack a reviewer). Nothing in it moves when another reviewer acts on an answer this
    reviewer holds, so it reveals nothing about the co-reviewer."""

    submitted: int = 0
    in_progress: int = 0
    available: int = 0
    # The day's work (since midnight, local time): answers submitted (on the screen or through
    # the API, not imported) and the seconds spent on them, for "42 today, 11 s per answer".
    today: int = 0
    seconds_today: int = 0

    @property
    def reachable(self) -> int:
        return self.submitted + self.in_progress + self.available

    @property
    def seconds_per_answer(self) -> int | None:
        return round(self.seconds_today / self.today) if self.today else None


@dataclass
class TaskScreen:
    assignment: Assignment
    answer: Answer
    question: str
    segments: list[Segment]
    claims: list[ClaimRow]
    passages: list[PassageRow]
    # None when the caller did not ask for it (a draft save).
    progress: Progress | None = None

    @cached_property
    def shown(self) -> dict[str, Passage]:
        """The passages on screen by id: evidence must come from these."""
        return {row.passage.passage_id: row.passage for row in self.passages}


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


def reviewer_task(user, slug: str, task_number: int, *, page: bool = True) -> Assignment | None:
    """task_for_reviewer for a request that names the project by slug: the user's own
    assignment, with its project and answer, in one query -- and only while the user is
    still a reviewer of that project. None means 404. For the page (`page`), the case (the
    question) and the reviewer's shortcut preference ride along, so the page needs no query
    of its own for them; a draft save needs neither.

    Every task view runs it, so it is SQL (annotate.labelling.rows says why);
    tests/annotate/test_rows.py holds the ORM query it replaces and checks both agree."""
    columns = _TASK_PAGE if page else _TASK
    # PostgreSQL plans this statement at every view (nothing is prepared), so it is written
    # to be cheap to plan as well as to run: the answer is read by (project, task number),
    # its project found by slug in a subquery, and the membership (unique per project and
    # user) and the preference are subqueries rather than joins. As a six-table join it took
    # 0.75 ms to plan, so 0.37 ms; tests/test_prepared_statements.py checks that the answer
    # is read by its index however many tasks the reviewer holds. The assignment is the
    # reviewer's of that answer, in the answer's project.
    sql = f"""
        SELECT {columns}{_SHORTCUTS if page else ""}
        FROM annotate_answer n
        JOIN annotate_assignment a ON a.answer_id = n.id AND a.project_id = n.project_id
        JOIN annotate_project p ON p.id = n.project_id
        {"JOIN annotate_case c ON c.id = n.case_id" if page else ""}
        WHERE n.project_id = (SELECT id FROM annotate_project WHERE slug = %s)
          AND n.task_number = %s AND a.reviewer_id = %s AND a.status <> %s
          AND EXISTS (SELECT 1 FROM annotate_membership m
                      WHERE m.project_id = n.project_id AND m.user_id = %s AND m.role = %s)"""
    params = [slug, task_number, user.pk, Assignment.Status.RELEASED, user.pk, Role.REVIEWER]
    if page:
        params.insert(0, user.pk)  # the preference's, in the SELECT list
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = columns.read(cursor.fetchall())
    if not found:
        return None
    (models, extra) = found[0]
    assignment, answer, project = models[:3]
    assignment.answer, assignment.project = answer, project
    if page:
        answer.case = models[3]
        # No preferences row yet: shortcuts are on.
        assignment.single_key_shortcuts = extra[0] is None or bool(extra[0])
    return assignment


# The reviewer's shortcut preference, NULL without a preferences row (one per user).
_SHORTCUTS = """, (SELECT pref.single_key_shortcuts FROM annotate_preferences pref
                      WHERE pref.user_id = %s)"""


# What the labelling page never reads of the case (it shows the question): JSON lists and the
# reference answer, decoded for nothing on every page view.
CASE_FIELDS_NOT_SHOWN = (
    "required_facts",
    "forbidden_claims",
    "checked_documents",
    "tags",
    "reference",
    "content_hash",
)
_TASK = rows.Columns(("a", Assignment), ("n", Answer), ("p", Project))
_TASK_PAGE = rows.Columns(
    ("a", Assignment), ("n", Answer), ("p", Project), ("c", Case, CASE_FIELDS_NOT_SHOWN)
)


@dataclass
class ClaimToSave:
    """What a draft save of one claim reads: the claim, its citations, the reviewer's label of
    it as stored (None before its first save), and those of the posted evidence passages that
    are on the task's screen (the quote is checked against them). Nothing about the other
    claims: the reply carries only this claim's state."""

    claim: Claim
    citations: list[Citation]
    shown: dict[str, Passage]
    label: ClaimLabel | None


def claim_to_save(assignment: Assignment, index: int, evidence_ids) -> ClaimToSave | None:
    """Read after `assignment` (the save relies on that order: see save_claim_label's
    `stored`). SQL, as reviewer_task: every draft save runs it."""
    # One row per citation (at least one): the claim and the reviewer's label of it repeat.
    # The checks need to know whether a citation resolves (passage_id), not its passage.
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            SELECT {_CLAIM_TO_SAVE} FROM annotate_claim c
            LEFT JOIN annotate_claimlabel l ON l.claim_id = c.id AND l.assignment_id = %s
            LEFT JOIN annotate_citation t ON t.claim_id = c.id
            WHERE c.answer_id = %s AND c.ordinal = %s
            ORDER BY t.ordinal""",
            [assignment.pk, assignment.answer_id, index],
        )
        found = [models for models, _ in _CLAIM_TO_SAVE.read(cursor.fetchall())]
        if not found:
            return None
        claim, label, _ = found[0]
        citations = [citation for _, _, citation in found if citation is not None]
        shown = {}
        if evidence_ids:
            # Those of the posted passages that are on the task's screen: retrieved for the
            # answer, or cited by one of its claims.
            evidence_ids = list(evidence_ids)
            marks = ", ".join(["%s"] * len(evidence_ids))
            cursor.execute(
                f"""
                SELECT {_PASSAGE} FROM annotate_passage g
                WHERE g.project_id = %s AND g.passage_id IN ({marks})
                  AND (EXISTS (SELECT 1 FROM annotate_retrievedpassage r
                               WHERE r.answer_id = %s AND r.passage_id = g.id)
                       OR EXISTS (SELECT 1 FROM annotate_citation t
                                  JOIN annotate_claim c ON c.id = t.claim_id
                                  WHERE c.answer_id = %s AND t.passage_id = g.id))""",
                [assignment.project_id, *evidence_ids, assignment.answer_id, assignment.answer_id],
            )
            shown = {p.passage_id: p for (p,), _ in _PASSAGE.read(cursor.fetchall())}
    if label is not None:
        label.claim = claim
    return ClaimToSave(claim, citations, shown, label)


_CLAIM_TO_SAVE = rows.Columns(("c", Claim), ("l", ClaimLabel), ("t", Citation))
_PASSAGE = rows.Columns(("g", Passage))


def task_screen(assignment: Assignment, *, progress: bool = True) -> TaskScreen:
    """Everything the labelling page shows, in a fixed number of queries whatever the number
    of claims and passages (four, and one more for the progress counts). Deliberately never
    touches the variant or the answer id."""
    answer = assignment.answer
    # Citations without their passages: those are the retrieved ones, already loaded below
    # (joined again, a 60-claim answer would load its passages' texts 60 times).
    claims = list(
        Claim.objects.filter(answer=answer)
        .order_by("ordinal")
        .prefetch_related(Prefetch("citations", queryset=Citation.objects.order_by("ordinal")))
    )
    labels = {label.claim_id: label for label in assignment.claim_labels.all()}
    retrieved = list(
        RetrievedPassage.objects.filter(answer=answer).select_related("passage").order_by("rank")
    )
    rows = [PassageRow(r.passage, r.rank, r.in_prompt, True) for r in retrieved]
    by_pk = {r.passage.pk: r.passage for r in retrieved}
    claim_rows = [ClaimRow(c, labels.get(c.pk), list(c.citations.all())) for c in claims]
    cited = [c for row in claim_rows for c in row.citations if c.passage_id is not None]
    missing = {c.passage_id for c in cited} - set(by_pk)
    if missing:  # cited but not retrieved: shown after the retrieved ones (one more query)
        extra = Passage.objects.in_bulk(missing)
        for citation in cited:
            if citation.passage_id in extra and citation.passage_id not in by_pk:
                rows.append(PassageRow(extra[citation.passage_id], None, False, False))
                by_pk[citation.passage_id] = extra[citation.passage_id]
    for citation in cited:
        citation.passage = by_pk[citation.passage_id]
    return TaskScreen(
        assignment=assignment,
        answer=answer,
        question=answer.case.question,
        segments=segments(answer.text, claim_rows),
        claims=claim_rows,
        passages=rows,
        progress=reviewer_progress(assignment.reviewer_id, assignment.project)
        if progress
        else None,
    )


def reviewer_progress(user, project: Project) -> Progress:
    """The reviewer's Progress in two queries, neither of which grows with the database or
    with the project's labelled answers: the reviewer's own assignments (their rows, by the
    (project, reviewer) index), each joined to its answer's queue flag; and the number of
    open answers, counted from the open-queue index alone (an index-only scan of the answers
    that still have room, the very set next_task walks). What the reviewer can still label is
    the open answers less those they hold or held, since next_task never gives an answer back
    to a reviewer who took it once, and less the gold checks they took (a check must move the
    count as a task does: annotate.checks)."""
    user_id = getattr(user, "pk", user)
    Status = Assignment.Status
    in_queue = Q(answer__full=False, answer__queue_key__isnull=False)
    midnight = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    # Submitted here, today: an imported label set (no undo window) is no work of the day.
    today = Q(status=Status.SUBMITTED, submitted_at__gte=midnight, undo_until__isnull=False)
    # The day's counter rides on the same aggregate: no query of its own.
    mine = Assignment.objects.filter(project=project, reviewer=user_id).aggregate(
        submitted=Count("pk", filter=Q(status=Status.SUBMITTED)),
        in_progress=Count("pk", filter=Q(status=Status.IN_PROGRESS)),
        open_and_mine=Count("pk", filter=in_queue),
        # A gold check is a decided answer (full, so out of open_and_mine): counted as taken
        # like any task, so the count drops by one whichever the reviewer took.
        checks=Count("pk", filter=Q(is_check=True)),
        today=Count("pk", filter=today),
        seconds_today=Sum("seconds_spent", filter=today),
    )
    open_answers = Answer.objects.filter(
        project=project, full=False, queue_key__isnull=False
    ).count()
    return Progress(
        submitted=mine["submitted"],
        in_progress=mine["in_progress"],
        available=max(0, open_answers - mine["open_and_mine"] - mine["checks"]),
        today=mine["today"],
        seconds_today=mine["seconds_today"] or 0,
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


def task_in_progress(user, project: Project) -> Assignment | None:
    return (
        Assignment.objects.for_reviewer(user)
        .filter(project=project, status=Assignment.Status.IN_PROGRESS)
        .select_related("answer")
        .order_by("taken_at")
        .first()
    )


def single_key_shortcuts(user) -> bool:
    """The person's preference (on unless they turned it off)."""
    found = Preferences.objects.filter(user=user).values_list("single_key_shortcuts", flat=True)
    return next(iter(found), True)


MY_TASK_STATUSES = (Assignment.Status.IN_PROGRESS, Assignment.Status.SUBMITTED)


def my_tasks(user, project: Project, *, status: str | None = None, search: str = ""):
    """What "Your tasks" shows of the reviewer's own tasks, in progress and submitted (a
    skipped task cannot be opened again): the task's number, its question, status and time,
    in one query with the question joined. `status` keeps one status; `search` keeps the
    tasks whose question contains it, or whose number it is. Newest first, the task in
    progress on top; never the rows' (import) order."""
    tasks = Assignment.objects.for_reviewer(user).filter(
        project=project, status__in=[status] if status else MY_TASK_STATUSES
    )
    search = search.strip()
    if search:
        found = Q(answer__case__question__icontains=search)
        number = search.removeprefix("#").removeprefix("Task ").strip()
        if number.isascii() and number.isdigit() and len(number) < 10:
            found |= Q(answer__task_number=int(number))
        tasks = tasks.filter(found)
    return (
        tasks.select_related("answer__case")
        .only(
            "status",
            "taken_at",
            "submitted_at",
            "undo_until",
            "revision",
            "seconds_spent",
            "answer__task_number",
            "answer__case__question",
        )
        .order_by(F("submitted_at").desc(nulls_first=True), "answer__task_number")
    )
