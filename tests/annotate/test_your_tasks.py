"""Issue #34: a reviewer finds their own work. "Your tasks" lists each task with its question,
status and time, searched and filtered in the database a page at a time in a pinned number of
queries; the status bar counts the day's work ("42 today, 11 s per answer") at no extra
query. Nothing in it reaches another reviewer's task."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotate.labelling.selectors import reviewer_progress
from annotate.models import Answer, Assignment
from annotate.templatetags.claimdesk import duration
from tests.conftest import PASSWORD, labelled_demo

pytestmark = pytest.mark.django_db
ROW = re.compile(r'<th scope="row"><a href="/p/demo/tasks/(\d+)/">')
# session, user, project and role, the page of tasks, their count, the progress (2)
QUERIES = 7


@pytest.fixture
def alice(client):
    project = labelled_demo(password=PASSWORD)
    client.login(username="alice", password=PASSWORD)
    mine = Assignment.objects.filter(project=project, reviewer__username="alice")
    yesterday = timezone.now() - timedelta(days=1, hours=1)
    mine.update(submitted_at=yesterday, seconds_spent=75)
    # a task in progress, on an answer alice never had
    fresh = Answer.objects.filter(project=project).exclude(assignments__in=mine).first()
    Assignment.objects.create(project=project, answer=fresh, reviewer=mine.first().reviewer)
    return project, mine


def listed(client, **params) -> tuple[list[int], str, int]:
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("my_tasks", args=["demo"]), params).content.decode()
    return [int(n) for n in ROW.findall(page)], page, len(queries)


def test_each_task_shows_its_question_status_and_time(client, alice):
    project, mine = alice
    numbers, page, _ = listed(client)
    in_progress = mine.get(status=Assignment.Status.IN_PROGRESS)
    assert numbers[0] == in_progress.answer.task_number  # the task at hand on top
    assert sorted(numbers) == sorted(mine.values_list("answer__task_number", flat=True))
    first = mine.filter(status="submitted").select_related("answer__case").first()
    assert html.escape(first.answer.case.question[:60]) in page
    assert "in progress</span>" in page and ">submitted</span>" in page
    assert "1 min 15 s" in page
    assert "baseline" not in page and "verifier" not in page  # the variant stays hidden


def test_search_and_filter_run_in_the_database_in_pinned_queries(client, alice):
    project, mine = alice
    _, _, plain = listed(client)
    assert plain == QUERIES
    # by a word of the question
    target = mine.filter(status="submitted").select_related("answer__case").order_by("pk")[0]
    word = max(re.findall(r"[A-Za-z]{4,}", target.answer.case.question), key=len)
    expected = {
        a.answer.task_number
        for a in mine.select_related("answer__case")
        if word.lower() in a.answer.case.question.lower()
    }
    numbers, page, count = listed(client, q=word.upper())
    assert set(numbers) == expected and target.answer.task_number in numbers
    assert count == QUERIES
    # by its number, written as the page writes it
    numbers, _, count = listed(client, q=f"Task {target.answer.task_number}")
    assert numbers == [target.answer.task_number] and count == QUERIES
    # by status
    numbers, _, count = listed(client, status="in_progress")
    assert numbers == [mine.get(status="in_progress").answer.task_number]
    assert count == QUERIES
    numbers, _, _ = listed(client, status="submitted")
    assert len(numbers) == mine.filter(status="submitted").count()
    # nothing found: said so, with the way back
    numbers, page, _ = listed(client, q="no question says zyzzyva")
    assert numbers == [] and "None of your tasks matches" in page
    # an unknown status filters nothing rather than failing
    numbers, _, _ = listed(client, status="released")
    assert len(numbers) == mine.count()


def test_a_search_never_reaches_another_reviewer_s_task(client, alice):
    project, mine = alice
    bob = Assignment.objects.filter(project=project, reviewer__username="bob").first().reviewer
    answer = Answer.objects.filter(project=project).exclude(assignments__in=mine).last()
    Assignment.objects.create(project=project, answer=answer, reviewer=bob)
    theirs = answer.task_number
    numbers, page, _ = listed(client, q=str(theirs))
    assert theirs not in numbers


def test_a_search_is_a_partial_for_htmx(client, alice):
    reply = client.get(
        reverse("my_tasks", args=["demo"]),
        {"q": "the"},
        headers={"HX-Request": "true", "HX-Target": "my-tasks"},
    ).content.decode()
    assert reply.lstrip().startswith('<div class="card flush" id="my-tasks">')
    assert "<html" not in reply and 'role="status"' in reply


def test_the_day_s_counter_rides_on_the_progress_query(client, alice):
    project, mine = alice
    submitted = list(mine.filter(status="submitted").order_by("pk")[:3])
    now = timezone.now()
    for assignment, seconds in zip(submitted, (10, 12, 14), strict=True):
        Assignment.objects.filter(pk=assignment.pk).update(
            submitted_at=now, seconds_spent=seconds, undo_until=now + timedelta(minutes=30)
        )
    # imported today (no undo window): not the day's work
    imported = mine.filter(status="submitted").exclude(pk__in=[a.pk for a in submitted])
    Assignment.objects.filter(pk=imported.first().pk).update(submitted_at=now, seconds_spent=0)
    user = submitted[0].reviewer
    with CaptureQueriesContext(connection) as queries:
        progress = reviewer_progress(user, project)
    assert len(queries) == 2
    assert (progress.today, progress.seconds_per_answer) == (3, 12)
    task = mine.get(status="in_progress").answer.task_number
    page = client.get(reverse("task", args=["demo", task])).content.decode()
    assert "3 today, 12 s per answer" in page
    assert (
        "3 today, 12 s per answer"
        in client.get(reverse("my_tasks", args=["demo"])).content.decode()
    )
    # none today: no counter
    mine.update(submitted_at=now - timedelta(days=2))
    page = client.get(reverse("task", args=["demo", task])).content.decode()
    assert " today" not in page


def test_time_spent_reads_in_words():
    assert [duration(s) for s in (0, 45, 75, 3600 + 120)] == [
        "0 s",
        "45 s",
        "1 min 15 s",
        "1 h 02 min",
    ]
