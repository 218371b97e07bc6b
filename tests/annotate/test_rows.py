"""The task views' reads are hand-written SQL (annotate.labelling.rows says why): they must
return what the ORM queries they replaced returned -- the same rows, the same values of the
same types, for every person and every kind of task, on SQLite and PostgreSQL alike. The ORM
queries are kept here as the specification.

Two copies of the demo project hold the same task numbers and the same passage ids, so a
statement that loses a project condition returns the other project's row, and a reviewer who
lost the role, a lead, an outsider or a released task must find nothing."""

from __future__ import annotations

import pytest
from django.db.models import Count, Exists, F, FilteredRelation, OuterRef, Q, Subquery, Value
from django.db.models.functions import Coalesce

from annotate.labelling.preferences import set_preferences
from annotate.labelling.selectors import CASE_FIELDS_NOT_SHOWN, claim_to_save, reviewer_task
from annotate.models import (
    Answer,
    Assignment,
    Citation,
    Claim,
    ClaimLabel,
    Membership,
    Passage,
    Preferences,
    RetrievedPassage,
    Role,
)
from tests.conftest import labelled_demo

RELEASED = Assignment.Status.RELEASED


def orm_task(user, slug: str, number: int, *, page: bool) -> Assignment | None:
    """reviewer_task as the ORM query it was until SQL replaced it."""
    found = Assignment.objects.filter(
        reviewer=user,
        project__slug=slug,
        answer__project=F("project"),
        answer__task_number=number,
        project__memberships__user=user,
        project__memberships__role=Role.REVIEWER,
    ).exclude(status=RELEASED)
    if page:
        shortcuts = Preferences.objects.filter(user=user).values("single_key_shortcuts")[:1]
        found = (
            found.select_related("answer__case", "project")
            .annotate(single_key_shortcuts=Coalesce(Subquery(shortcuts), Value(True)))
            .defer(*(f"answer__case__{name}" for name in CASE_FIELDS_NOT_SHOWN))
        )
    else:
        found = found.select_related("answer", "project")
    return found.first()


def orm_claim(assignment: Assignment, index: int, evidence_ids) -> tuple | None:
    """claim_to_save as the ORM queries they were: (claim, label, citations, shown)."""
    claim = (
        Claim.objects.filter(answer_id=assignment.answer_id, ordinal=index)
        .annotate(mine=FilteredRelation("labels", condition=Q(labels__assignment=assignment)))
        .select_related("mine")
        .prefetch_related("citations")
        .first()
    )
    if claim is None:
        return None
    answer = assignment.answer_id
    retrieved = RetrievedPassage.objects.filter(answer_id=answer, passage=OuterRef("pk"))
    cited = Citation.objects.filter(claim__answer_id=answer, passage=OuterRef("pk"))
    shown = Passage.objects.filter(
        Q(Exists(retrieved)) | Q(Exists(cited)),
        project_id=assignment.project_id,
        passage_id__in=list(evidence_ids),
    )
    label = getattr(claim, "mine", None)
    return claim, label, list(claim.citations.all()), {p.passage_id: p for p in shown}


def values(instance) -> tuple | None:
    """The instance's model, deferred fields, and every loaded field's value with its type
    (an integer 1 where the ORM gives True, or text where it gives a datetime, differs)."""
    if instance is None:
        return None
    deferred = instance.get_deferred_fields()
    loaded = [f.attname for f in instance._meta.concrete_fields if f.attname not in deferred]
    return (
        type(instance),
        deferred,
        {name: (type(getattr(instance, name)), getattr(instance, name)) for name in loaded},
        instance._state.adding,
    )


@pytest.fixture
def two_demos(reviewer_a, reviewer_b, lead, outsider):
    """demo: alice and bob review, lena leads. other: alice reviews, bob leads (and holds
    tasks from when he reviewed). Some of alice's tasks are in progress, some released."""
    demo = labelled_demo(reviewers=("alice", "bob"), leads=("lena",))
    other = labelled_demo(reviewers=("alice", "bob"), slug="other")
    Membership.objects.filter(project=other, user=reviewer_b).update(role=Role.LEAD)
    mine = Assignment.objects.filter(project=demo, reviewer=reviewer_a).order_by("pk")
    Assignment.objects.filter(pk__in=mine.values("pk")[:5]).update(status=RELEASED)
    Assignment.objects.filter(pk__in=mine.values("pk")[5:10]).update(
        status=Assignment.Status.IN_PROGRESS, submitted_at=None
    )
    set_preferences(user=reviewer_a, single_key_shortcuts=False)
    return demo, other


@pytest.mark.django_db
def test_the_task_lookup_returns_what_the_orm_query_returned(
    two_demos, reviewer_a, reviewer_b, lead, outsider
):
    demo, other = two_demos
    numbers = sorted(Answer.objects.filter(project=demo).values_list("task_number", flat=True))
    found = []
    for user in (reviewer_a, reviewer_b, lead, outsider):
        for slug in (demo.slug, other.slug, "missing"):
            for number in [0, *numbers, numbers[-1] + 1]:
                for page in (True, False):
                    expected = orm_task(user, slug, number, page=page)
                    got = reviewer_task(user, slug, number, page=page)
                    assert values(got) == values(expected), (user, slug, number, page)
                    if expected is None:
                        continue
                    found.append((user.username, slug, expected.status, number))
                    assert values(got.answer) == values(expected.answer)
                    assert values(got.project) == values(expected.project)
                    assert got.project.schema == expected.project.schema
                    if page:
                        assert values(got.answer.case) == values(expected.answer.case)
                        assert got.single_key_shortcuts is expected.single_key_shortcuts
    # Each kind of task was found, and only alice's and bob's as reviewers of demo, alice's
    # in other: never bob's in other (a lead now), nor lena's or oscar's.
    statuses = {status for _, _, status, _ in found}
    assert statuses == {Assignment.Status.IN_PROGRESS, Assignment.Status.SUBMITTED}
    assert {(name, slug) for name, slug, _, _ in found} == {
        ("alice", "demo"),
        ("bob", "demo"),
        ("alice", "other"),
    }
    # the shortcut preference both ways: alice's row says off, bob has none (on)
    held = {
        name: {n for who, slug, _, n in found if who == name and slug == "demo"}
        for name in ("alice", "bob")
    }
    number = min(held["alice"] & held["bob"])
    shortcuts = [reviewer_task(user, demo.slug, number) for user in (reviewer_a, reviewer_b)]
    assert [task.single_key_shortcuts for task in shortcuts] == [False, True]


@pytest.mark.django_db
def test_a_removed_reviewer_finds_no_task(two_demos, reviewer_a):
    demo, _ = two_demos
    number = (
        Assignment.objects.filter(project=demo, reviewer=reviewer_a)
        .exclude(status=RELEASED)[0]
        .answer.task_number
    )
    assert reviewer_task(reviewer_a, demo.slug, number) is not None
    Membership.objects.filter(project=demo, user=reviewer_a).delete()
    assert reviewer_task(reviewer_a, demo.slug, number) is None
    assert orm_task(reviewer_a, demo.slug, number, page=True) is None


@pytest.mark.django_db
def test_the_claim_read_returns_what_the_orm_queries_returned(two_demos, reviewer_a):
    """Every claim of every task alice holds (labelled or not, with no, resolved and
    unresolved citations, one of them cited but not retrieved), with no evidence, with
    evidence on screen, and with ids that are not: unknown, or only in the other project."""
    demo, other = two_demos
    tasks = Assignment.objects.filter(project=demo, reviewer=reviewer_a).exclude(status=RELEASED)
    first = tasks.annotate(claims=Count("answer__claims")).order_by("-claims", "pk")[0]
    # A claim citing a passage that its answer did not retrieve: shown, so valid evidence.
    retrieved = RetrievedPassage.objects.filter(answer=first.answer).values("passage_id")
    elsewhere = Passage.objects.filter(project=demo).exclude(pk__in=retrieved).order_by("pk")[0]
    Citation.objects.create(
        claim=first.answer.claims.order_by("ordinal")[0],
        ordinal=9,
        cited_id=elsewhere.passage_id,
        passage=elsewhere,
    )
    ClaimLabel.objects.filter(assignment=first, claim__ordinal__gte=1).delete()
    only_other = Passage.objects.create(project=other, passage_id="other-only", text="x")
    every_id = list(Passage.objects.filter(project=demo).values_list("passage_id", flat=True))
    evidence_lists = ([], [elsewhere.passage_id], [*every_id, "unknown", only_other.passage_id])
    kinds = set()
    for assignment in tasks.select_related("answer", "project"):
        claims = assignment.answer.claims.count()
        for index in range(claims + 1):
            for evidence in evidence_lists:
                expected = orm_claim(assignment, index, evidence)
                got = claim_to_save(assignment, index, evidence)
                if expected is None:
                    assert got is None and index == claims
                    continue
                claim, label, citations, shown = expected
                assert values(got.claim) == values(claim)
                assert values(got.label) == values(label)
                assert [values(c) for c in got.citations] == [values(c) for c in citations]
                assert got.shown.keys() == shown.keys()
                assert [values(p) for p in got.shown.values()] == [
                    values(shown[key]) for key in got.shown
                ]
                kinds.add("labelled" if label else "unlabelled")
                kinds.add("cited" if citations else "uncited")
                if any(c.passage_id is None for c in citations):
                    kinds.add("unresolved")
                if elsewhere.passage_id in shown:
                    kinds.add("cited, not retrieved")
                if shown:
                    kinds.add("shown")
    assert kinds == {
        "labelled",
        "unlabelled",
        "cited",
        "uncited",
        "unresolved",
        "cited, not retrieved",
        "shown",
    }


def test_a_field_whose_value_may_differ_by_database_is_refused():
    """A job's id, a UUID, comes back as text from SQLite and as a UUID from PostgreSQL: read
    as returned, it would differ from the ORM's on one of them, so declaring the columns of a
    statement that reads it fails at once."""
    from annotate.labelling.rows import Columns
    from jobs.models import Job

    with pytest.raises(TypeError, match="UUIDField"):
        Columns(("j", Job))
