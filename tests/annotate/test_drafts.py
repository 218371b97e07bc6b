"""Two tabs (or a tab and a script) of one reviewer: every draft save names the version it was
made from, and a save made from an older version is refused with 409, shows the newer
labels, and overwrites nothing -- in the service, on the page (with and without its script)
and in the API. And blinding: nothing a reviewer sees moves when their co-reviewer takes,
drafts, submits or reopens the same answer."""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotate.adjudication.services import StillUndoable, start_adjudication
from annotate.common.errors import ServiceError
from annotate.labelling.services import (
    IDLE_CAP_SECONDS,
    StaleDraft,
    reopen_task,
    save_answer_label,
    save_claim_label,
    submit_labels,
)
from annotate.models import Answer, Assignment, ClaimLabel, Project
from annotate.projects.opening import open_labelling
from tests.annotate.test_labelling import label_everything
from tests.api import API, token_client
from tests.conftest import PASSWORD

HX = {"HX-Request": "true"}


@pytest.fixture
def opened(team) -> Project:
    return open_labelling(project=team)


@pytest.fixture
def alice_task(opened, reviewer_a) -> Assignment:
    answer = Answer.objects.get(project=opened, answer_id="a2-deadline/baseline")
    return Assignment.objects.create(project=opened, answer=answer, reviewer=reviewer_a)


def url(assignment, name="task", **kwargs) -> str:
    number = assignment.answer.task_number
    return reverse(name, kwargs={"slug": assignment.project.slug, "number": number, **kwargs})


def data_label(reply: str, ordinal: int = 0) -> dict:
    span = re.search(rf"id=\"claim-span-{ordinal}\"[^>]*data-label='([^']*)'", reply)
    return json.loads(html.unescape(span.group(1)))


# --- The service --------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_claim_draft_from_an_older_version_is_refused_and_writes_nothing(alice_task):
    claim = alice_task.answer.claims.get(ordinal=0)
    label, _ = save_claim_label(
        assignment=alice_task, claim=claim, data={"support": "supported"}, version=0
    )
    assert label.version == 1
    with pytest.raises(StaleDraft) as stale:
        save_claim_label(
            assignment=alice_task, claim=claim, data={"support": "contradicted"}, version=0
        )
    assert stale.value.current.support == "supported" and stale.value.current.version == 1
    assert ClaimLabel.objects.get(claim=claim).support == "supported"
    # a script that sends no version is not checked (and moves the version on)
    label, _ = save_claim_label(assignment=alice_task, claim=claim, data={"note": "x"})
    assert label.version == 2 and label.support == "supported"


@pytest.mark.django_db
def test_an_answer_draft_from_an_older_version_is_refused_and_writes_nothing(alice_task):
    saved, _ = save_answer_label(assignment=alice_task, data={"relevance": 2}, version=0)
    assert saved.draft_version == 1
    with pytest.raises(StaleDraft) as stale:
        save_answer_label(assignment=alice_task, data={"relevance": 0}, version=0)
    assert stale.value.current.relevance == 2
    alice_task.refresh_from_db()
    assert alice_task.relevance == 2 and alice_task.draft_version == 1


def _touched(assignment: Assignment, seconds_ago: float) -> None:
    Assignment.objects.filter(pk=assignment.pk).update(
        touched_at=timezone.now() - timedelta(seconds=seconds_ago)
    )


@pytest.mark.django_db
def test_a_claim_draft_counts_the_time_since_the_last_touch_up_to_the_idle_cap(alice_task):
    claim = alice_task.answer.claims.get(ordinal=0)
    _touched(alice_task, 42)
    read = Assignment.objects.get(pk=alice_task.pk)
    label, _ = save_claim_label(assignment=read, claim=claim, data={"support": "supported"})
    stored = Assignment.objects.get(pk=alice_task.pk)
    assert stored.seconds_spent == label.assignment.seconds_spent == 42
    assert stored.touched_at == label.assignment.touched_at > read.touched_at
    # a long pause counts as the cap, not as the hours it lasted
    _touched(alice_task, 3 * 3600)
    read = Assignment.objects.get(pk=alice_task.pk)
    save_claim_label(assignment=read, claim=claim, data={"support": "contradicted"})
    assert Assignment.objects.get(pk=alice_task.pk).seconds_spent == 42 + IDLE_CAP_SECONDS


@pytest.mark.django_db
def test_a_claim_draft_from_a_row_that_moved_since_it_was_read_counts_from_the_stored_row(
    alice_task,
):
    """The request read the assignment, then another tab saved: the save's time is counted
    from what is stored (the other tab's touch), never from the older read -- no time is
    counted twice and the other tab's is not lost."""
    claim, other = alice_task.answer.claims.order_by("ordinal")[:2]
    _touched(alice_task, 100)
    read = Assignment.objects.get(pk=alice_task.pk)  # this request's read
    # the other tab saved 10 s ago, and has counted 60 s so far
    Assignment.objects.filter(pk=alice_task.pk).update(
        touched_at=timezone.now() - timedelta(seconds=10), seconds_spent=60
    )
    label, _ = save_claim_label(assignment=read, claim=claim, data={"support": "supported"})
    stored = Assignment.objects.get(pk=alice_task.pk)
    # 60 + 10, not the read's 0 + 100
    assert stored.seconds_spent == label.assignment.seconds_spent == 70
    assert label.version == 1
    # and what the request read is left as read
    assert read.seconds_spent == 0
    assert save_claim_label(assignment=stored, claim=other, data={"note": "x"})[0].version == 1


@pytest.mark.django_db
def test_a_label_read_with_the_request_is_written_as_read_while_the_task_is_unchanged(
    alice_task,
):
    """The page's save reads the label with its claim, after the assignment: when the
    assignment is still as read, nothing can have changed the label since, and it is
    written without being read again."""
    claim = alice_task.answer.claims.get(ordinal=0)
    save_claim_label(assignment=alice_task, claim=claim, data={"note": "first"})
    read = Assignment.objects.get(pk=alice_task.pk)
    stored = ClaimLabel.objects.get(assignment=alice_task, claim=claim)
    with CaptureQueriesContext(connection) as captured:
        label, _ = save_claim_label(
            assignment=read, claim=claim, data={"support": "supported"}, stored=stored, version=1
        )
    # the label's write, and no read of it
    on_labels = [q["sql"][:29] for q in captured if '"annotate_claimlabel"' in q["sql"]]
    assert on_labels == ['UPDATE "annotate_claimlabel" '], on_labels
    assert (label.version, label.note, label.support) == (2, "first", "supported")
    again = ClaimLabel.objects.get(pk=stored.pk)
    assert (again.version, again.note, again.support) == (2, "first", "supported")


@pytest.mark.django_db
def test_a_label_read_before_another_tab_saved_is_read_again_not_written_back(alice_task):
    """The request read the assignment and the label, then another tab saved the same claim:
    the assignment has moved, so the label is read again under the lock. The other tab's
    note is kept (a blind write of the older label would put the old note back), and the
    version counts both saves."""
    claim = alice_task.answer.claims.get(ordinal=0)
    save_claim_label(assignment=alice_task, claim=claim, data={"note": "first"})
    read = Assignment.objects.get(pk=alice_task.pk)  # this request's reads
    stale = ClaimLabel.objects.get(assignment=alice_task, claim=claim)
    other_tab = Assignment.objects.get(pk=alice_task.pk)
    save_claim_label(assignment=other_tab, claim=claim, data={"note": "the other tab's"})
    label, _ = save_claim_label(
        assignment=read, claim=claim, data={"support": "supported"}, stored=stale
    )
    again = ClaimLabel.objects.get(pk=stale.pk)
    assert (again.version, again.note, again.support) == (3, "the other tab's", "supported")
    # with the version it was made from, the same save is refused as stale, showing the newer
    with pytest.raises(StaleDraft) as refused:
        save_claim_label(assignment=read, claim=claim, data={"note": "x"}, stored=stale, version=1)
    assert refused.value.current.version == 3


@pytest.mark.django_db
def test_a_claim_draft_on_a_task_submitted_or_released_since_it_was_read_is_refused(
    alice_task,
):
    claim = alice_task.answer.claims.get(ordinal=0)
    read = Assignment.objects.get(pk=alice_task.pk)
    for status, message in (("submitted", "reopen it"), ("released", "no longer be edited")):
        Assignment.objects.filter(pk=alice_task.pk).update(status=status)
        with pytest.raises(ServiceError, match=message):
            save_claim_label(assignment=read, claim=claim, data={"support": "supported"})
        assert not ClaimLabel.objects.filter(assignment=alice_task).exists()
        assert Assignment.objects.get(pk=alice_task.pk).touched_at == read.touched_at


@pytest.mark.django_db
def test_a_stale_claim_draft_counts_no_time_and_leaves_the_read_row_as_read(alice_task):
    claim = alice_task.answer.claims.get(ordinal=0)
    save_claim_label(assignment=alice_task, claim=claim, data={"support": "supported"})
    _touched(alice_task, 30)
    read = Assignment.objects.get(pk=alice_task.pk)
    with pytest.raises(StaleDraft):
        save_claim_label(assignment=read, claim=claim, data={"note": "x"}, version=0)
    stored = Assignment.objects.get(pk=alice_task.pk)
    assert (stored.touched_at, stored.seconds_spent) == (read.touched_at, read.seconds_spent)
    assert read.touched_at < timezone.now() - timedelta(seconds=29)


# --- The page -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_stale_tab_gets_409_with_the_newer_claim_label(client, alice_task, reviewer_a):
    client.login(username=reviewer_a.username, password=PASSWORD)
    save = url(alice_task, "save_claim", index=0)
    first = client.post(save, {"support": "supported", "version": "0"}, headers=HX)
    assert first.status_code == 200 and data_label(first.content.decode())["v"] == 1
    # the second tab still holds version 0
    stale = client.post(save, {"support": "contradicted", "version": "0"}, headers=HX)
    assert stale.status_code == 409
    reply = stale.content.decode()
    assert "changed in another tab" in reply
    shown = data_label(reply)
    assert shown["support"] == "supported" and shown["v"] == 1  # the newer value, to show
    assert ClaimLabel.objects.get(assignment=alice_task).support == "supported"


@pytest.mark.django_db
def test_a_stale_form_without_the_script_gets_the_page_with_the_newer_label(
    client, alice_task, reviewer_a
):
    client.login(username=reviewer_a.username, password=PASSWORD)
    save = url(alice_task, "save_claim", index=0)
    assert client.post(save, {"support": "supported", "version": "0"}).status_code == 302
    stale = client.post(save, {"support": "insufficient_evidence", "version": "0"})
    assert stale.status_code == 409
    page = stale.content.decode()
    assert "changed in another tab" in page
    assert re.search(r'value="supported"[^>]*checked', page)
    assert ClaimLabel.objects.get(assignment=alice_task).support == "supported"


@pytest.mark.django_db
def test_a_stale_answer_form_gets_409_with_the_newer_answer_label(client, alice_task, reviewer_a):
    client.login(username=reviewer_a.username, password=PASSWORD)
    save = url(alice_task, "save_answer")
    assert client.post(save, {"relevance": "2", "version": "0"}, headers=HX).status_code == 200
    stale = client.post(save, {"relevance": "0", "version": "0"}, headers=HX)
    assert stale.status_code == 409
    reply = stale.content.decode()
    assert 'id="answer-form"' in reply and "changed in another tab" in reply
    assert re.search(r'name="relevance" value="2" checked', reply)
    alice_task.refresh_from_db()
    assert alice_task.relevance == 2


# --- The API ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_api_refuses_a_stale_draft_and_old_clients_need_no_version(alice_task, reviewer_a):
    # a task with claims (the queue's "next" could be an answer without any)
    api = token_client(reviewer_a)
    number = alice_task.answer.task_number
    task = api.get(f"{API}/projects/small/tasks/{number}/").json()
    claim_url = f"{API}/projects/small/tasks/{number}/claims/0/"
    assert task["claims"][0]["label"] is None
    first = api.patch(claim_url, {"support": "supported", "version": 0}, format="json")
    assert first.status_code == 200 and first.json()["label"]["version"] == 1
    stale = api.patch(claim_url, {"support": "contradicted", "version": 0}, format="json")
    assert stale.status_code == 409
    body = stale.json()
    assert body["label"]["support"] == "supported" and body["label"]["version"] == 1
    assert "another tab" in body["detail"]
    # a script written before versions existed still saves
    old = api.patch(claim_url, {"note": "from an old script"}, format="json")
    assert old.status_code == 200 and old.json()["label"]["version"] == 2

    answer_url = f"{API}/projects/small/tasks/{number}/answer/"
    assert api.patch(answer_url, {"relevance": 1, "version": 0}, format="json").status_code == 200
    stale = api.patch(answer_url, {"relevance": 2, "version": 0}, format="json")
    assert stale.status_code == 409 and stale.json()["label"]["relevance"] == 1
    assert api.get(f"{API}/projects/small/tasks/{number}/").json()["answer"]["label"] == {
        **stale.json()["label"]
    }


# --- Blinding -----------------------------------------------------------------------------


def _normalised(page: str) -> str:
    """The page less what changes on every render (the CSRF tokens)."""
    page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", page)
    return re.sub(r'"X-CSRFToken": "[^"]*"', "", page)


@pytest.mark.django_db
def test_nothing_on_my_screen_moves_when_my_co_reviewer_acts_on_the_same_answer(
    client, opened, reviewer_a, reviewer_b
):
    answer = Answer.objects.get(project=opened, answer_id="a2-deadline/baseline")
    mine = Assignment.objects.create(project=opened, answer=answer, reviewer=reviewer_a)
    save_claim_label(assignment=mine, claim=answer.claims.get(ordinal=0), data={"note": "mine"})
    client.login(username=reviewer_a.username, password=PASSWORD)
    api = token_client(reviewer_a)
    number = answer.task_number

    def what_i_see() -> tuple:
        pages = [
            client.get(url(mine)).content.decode(),
            client.get(reverse("project", args=[opened.slug])).content.decode(),
            client.get(reverse("my_tasks", args=[opened.slug])).content.decode(),
        ]
        task = api.get(f"{API}/projects/small/tasks/{number}/").json()
        return tuple(_normalised(p) for p in pages), task

    before = what_i_see()
    theirs = Assignment.objects.create(project=opened, answer=answer, reviewer=reviewer_b)
    assert what_i_see() == before, "the co-reviewer taking the answer showed"
    label_everything(theirs)
    assert what_i_see() == before, "the co-reviewer's drafts showed"
    assert not submit_labels(assignment=theirs)
    assert what_i_see() == before, "the co-reviewer's submission showed"
    reopen_task(assignment=theirs)
    assert what_i_see() == before, "the co-reviewer reopening showed"


@pytest.mark.django_db
def test_a_reopen_is_answered_the_same_whether_or_not_the_co_reviewer_submitted(
    opened, reviewer_a, reviewer_b, lead
):
    """Within the undo window a reopen succeeds, also after the co-reviewer submitted (a lead
    cannot open the answer meanwhile); after it, it is refused in the same words either way,
    and only then does the answer open for adjudication."""
    answers = list(Answer.objects.filter(project=opened).exclude(claims=None)[:2])
    outcomes = []
    for answer, co_reviewer_submits in zip(answers, (True, False), strict=True):
        mine = Assignment.objects.create(project=opened, answer=answer, reviewer=reviewer_a)
        label_everything(mine)
        assert not submit_labels(assignment=mine)
        if co_reviewer_submits:
            theirs = Assignment.objects.create(project=opened, answer=answer, reviewer=reviewer_b)
            label_everything(theirs)
            assert not submit_labels(assignment=theirs)
            with pytest.raises(StillUndoable):
                start_adjudication(answer=answer, lead=lead)
        assert reopen_task(assignment=mine).status == Assignment.Status.IN_PROGRESS
        assert not submit_labels(assignment=mine)
        closed = timezone.now() - timedelta(seconds=1)
        Assignment.objects.filter(answer=answer).update(undo_until=closed)
        if co_reviewer_submits:
            assert start_adjudication(answer=answer, lead=lead) is not None
        with pytest.raises(ServiceError) as refused:
            reopen_task(assignment=mine)
        outcomes.append(str(refused.value))
    assert outcomes[0] == outcomes[1]


@pytest.mark.django_db
def test_a_claim_index_that_is_not_plain_digits_is_ignored_not_a_500(
    client, alice_task, reviewer_a
):
    client.login(username=reviewer_a.username, password=PASSWORD)
    assert client.get(url(alice_task) + "?claim=²").status_code == 200
    assert client.get(url(alice_task) + "?claim=" + "9" * 5000).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("version", ["abc", "²", "9" * 5000, "-1", "1.5"])
def test_a_draft_whose_version_is_not_a_number_is_refused_as_the_api_refuses_it(
    client, alice_task, reviewer_a, version
):
    """Saved unchecked, it would overwrite whatever another tab saved: the API answers 400,
    and so does the page, naming the field, and writes nothing."""
    client.login(username=reviewer_a.username, password=PASSWORD)
    claim = client.post(
        url(alice_task, "save_claim", index=0), {"support": "supported", "version": version}
    )
    answer = client.post(url(alice_task, "save_answer"), {"relevance": "2", "version": version})
    for reply in (claim, answer):
        assert reply.status_code == 400
        assert reply.content.decode().startswith("version: "), reply.content
    assert not ClaimLabel.objects.filter(assignment=alice_task).exists()
    alice_task.refresh_from_db()
    assert alice_task.relevance is None and alice_task.draft_version == 0
    number = alice_task.answer.task_number
    api = token_client(reviewer_a).patch(
        f"{API}/projects/small/tasks/{number}/claims/0/",
        {"support": "supported", "version": version},
        format="json",
    )
    assert api.status_code == 400 and list(api.json()) == ["claims.0.version"]


@pytest.mark.django_db
def test_the_undo_window_reads_in_whole_minutes(client, alice_task, reviewer_a, settings):
    settings.CLAIMDESK_REOPEN_MINUTES = 30.0  # read with float() from the environment
    client.login(username=reviewer_a.username, password=PASSWORD)
    slug = alice_task.project.slug
    for page in (reverse("my_tasks", args=[slug]), reverse("project", args=[slug])):
        html = client.get(page).content.decode()
        assert "30 minutes" in html and "30.0" not in html, page
