"""Gold settled under older guidelines, for the tests of guideline versions and of the
re-audit (its page and its API): the demo labelled half under v1 and half under v2, and the
ways to tell which answers were labelled under a version, which are settled, and to decide
one as a lead would."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from annotate.adjudication.selectors import adjudication_screen
from annotate.adjudication.services import DecisionInput, adjudicate
from annotate.gold.pairs import PENDING, pairs_for_project
from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Answer, Assignment, Project, Role
from annotate.projects.opening import open_labelling
from annotate.projects.services import update_guidelines
from tests.conftest import FIXTURES, import_fixture

V1 = "Judge support against the passages shown, nothing else."
V2 = "Judge support against the passages shown. A hedge ('may', 'about') needs no evidence."
V3 = "Judge support against the passages shown. Dates must match to the day."


def label_lines() -> dict[str, list[bytes]]:
    """demo_labels.jsonl by answer, in the file's order."""
    by_answer: dict[str, list[bytes]] = defaultdict(list)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        for line in stream:
            by_answer[json.loads(line)["answer_id"]].append(line)
    return by_answer


@pytest.fixture
def versioned(reviewer_a, reviewer_b, lead, outsider) -> Project:
    """The demo with guidelines v1, both reviewers' label sets of its first half of answers
    imported under v1, then guidelines v2 and the second half's label sets under it."""
    project, second_half = first_half_under_v1(reviewer_a, reviewer_b, lead)
    update_guidelines(project=project, guidelines=V2, author=lead)
    import_labels(lines=second_half, project=project)
    return Project.objects.get(pk=project.pk)


def first_half_under_v1(reviewer_a, reviewer_b, lead) -> tuple[Project, list[bytes]]:
    """The demo with guidelines v1, open, both reviewers' label sets of the first half of its
    answers imported; and the second half's label lines, for the test to import later."""
    project = import_fixture("demo.jsonl", "demo")
    for person in (reviewer_a, reviewer_b):
        add_member(project=project, username=person.username, role=Role.REVIEWER)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    update_guidelines(project=project, guidelines=V1, author=lead)
    project = open_labelling(project=project)
    answers = list(label_lines().values())
    half = len(answers) // 2
    import_labels(lines=[line for lines in answers[:half] for line in lines], project=project)
    return project, [line for lines in answers[half:] for line in lines]


def answers_under(project, version: int) -> set[int]:
    return set(
        Assignment.objects.filter(project=project, guideline_version=version).values_list(
            "answer_id", flat=True
        )
    )


def settled(project) -> set[int]:
    """Answers with two reviewers' label sets and no field waiting for a lead, derived from
    the pairs directly."""
    answer_pairs, claim_pairs = pairs_for_project(project)
    pending = {p.answer_id for p in [*answer_pairs, *claim_pairs] if p.pending}
    return {p.answer_id for p in answer_pairs} - pending


def decide_everything(project, answer: Answer, lead, *, keep_only: bool = False):
    """A lead decides every pending field of the answer as reviewer A labelled it (the
    adjudication screen's "A"); `keep_only`: saves the screen with no change at all."""
    screen = adjudication_screen(project, answer.task_number)
    decisions = []
    if not keep_only:
        rows = [(c.claim, f) for c in screen.claims for f in c.fields]
        rows += [(None, f) for f in screen.answer_fields]
        decisions = [
            DecisionInput(claim=claim, field=row.name, value=row.a)
            for claim, row in rows
            if row.source == PENDING
        ]
    adjudicate(answer=answer, lead=lead, version=screen.version, decisions=decisions, rationale="v")
