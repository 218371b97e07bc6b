"""Issue #34: "flag for the lead". A reviewer flags their own task with a reason (and words);
the flag is stored, listed in the leads' adjudication queue and in the API, and a lead
resolves it. Nothing of it tells a reviewer anything blinded: not another reviewer's flag,
not a lead's words, not a task that is not theirs. The queue also says "N of M decided"."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotate.adjudication.queue import adjudication_queue
from annotate.adjudication.selectors import adjudication_screen
from annotate.adjudication.services import resolve_flag
from annotate.common.errors import ServiceError
from annotate.gold.pairs import PENDING
from annotate.labelling.services import flag_task
from annotate.models import Answer, Assignment, Flag, Project
from tests.api import API, token_client
from tests.conftest import PASSWORD, labelled_demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db, reviewer_a, reviewer_b, lead) -> Project:
    return labelled_demo(leads=[lead.username])


def task_of(person, project) -> Assignment:
    return (
        Assignment.objects.filter(project=project, reviewer=person)
        .select_related("answer")
        .order_by("answer__task_number")
        .first()
    )


def login(client, user):
    client.login(username=user.username, password=PASSWORD)
    return client


def flag_url(project, number):
    return reverse("flag_task", args=[project.slug, number])


def queue_page(client, project) -> str:
    return client.get(reverse("adjudication_queue", args=[project.slug])).content.decode()


def test_a_reviewer_flags_their_task_and_the_lead_sees_it_in_the_queue(
    client, demo, reviewer_a, lead
):
    mine = task_of(reviewer_a, demo)
    number = mine.answer.task_number
    login(client, reviewer_a)
    form = client.get(flag_url(demo, number)).content.decode()  # the page, where scripts are off
    assert "The passages are wrong or missing" in form and 'name="reason"' in form
    response = client.post(
        flag_url(demo, number), {"reason": "wrong_passages", "note": "p2 is about another law"}
    )
    assert response.status_code == 302 and response["Location"].endswith(f"/tasks/{number}/")
    assert "flagged for the lead" in client.get(response["Location"]).content.decode()
    flag = Flag.objects.get()
    assert (flag.answer_id, flag.reviewer, flag.reason) == (
        mine.answer_id,
        reviewer_a,
        "wrong_passages",
    )
    assert flag.note == "p2 is about another law" and flag.resolved_at is None
    # the queue lists it, in words, with the reviewer's note
    client.logout()
    page = queue_page(login(client, lead), demo)
    assert "Flags from reviewers" in page and "1 open" in page
    assert f"Task {number}</th>" in page and "The passages are wrong or missing" in page
    assert "p2 is about another law" in page and "wrong_passages" not in page
    # resolved: gone from the queue's list
    url = reverse("resolve_flag", args=[demo.slug, flag.pk])
    done = client.post(url, {"note": "removed p2 from the bundle"})
    assert done.status_code == 302 and done["Location"].endswith("/adjudicate/#flags")
    flag.refresh_from_db()
    assert flag.resolved_by == lead and flag.resolution == "removed p2 from the bundle"
    page = queue_page(client, demo)
    assert "No open flag" in page and "p2 is about another law" not in page


def test_a_flag_needs_a_reason_words_with_other_and_is_not_given_twice(client, demo, reviewer_a):
    number = task_of(reviewer_a, demo).answer.task_number
    login(client, reviewer_a)
    nothing = client.post(flag_url(demo, number), {"note": "hm"})
    assert nothing.status_code == 400 and "Choose what is wrong" in nothing.content.decode()
    other = client.post(flag_url(demo, number), {"reason": "other", "note": "  "})
    assert other.status_code == 400 and "Say what is wrong" in other.content.decode()
    assert not Flag.objects.exists()
    assert client.post(flag_url(demo, number), {"reason": "broken_answer"}).status_code == 302
    again = client.post(flag_url(demo, number), {"reason": "broken_answer"})
    assert again.status_code == 400 and "flagged this task already" in again.content.decode()
    assert Flag.objects.count() == 1
    with pytest.raises(ServiceError, match="Shorten"):
        flag_task(assignment=task_of(reviewer_a, demo), reason="other", note="x" * 2001)


def test_a_reviewer_never_learns_of_another_reviewers_flag_nor_the_lead_s_words(
    client, demo, reviewer_a, reviewer_b, lead
):
    """Both reviewers of one answer flag it: each is stored as if alone (no "flagged
    already" for the second), and what a reviewer reads back is their own flag only."""
    mine = task_of(reviewer_a, demo)
    theirs = Assignment.objects.get(answer=mine.answer, reviewer=reviewer_b)
    bob = flag_task(assignment=theirs, reason="other", note="bob-secret-words")
    resolve_flag(flag=bob, lead=lead, resolution="lead-secret-words")
    flag_task(assignment=theirs, reason="broken_answer", note="bob-second")
    api = token_client(reviewer_a)
    url = f"{API}/projects/{demo.slug}/tasks/{mine.answer.task_number}/flag/"
    response = api.post(url, {"reason": "unclear_question", "note": "alice words"}, format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"task_number", "reason", "note", "created_at"}
    assert body["note"] == "alice words" and body["task_number"] == mine.answer.task_number
    raw = response.content + client.get(flag_url(demo, mine.answer.task_number)).content
    for secret in (b"bob-secret-words", b"lead-secret-words", b"bob-second", b"bob"):
        assert secret not in raw
    # leads only: the list of flags
    assert api.get(f"{API}/projects/{demo.slug}/flags/").status_code == 403
    # a task that is not hers: 404, as any other task of another reviewer
    other = Answer.objects.filter(project=demo).exclude(assignments__reviewer=reviewer_a).first()
    assert (
        api.post(
            f"{API}/projects/{demo.slug}/tasks/{other.task_number}/flag/",
            {"reason": "other", "note": "x"},
            format="json",
        ).status_code
        == 404
    )
    login(client, reviewer_a)
    assert (
        client.post(flag_url(demo, other.task_number), {"reason": "broken_answer"}).status_code
        == 404
    )
    assert client.get(reverse("adjudication_queue", args=[demo.slug])).status_code == 404


def test_leads_list_and_resolve_flags_in_the_api_in_one_query_per_page(demo, reviewer_a, lead):
    mine = task_of(reviewer_a, demo)
    flag = flag_task(assignment=mine, reason="guidelines", note="a date format")
    api = token_client(lead)
    url = f"{API}/projects/{demo.slug}/flags/"
    listed = api.get(url).json()
    assert listed["count"] == 1
    row = listed["results"][0]
    assert row["reviewer"] == reviewer_a.username and row["reason"] == "guidelines"
    assert row["reason_text"] == "The guidelines do not cover this case"
    assert row["task_number"] == mine.answer.task_number and row["question"]
    assert row["resolved_at"] is None
    resolved = api.post(f"{url}{flag.pk}/resolve/", {"resolution": "guideline 4"}, format="json")
    assert resolved.status_code == 200 and resolved.json()["resolved_by"] == lead.username
    assert api.get(url).json()["count"] == 0
    assert api.get(url, {"state": "resolved"}).json()["results"][0]["resolution"] == "guideline 4"
    assert api.get(url, {"state": "sideways"}).status_code == 400
    # more flags, the same queries (no N+1 over the reviewer, the answer or its case)
    with CaptureQueriesContext(connection) as one:
        api.get(url, {"state": "all"})
    for assignment in (
        Assignment.objects.filter(project=demo, reviewer=reviewer_a)
        .exclude(pk=mine.pk)
        .order_by("pk")[:3]
    ):
        flag_task(assignment=assignment, reason="broken_answer")
    with CaptureQueriesContext(connection) as four:
        assert api.get(url, {"state": "all"}).json()["count"] == 4
    assert len(four) == len(one)


def test_the_queue_page_shows_flags_in_the_same_queries_whatever_their_number(
    client, demo, reviewer_a, lead
):
    login(client, lead)
    queue_page(client, demo)
    mine = list(Assignment.objects.filter(project=demo, reviewer=reviewer_a).order_by("pk"))
    flag_task(assignment=mine[0], reason="broken_answer")
    with CaptureQueriesContext(connection) as one:
        queue_page(client, demo)
    for assignment in mine[1:5]:
        flag_task(assignment=assignment, reason="other", note="see the answer")
    with CaptureQueriesContext(connection) as five:
        assert "5 open" in queue_page(client, demo)
    assert len(five) == len(one)


def test_the_queue_says_how_many_disagreements_are_decided(client, demo, lead):
    login(client, lead)
    total = len(adjudication_queue(demo))
    assert f"0 of {total} decided" in queue_page(client, demo)
    number = adjudication_queue(demo)[0].task_number
    client.get(reverse("adjudicate", args=[demo.slug, number]))
    screen = adjudication_screen(demo, number)
    rows = [*(f for c in screen.claims for f in c.fields), *screen.answer_fields]
    data = {f"f-{row.key}": "a" for row in rows if row.source == PENDING}
    data["version"] = str(screen.version)
    assert client.post(reverse("adjudicate", args=[demo.slug, number]), data).status_code == 302
    assert f"1 of {total} decided" in queue_page(client, demo)
