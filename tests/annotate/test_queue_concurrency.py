"""The queue under real concurrent transactions on PostgreSQL: reviewers pressing "Next task"
at the same moment never push an answer past its overlap, and a double click never gives one
reviewer two tasks."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.db import connection

from annotate.models import Assignment
from annotate.services import add_member, next_task, open_labelling
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
