"""What a project's pages read: one's projects, the set-up dashboard's counts and checklist,
the blinding check's features, and the claim boundary editor's answers and segments."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.db.models import Count, Exists, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce, Length
from django.template.defaultfilters import pluralize

from annotate.models import (
    Answer,
    Assignment,
    Citation,
    Claim,
    GuidelineVersion,
    Membership,
    Project,
    RetrievedPassage,
    Role,
)
from annotate.projects import blinding


def projects_for(user) -> list[dict]:
    """The user's projects with their role and size, one query. Each project's answers are
    counted by a subquery on the answer table's project index (an index-only scan of that
    project's rows), not by joining and grouping every answer of every project: that took
    8.7 ms a page once one project held 10,000 answers."""
    answers = (
        Answer.objects.filter(project=OuterRef("project"))
        .order_by()
        .values("project")
        .annotate(n=Count("*"))
        .values("n")
    )
    memberships = (
        Membership.objects.filter(user=user)
        .select_related("project")
        .annotate(answers=Coalesce(Subquery(answers), 0))
        .order_by("project__name")
    )
    return [{"project": m.project, "role": m.role, "answers": m.answers} for m in memberships]


SKIPS_SHOWN = 200


@dataclass
class ReviewerRow:
    username: str
    member: bool = True
    submitted: int = 0
    in_progress: int = 0
    skipped: int = 0
    reasons: list[dict] = field(default_factory=list)


def setup_summary(project: Project) -> dict:
    """Everything the dashboard shows, in a fixed number of aggregate queries."""
    cases = project.cases.aggregate(
        total=Count("pk"),
        # Slices as everywhere else: adversarial cases form their own slice.
        n_answerable=Count("pk", filter=Q(answerable=True, adversarial=False)),
        n_unanswerable=Count("pk", filter=Q(answerable=False, adversarial=False)),
        n_adversarial=Count("pk", filter=Q(adversarial=True)),
    )
    claims = Claim.objects.filter(answer__project=project).aggregate(
        total=Count("pk"),
        to_review=Count("pk", filter=Q(proposed=True)),
        answers_to_review=Count("answer", filter=Q(proposed=True), distinct=True),
    )
    passages = project.passages.count()
    answers = project.answers.count()
    people = list(project.memberships.select_related("user").order_by("user__username"))
    rows = {
        m.user_id: ReviewerRow(username=m.user.get_username())
        for m in people
        if m.role == Role.REVIEWER
    }
    # Progress towards `overlap` label sets an answer: gold checks fill no slot (annotate.checks).
    by_status = (
        Assignment.objects.filter(project=project, is_check=False)
        .values("reviewer_id", "reviewer__username", "status")
        .annotate(n=Count("pk"))
        .order_by()
    )
    Status = Assignment.Status
    for item in by_status:
        row = rows.setdefault(
            item["reviewer_id"], ReviewerRow(username=item["reviewer__username"], member=False)
        )
        if item["status"] == Status.SUBMITTED:
            row.submitted += item["n"]
        elif item["status"] == Status.IN_PROGRESS:
            row.in_progress += item["n"]
        else:
            row.skipped += item["n"]
    skips = (
        Assignment.objects.filter(project=project, status=Status.RELEASED)
        .values("reviewer_id", "release_reason", "answer__task_number", "touched_at")
        .order_by("-touched_at")[:SKIPS_SHOWN]
    )
    for skip in skips:
        if skip["reviewer_id"] in rows:
            rows[skip["reviewer_id"]].reasons.append(skip)
    needed = answers * project.overlap
    submitted = sum(row.submitted for row in rows.values())
    reviewers = sum(1 for m in people if m.role == Role.REVIEWER)
    return {
        "passages": passages,
        "cases": cases,
        "answers": answers,
        "claims": claims,
        "leads": [m for m in people if m.role == Role.LEAD],
        "reviewer_count": reviewers,
        "reviewers": sorted(rows.values(), key=lambda r: (not r.member, r.username)),
        "needed": needed,
        "submitted": submitted,
        "percent": round(100 * submitted / needed) if needed else 0,
        "checklist": [
            ("Data imported", answers > 0, "upload a bundle with answers"),
            (
                "Proposed claims reviewed",
                claims["to_review"] == 0,
                f"{claims['to_review']} proposed claim{pluralize(claims['to_review'])} in "
                f"{claims['answers_to_review']} answer{pluralize(claims['answers_to_review'])} "
                "still to review",
            ),
            (
                "Enough reviewers",
                reviewers >= project.overlap,
                f"overlap {project.overlap} needs at least {project.overlap} reviewers; "
                f"the project has {reviewers}",
            ),
            ("Guidelines written", bool(project.guidelines.strip()), "write the guidelines"),
        ],
    }


def blinding_check(project: Project) -> list[blinding.Finding]:
    """What on the labelling screen tells the project's variants apart (four queries)."""
    retrieved = {
        row["answer_id"]: row
        for row in RetrievedPassage.objects.filter(answer__project=project)
        .values("answer_id")
        .annotate(n=Count("pk"), in_prompt=Count("pk", filter=Q(in_prompt=True)))
        .order_by()
    }
    claims = dict(
        Claim.objects.filter(answer__project=project)
        .values("answer_id")
        .annotate(n=Count("pk"))
        .order_by()
        .values_list("answer_id", "n")
    )
    retrieved_pairs = RetrievedPassage.objects.filter(
        answer_id=OuterRef("claim__answer_id"), passage_id=OuterRef("passage_id")
    )
    citations = {
        row["claim__answer_id"]: row
        for row in Citation.objects.filter(claim__answer__project=project)
        .values("claim__answer_id")
        .annotate(
            n=Count("pk"),
            not_found=Count("pk", filter=Q(passage__isnull=True)),
            unretrieved=Count("pk", filter=Q(passage__isnull=False) & ~Q(Exists(retrieved_pairs))),
        )
        .order_by()
    }
    values: dict[str, dict[str, list[float]]] = {}
    for pk, variant, length, abstained in Answer.objects.filter(project=project).values_list(
        "pk", "variant__name", Length("text"), "abstained"
    ):
        seen = retrieved.get(pk, {})
        features = values.setdefault(variant, {key: [] for key in blinding.FEATURES})
        features["in_prompt"].append(seen.get("in_prompt", 0))
        features["retrieved"].append(seen.get("n", 0))
        features["claims"].append(claims.get(pk, 0))
        cited = citations.get(pk, {})
        features["citations"].append(cited.get("n", 0))
        features["citation_not_found"].append(cited.get("not_found", 0))
        # Counted per citation, not per distinct passage: close enough to what the screen shows.
        features["cited_not_retrieved"].append(cited.get("unretrieved", 0))
        features["length"].append(length)
        features["abstained"].append(int(abstained))
    return blinding.visible_differences(values)


def answers_for_boundaries(project: Project, only_proposed: bool):
    """The boundary list's answers in answer_id order, each with its number of claims and of
    proposed ones. Counted per answer by subqueries, so that a page of 25 counts 25 answers'
    claims, and the paginator's count reads answers alone (a join grouped by answer
    aggregated all 100,000 claims of a 10,000-answer project twice per page view)."""
    claims = Claim.objects.filter(answer=OuterRef("pk")).order_by().values("answer")
    proposed = claims.filter(proposed=True)

    def number(rows):
        return Coalesce(Subquery(rows.annotate(n=Count("pk")).values("n")), 0)

    answers = (
        Answer.objects.filter(project=project)
        .annotate(claim_count=number(claims), proposed_count=number(proposed))
        .only("pk", "answer_id", "text")
        .order_by("answer_id")
    )
    if only_proposed:
        answers = answers.filter(Exists(proposed))
    return answers


@dataclass
class EditorSegment:
    text: str
    start: int  # offset of the segment in the answer text (code points, as the claims' spans)
    number: int | None = None  # 1-based claim number when the segment is a claim
    pk: int | None = None


def boundary_editor(project: Project, answer: Answer, *, only_proposed: bool) -> dict:
    claims = list(answer.claims.prefetch_related("citations").order_by("ordinal"))
    text = answer.text
    segments: list[EditorSegment] = []
    gaps: list[tuple[int, int, str]] = []
    position = 0
    for number, claim in enumerate(claims, start=1):
        if claim.start > position:
            segments.append(EditorSegment(text[position : claim.start], position))
            _add_gap(gaps, text, position, claim.start)
        segments.append(
            EditorSegment(text[claim.start : claim.end], claim.start, number=number, pk=claim.pk)
        )
        position = max(position, claim.end)
    if position < len(text):
        segments.append(EditorSegment(text[position:], position))
        _add_gap(gaps, text, position, len(text))
    others = Answer.objects.filter(project=project)
    if only_proposed:
        others = others.filter(Exists(Claim.objects.filter(answer=OuterRef("pk"), proposed=True)))
    previous = others.filter(answer_id__lt=answer.answer_id).order_by("-answer_id").first()
    following = others.filter(answer_id__gt=answer.answer_id).order_by("answer_id").first()
    return {
        "answer": answer,
        "claims": [
            {
                "claim": claim,
                "number": number,
                "last": number == len(claims),
                "citations": list(claim.citations.all()),
                "split_points": _split_points(text, claim.start, claim.end),
                "cited_text": ", ".join(c.cited_id for c in claim.citations.all()),
            }
            for number, claim in enumerate(claims, start=1)
        ],
        "segments": segments,
        "gaps": gaps,
        "words": [(m.start(), m.group()) for m in re.finditer(r"\S+", text)],
        "locked": not project.is_draft,
        "proposed_left": sum(1 for c in claims if c.proposed),
        "previous": previous,
        "following": following,
        "nav_query": "?" + urlencode({"proposed": 1}) if only_proposed else "",
        "only_proposed": only_proposed,
    }


def _add_gap(gaps: list, text: str, start: int, end: int) -> None:
    """Text no claim covers, offered as a new claim when it holds words."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if any(ch.isalnum() for ch in text[start:end]):
        gaps.append((start, end, text[start:end]))


def _split_points(text: str, start: int, end: int) -> list[tuple[int, str]]:
    """Offsets inside the span where a word begins: the natural places to split."""
    return [
        (i, text[i : i + 24].split()[0] if text[i : i + 24].split() else "")
        for i in range(start + 1, end)
        if text[i - 1].isspace() and not text[i].isspace()
    ]


def guideline_versions(project: Project) -> list[GuidelineVersion]:
    """The project's guidelines versions, newest first, with their authors: one query."""
    return list(
        GuidelineVersion.objects.filter(project=project)
        .select_related("author")
        .order_by("-number")
    )
