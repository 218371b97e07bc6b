"""Writes of a project take its row first (annotate.common.computed.lock), on PostgreSQL.

CI once failed with "deadlock detected": a reviewer's submit had moved the project's revision
(holding the project's row) and was about to move its answer's, while the co-reviewer's undo
held that answer's row and waited for the project's. The test below stops a submit at exactly
that point, runs the undo into it, and lets the submit go on once the undo waits: with the
order of locks reversed in either service, PostgreSQL finds a deadlock and fails one of them.
"""

from __future__ import annotations

import random
import threading
import time
import traceback

import pytest
from django.db import connection
from django.db.models import F

from annotate.common import computed
from annotate.labelling.services import reopen_task, submit_labels
from annotate.members.services import add_member
from annotate.models import Answer, Assignment, LabelRevision
from annotate.projects.opening import open_labelling
from annotate.queue.services import next_task
from tests.annotate.test_concurrency_scenario import label
from tests.conftest import import_fixture

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def waiting_for_a_lock() -> int:
    """How many other sessions of this database wait for a row lock now."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]


def test_a_submit_and_the_co_reviewers_undo_on_one_answer_never_deadlock(monkeypatch, settings):
    settings.CLAIMDESK_REOPEN_MINUTES = 10
    project = import_fixture("demo.jsonl", "locks")
    alice = add_member(project=project, username="alice", role="reviewer").user
    bob = add_member(project=project, username="bob", role="reviewer").user
    project.overlap = 2
    project.save()
    project = open_labelling(project=project)
    first = next_task(project=project, reviewer=alice)
    answer = Answer.objects.get(pk=first.answer_id)
    # bob gets the same answer: the others are made full for him.
    Answer.objects.filter(project=project).exclude(pk=answer.pk).update(full=True)
    second = next_task(project=project, reviewer=bob)
    assert second.answer_id == answer.pk
    rng = random.Random(7)
    label(first, rng, {})
    label(second, rng, {})
    assert not submit_labels(assignment=first)  # alice's, undoable for ten minutes

    holds_project = threading.Event()
    go_on = threading.Event()
    real_touch = computed.touch

    def touch_then_wait(project, **kwargs):
        """bob's submit: the project's revision moved (its row held), then a pause before
        the answer's revision moves, as touch() does it."""
        answers = kwargs.pop("answers", ())
        if threading.current_thread().name != "submit" or not answers:
            return real_touch(project, answers=answers, **kwargs)
        real_touch(project, **kwargs)
        holds_project.set()
        assert go_on.wait(30)
        Answer.objects.filter(pk__in=list(answers)).update(revision=F("revision") + 1)

    monkeypatch.setattr(computed, "touch", touch_then_wait)
    errors: list[str] = []

    def run(work):
        try:
            work()
        except Exception:
            errors.append(traceback.format_exc())
        finally:
            connection.close()

    submit = threading.Thread(
        target=run, args=(lambda: submit_labels(assignment=second),), name="submit"
    )
    undo = threading.Thread(target=run, args=(lambda: reopen_task(assignment=first),), name="undo")
    submit.start()
    assert holds_project.wait(30)
    undo.start()
    deadline = time.monotonic() + 30
    while waiting_for_a_lock() < 1:  # the undo waits: for the project (as it must) or worse
        assert time.monotonic() < deadline, "the undo never waited"
        time.sleep(0.02)
    go_on.set()
    submit.join(60)
    undo.join(60)
    assert not submit.is_alive() and not undo.is_alive()
    assert not errors, "\n".join(errors)
    statuses = dict(Assignment.objects.filter(answer=answer).values_list("reviewer_id", "status"))
    assert statuses == {alice.pk: "in_progress", bob.pk: "submitted"}
    assert LabelRevision.objects.filter(assignment=second).count() == 1
