"""The queue under real concurrent transactions on PostgreSQL: reviewers pressing "Next task"
at the same moment never push an answer past its overlap, and a double click never gives one
reviewer two tasks."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from annotate.members.services import add_member
from annotate.models import Assignment
from annotate.projects.opening import open_labelling
from annotate.queue.services import next_task
from tests.conftest import import_fixture

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def run_at_once(calls):
    """Start every call on its own thread (own database connection) behind one barrier."""
    barrier = threading.Barrier(len(calls))
    results, errors = [None] * len(calls), []

    def worker(i, call):
        try:
            barrier.wait()
            results[i] = call()
        except Exception as exc:  # surfaced below, with the thread's traceback lost
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i, c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return results


@pytest.fixture
def crowded_project():
    project = import_fixture("demo.jsonl", "crowd")
    reviewers = [
        add_member(project=project, username=f"r{i}", role="reviewer").user for i in range(8)
    ]
    project.overlap = 2
    project.save()
    return open_labelling(project=project), reviewers


def test_concurrent_reviewers_never_exceed_the_overlap(crowded_project):
    project, reviewers = crowded_project
    for _round in range(6):
        taken = run_at_once([lambda r=r: next_task(project=project, reviewer=r) for r in reviewers])
        assert all(t is not None for t in taken)
        # submit so the next round draws new tasks
        Assignment.objects.filter(pk__in=[t.pk for t in taken]).update(status="submitted")
    holders = Counter(
        Assignment.objects.filter(project=project)
        .exclude(status="released")
        .values_list("answer_id", flat=True)
    )
    assert max(holders.values()) <= project.overlap
    assert sum(holders.values()) == 6 * len(reviewers)
    pairs = Assignment.objects.values_list("answer_id", "reviewer_id")
    assert len(set(pairs)) == pairs.count()


def test_a_double_click_gives_one_reviewer_one_task(crowded_project):
    project, reviewers = crowded_project
    reviewer = reviewers[0]
    taken = run_at_once([lambda: next_task(project=project, reviewer=reviewer)] * 4)
    assert len({t.pk for t in taken}) == 1
    assert Assignment.objects.filter(reviewer=reviewer).count() == 1


def test_last_slot_goes_to_exactly_one_of_two_racing_reviewers(crowded_project):
    project, reviewers = crowded_project
    project.overlap = 1
    project.save()
    # leave exactly one answer free
    answers = list(project.answers.order_by("task_number"))
    filler = get_user_model().objects.create(username="filler")
    add_member(project=project, username="filler", role="reviewer")
    Assignment.objects.bulk_create(
        Assignment(project=project, answer=a, reviewer=filler, status="submitted")
        for a in answers[:-1]
    )
    taken = run_at_once([lambda r=r: next_task(project=project, reviewer=r) for r in reviewers[:2]])
    assert sorted(t is None for t in taken) == [False, True]
    assert Assignment.objects.filter(answer=answers[-1]).count() == 1


def test_next_never_says_empty_while_an_answer_still_has_room(crowded_project):
    """Issue #15: with 3 reviewers and overlap 2, concurrent "next" told everyone the queue
    was empty while 4 answers held one label (each call locked its candidates and the others
    skipped them). Now a call that finds everything in reach locked waits for a row instead."""
    project, reviewers = crowded_project
    filler = add_member(project=project, username="filler", role="reviewer").user
    other = add_member(project=project, username="other", role="reviewer").user
    answers = list(project.answers.order_by("queue_key"))
    room = answers[:4]
    # Every other answer is full; the four have one label each, by `filler`.
    Assignment.objects.bulk_create(
        [
            Assignment(project=project, answer=a, reviewer=filler, status="submitted")
            for a in answers
        ]
        + [
            Assignment(project=project, answer=a, reviewer=other, status="submitted")
            for a in answers[4:]
        ]
    )
    project.answers.exclude(pk__in=[a.pk for a in room]).update(full=True)
    for _ in range(3):
        Assignment.objects.filter(answer__in=room).exclude(reviewer=filler).delete()
        project.answers.filter(pk__in=[a.pk for a in room]).update(full=False)
        taken = run_at_once(
            [lambda r=r: next_task(project=project, reviewer=r) for r in reviewers[:3]]
        )
        assert all(t is not None for t in taken), "a reviewer was told the queue is empty"
        assert len({t.answer_id for t in taken}) == 3
        assert {t.answer_id for t in taken} <= {a.pk for a in room}


def test_the_full_flag_follows_the_holders(crowded_project):
    from annotate.queue.services import release_task

    project, reviewers = crowded_project
    first = next_task(project=project, reviewer=reviewers[0])
    first.answer.refresh_from_db()
    assert not first.answer.full
    second = Assignment.objects.create(project=project, answer=first.answer, reviewer=reviewers[1])
    assert second.pk
    # a third reviewer is never given it, and the flag is repaired on the way
    for reviewer in reviewers[2:]:
        assert next_task(project=project, reviewer=reviewer).answer_id != first.answer_id
    release_task(assignment=first, reason="not my topic")
    first.answer.refresh_from_db()
    assert not first.answer.full


def test_a_reopen_racing_a_lead_opening_adjudication_never_both_succeed(crowded_project):
    """Issue #15: a reviewer's reopen racing the lead opening adjudication succeeded in 93 of
    100 tries: the lead read labels the reviewer then changed. Both now take the answer's row
    lock; the lead reads the labels only after the lock is taken."""
    from annotate.adjudication.selectors import adjudication_screen
    from annotate.adjudication.services import start_adjudication
    from annotate.common.errors import ServiceError
    from annotate.labelling.services import reopen_task
    from annotate.models import AdjudicationLock

    project, reviewers = crowded_project
    lead = get_user_model().objects.create(username="lead")
    answer = project.answers.order_by("task_number").first()
    a, b = (
        Assignment.objects.create(project=project, answer=answer, reviewer=r, status="submitted")
        for r in reviewers[:2]
    )
    outcomes = Counter()
    for _ in range(30):
        AdjudicationLock.objects.filter(answer=answer).delete()
        Assignment.objects.filter(pk__in=[a.pk, b.pk]).update(status="submitted")

        def reopen():
            try:
                reopen_task(assignment=a)
            except ServiceError:
                return "refused"
            return "reopened"

        def lead_opens():
            if start_adjudication(answer=answer, lead=lead) is None:
                return "not doubly labelled"
            screen = adjudication_screen(project, answer.task_number)
            return "read labels" if screen is not None else "nothing to read"

        reopened, read = run_at_once([reopen, lead_opens])
        outcomes[(reopened, read)] += 1
        assert (reopened, read) in {
            ("reopened", "not doubly labelled"),
            ("refused", "read labels"),
        }, (reopened, read)
    assert sum(outcomes.values()) == 30


def test_two_tabs_saving_one_claim_at_once_write_it_once_and_count_time_once(crowded_project):
    """Two tabs of one reviewer save the same claim from the same version at the same moment,
    each from the assignment (and the claim's label: none yet) as its request read it: one
    save lands, the other is told the label moved on; neither writes over the other, and the
    time between is counted once."""
    from datetime import timedelta

    from django.utils import timezone

    from annotate.labelling.services import StaleDraft, save_claim_label
    from annotate.models import ClaimLabel

    project, reviewers = crowded_project
    assignment = next_task(project=project, reviewer=reviewers[0])
    claims = list(assignment.answer.claims.order_by("ordinal"))
    assert claims, "the crowd project's first task has claims"
    for round_, claim in enumerate(claims):
        Assignment.objects.filter(pk=assignment.pk).update(
            touched_at=timezone.now() - timedelta(seconds=20)
        )
        before = Assignment.objects.get(pk=assignment.pk)
        reads = [Assignment.objects.get(pk=assignment.pk) for _ in range(2)]

        def save(read, support, claim=claim):
            try:
                return save_claim_label(
                    assignment=read,
                    claim=claim,
                    data={"support": support},
                    version=0,
                    stored=None,
                )[0].support
            except StaleDraft:
                return "stale"

        outcomes = run_at_once(
            [lambda r=reads[0]: save(r, "supported"), lambda r=reads[1]: save(r, "contradicted")]
        )
        assert outcomes.count("stale") == 1, outcomes
        [saved] = [o for o in outcomes if o != "stale"]
        label = ClaimLabel.objects.get(assignment=assignment, claim=claim)
        assert (label.support, label.version) == (saved, 1)
        after = Assignment.objects.get(pk=assignment.pk)
        assert after.seconds_spent - before.seconds_spent in (20, 21), round_
