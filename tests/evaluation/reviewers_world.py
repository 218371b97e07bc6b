"""A project whose reviewers have something to show on the Reviewers page: the demo with
alice's and bob's imported label sets (untimed), then alice and a third reviewer, carol,
labelling answers in the app at known times (freezegun) with known active time, some answers
both, carol departing from alice on some claims; a lead decides a few disagreements; and gold
checks carol takes through the queue, some labelled wrong."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from freezegun import freeze_time

from annotate.checks.services import mark_all_decided, set_check_rate
from annotate.gold.pairs import PENDING, pairs_for_project
from annotate.labelling.services import save_answer_label, save_claim_label, submit_labels
from annotate.members.services import add_member
from annotate.models import Answer, Assignment, Project
from annotate.queue.services import next_task
from tests.conftest import decide_support

SUPPORT = ("supported", "contradicted", "insufficient_evidence")
DAY_1 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)

# (reviewer, answer position among the unlabelled answers, when, active seconds)
SCHEDULE = [
    ("alice", 0, DAY_1, 40),
    ("alice", 1, DAY_1 + timedelta(hours=1), 90),
    ("alice", 2, DAY_1 + timedelta(days=1), 60),
    ("alice", 3, DAY_1 + timedelta(days=1, hours=2), 200),
    ("carol", 0, DAY_1 + timedelta(hours=3), 30),
    ("carol", 1, DAY_1 + timedelta(hours=4), 50),
    ("carol", 2, DAY_1 + timedelta(hours=5), 120),
    ("carol", 3, DAY_1 + timedelta(days=2), 20),
    ("carol", 4, DAY_1 + timedelta(days=2, hours=1), 70),
    ("carol", 5, DAY_1 + timedelta(days=2, hours=2), 44),
]


def support_for(reviewer: str, position: int, ordinal: int) -> str:
    """alice's labels follow one pattern; carol departs from it on about a third of claims."""
    base = SUPPORT[(position + ordinal) % 3]
    if reviewer == "carol" and (position * 7 + ordinal) % 3 == 0:
        return SUPPORT[(SUPPORT.index(base) + 1) % 3]
    return base


def label(assignment: Assignment, supports: dict[int, str]) -> None:
    """Complete labels: the given support per claim ordinal, the severity and needs-evidence
    it allows without a quote, each citation judged."""
    answer = assignment.answer
    for claim in answer.claims.all():
        support = supports[claim.ordinal]
        citations = {c.cited_id: "supports" for c in claim.citations.all() if c.passage is not None}
        save_claim_label(
            assignment=assignment,
            claim=claim,
            data={
                "support": support,
                "severity": "none" if support == "supported" else "minor",
                "requires_evidence": False,
                "citations": citations,
            },
        )
    save_answer_label(
        assignment=assignment,
        data={"relevance": 2, "abstention": "appropriate" if answer.abstained else ""},
    )


def work(
    project: Project, reviewer, answer: Answer, position: int, *, at: datetime, seconds: int
) -> Assignment:
    """A task taken at `at`, labelled half-way through, submitted `seconds` later."""
    with freeze_time(at) as clock:
        assignment = Assignment.objects.create(project=project, answer=answer, reviewer=reviewer)
        clock.tick(seconds // 2)
        label(
            assignment,
            {
                c.ordinal: support_for(reviewer.username, position, c.ordinal)
                for c in answer.claims.all()
            },
        )
        clock.tick(seconds - seconds // 2)
        assert not submit_labels(assignment=assignment)
    return assignment


def build(project: Project, *, alice, carol, lead, decisions: int = 4) -> Project:
    """The timed work of SCHEDULE and `decisions` support decisions (each 'supported') on
    pending claims, the lead's."""
    add_member(project=project, username=carol.username, role="reviewer")
    labelled = Assignment.objects.filter(project=project).values("answer_id")
    answers = list(
        Answer.objects.filter(project=project).exclude(pk__in=labelled).order_by("task_number")
    )
    people = {"alice": alice, "carol": carol}
    for who, position, at, seconds in SCHEDULE:
        work(project, people[who], answers[position], position, at=at, seconds=seconds)
    _, claims = pairs_for_project(project)
    pending = [p for p in claims if p.source["support"] == PENDING][:decisions]
    for pair in pending:
        decide_support(project, lead, pair)
    return project


# Check errors that raise the drift flag: ten claims in a row wrong, the last at position 22 (the
# chart, designed to flag at most 5% of steady reviewers in 200 checks, needs about seven).
DRIFTING = frozenset(range(13, 23))


def take_checks(
    project: Project,
    reviewer,
    *,
    wrong: set[int],
    seed: int = 3,
    limit: int | None = None,
    day: int = 5,
) -> list[int]:
    """Mark every decided answer a check, and let `reviewer` take checks through the queue
    (check rate 1) until none is left (or `limit` are taken: a later call, on a later `day`,
    takes the rest), labelling each claim's support as gold has it except the claims at the
    positions in `wrong` (counted over this call's claims in order), which get another
    label. Returns the task numbers of the checks, in order."""
    lead = project.memberships.filter(role="lead").first().user
    mark_all_decided(project=project, lead=lead)
    project = set_check_rate(project=project, rate=1.0)
    rng = random.Random(seed)
    position = 0
    taken: list[int] = []
    at = DAY_1 + timedelta(days=day)
    while limit is None or len(taken) < limit:
        with freeze_time(at):
            task = next_task(project=project, reviewer=reviewer, rng=rng)
        if task is None or not task.is_check:
            break  # no check left: the queue gave an ordinary task (left in progress)
        answer_pairs, claim_pairs = pairs_for_project(project, answer_ids=[task.answer_id])
        gold = {p.ordinal: p.gold["support"] for p in claim_pairs}
        supports = {}
        for ordinal in sorted(gold):
            value = gold[ordinal]
            if position in wrong:
                value = SUPPORT[(SUPPORT.index(value) + 1) % 3]
            supports[ordinal] = value
            position += 1
        with freeze_time(at) as clock:
            clock.tick(30)
            label(task, supports)
            assert not submit_labels(assignment=task)
        taken.append(task.answer.task_number)
        at += timedelta(minutes=5)
    return taken
