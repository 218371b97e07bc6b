"""The adjudication screen and queue as a lead uses them: explicit choices (nothing pre-chosen,
no 'keep' on an undecided field), a rationale per claim and per answer that the gold export
keeps field by field, and a queue with the question, fields in words, slice and field filters
and pages."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from annotate.adjudication.queue import adjudication_queue
from annotate.adjudication.services import DecisionInput, adjudicate
from annotate.gold import summary
from annotate.gold.exports import gold_rows
from annotate.gold.pairs import AGREED, PENDING, pairs_for_project
from annotate.gold.summary import doubly_labelled
from annotate.models import Answer, Decision, Project
from tests.conftest import PASSWORD, labelled_demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db, reviewer_a, reviewer_b, lead, outsider) -> Project:
    return labelled_demo(leads=[lead.username])


def pending_claims(project, answer_pk):
    _, claim_pairs = pairs_for_project(project, answer_ids=[answer_pk])
    return [p for p in claim_pairs if p.source.get("support") == PENDING]


def agreed_claim(project):
    """A pair whose support both reviewers agree on, in an answer that waits for a lead."""
    queued = {d.answer_pk for d in adjudication_queue(project)}
    _, claim_pairs = pairs_for_project(project)
    return next(p for p in claim_pairs if p.answer_id in queued and p.source["support"] == AGREED)


def screen_url(project, number):
    return reverse("adjudicate", kwargs={"slug": project.slug, "number": number})


def login(client, user):
    client.login(username=user.username, password=PASSWORD)
    return client


# --- Choices -----------------------------------------------------------------------------------


def test_an_undecided_field_offers_a_b_and_other_with_nothing_chosen(client, demo, lead):
    item = adjudication_queue(demo)[0]
    pair = pending_claims(demo, item.answer_pk)[0]
    page = login(client, lead).get(screen_url(demo, item.task_number)).content.decode()
    key = f"f-{pair.ordinal}-support"
    radios = re.findall(rf'<input type="radio" name="{key}" value="(\w+)"([^>]*)>', page)
    assert [value for value, _ in radios] == ["a", "b", "other"]  # no "keep": nothing to keep
    assert not any("checked" in rest for _, rest in radios)
    select = re.search(rf'<select name="o-{pair.ordinal}-support"[^>]*>(.*?)</select>', page, re.S)
    options = re.findall(r"<option ([^>]*)>([^<]*)</option>", select.group(1))
    assert options[0] == ('value=""', "choose…")
    assert not any("selected" in attrs for attrs, _ in options)


def test_a_decided_field_says_what_keep_keeps_and_keeps_it_by_default(client, demo, lead):
    pair = agreed_claim(demo)
    number = Answer.objects.get(pk=pair.answer_id).task_number
    page = login(client, lead).get(screen_url(demo, number)).content.decode()
    key = f"f-{pair.ordinal}-support"
    keep = re.search(rf'name="{key}" value="keep" checked><span>(.*?)</span>', page)
    assert keep and keep.group(1) == f"keep “{pair.gold['support'].replace('_', ' ')}”"


def test_other_without_a_value_is_an_error_in_words_and_saves_nothing(client, demo, lead):
    item = adjudication_queue(demo)[0]
    pair = pending_claims(demo, item.answer_pk)[0]
    url = screen_url(demo, item.task_number)
    client = login(client, lead)
    client.get(url)
    response = client.post(
        url,
        {"version": "0", f"f-{pair.ordinal}-support": "other", f"r-{pair.ordinal}": "because"},
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert f"Choose the other value of support for claim {pair.ordinal + 1}" in page
    assert "because" in page  # what the lead wrote stays
    assert not Decision.objects.exists()


# --- Rationales --------------------------------------------------------------------------------


OTHER_SUPPORT = {
    "supported": "contradicted",
    "contradicted": "supported",
    "insufficient_evidence": "supported",
}


def two_claims(project):
    """An answer in the queue with two claims: one in dispute, chosen as reviewer A has it,
    and one more, given a support other than its gold (an override): [(pair, choice, value)]."""
    for item in adjudication_queue(project):
        _, claim_pairs = pairs_for_project(project, answer_ids=[item.answer_pk])
        disputed = [p for p in claim_pairs if p.source["support"] == PENDING]
        others = [p for p in claim_pairs if p.source["support"] == AGREED]
        if disputed and others:
            first, second = disputed[0], others[0]
            return item, [
                (first, "a", first.a["support"]),
                (second, "other", OTHER_SUPPORT[second.gold["support"]]),
            ]
    pytest.fail("the demo has no queued answer with a disputed and an agreed claim")


def choose(data, pair, choice, value):
    data[f"f-{pair.ordinal}-support"] = choice
    if choice == "other":
        data[f"o-{pair.ordinal}-support"] = value


def test_each_claim_keeps_its_own_rationale_and_the_gold_export_says_which(client, demo, lead):
    item, chosen = two_claims(demo)
    url = screen_url(demo, item.task_number)
    client = login(client, lead)
    page = client.get(url).content.decode()
    for pair, _, _ in chosen:
        assert f'name="r-{pair.ordinal}"' in page
    assert 'name="r-answer"' in page
    data = {"version": "0"}
    for pair, choice, value in chosen:
        choose(data, pair, choice, value)
        data[f"r-{pair.ordinal}"] = f"reason for claim {pair.ordinal + 1}"
    assert client.post(url, data).status_code == 302
    stored = {d.claim.ordinal: d.rationale for d in Decision.objects.select_related("claim")}
    assert stored == {p.ordinal: f"reason for claim {p.ordinal + 1}" for p, _, _ in chosen}
    exported = {
        row["claim_index"]: row
        for row in gold_rows(demo)
        if row["item"] == "claim"
        and row["answer_id"] == Answer.objects.get(pk=item.answer_pk).answer_id
    }
    for pair, _, value in chosen:
        row = exported[pair.ordinal]
        assert row["gold"]["support"] == value
        assert row["rationale"]["support"] == f"reason for claim {pair.ordinal + 1}"
        assert row["rationale"]["support_binary"] == f"reason for claim {pair.ordinal + 1}"
    # The box starts with the claim's latest rationale when the lead comes back.
    again = client.get(url).content.decode()
    for pair, _, _ in chosen:
        assert f"reason for claim {pair.ordinal + 1}</textarea>" in again


def test_a_decision_without_any_rationale_is_saved_the_rationale_being_optional(client, demo, lead):
    item, chosen = two_claims(demo)
    url = screen_url(demo, item.task_number)
    client = login(client, lead)
    client.get(url)
    (first, *first_choice), (second, *second_choice) = chosen
    data = {"version": "0", f"r-{first.ordinal}": "explained"}
    choose(data, first, *first_choice)
    choose(data, second, *second_choice)
    response = client.post(url, data)
    assert response.status_code == 302
    assert dict(Decision.objects.values_list("claim_id", "rationale")) == {
        first.claim_id: "explained",
        second.claim_id: "",
    }
    page = client.get(response["Location"]).content.decode()
    assert "2 decisions saved" in page and "decision(s)" not in page


def test_the_service_stores_each_decisions_rationale_or_else_the_shared_one(demo, lead):
    item, chosen = two_claims(demo)
    answer = Answer.objects.get(pk=item.answer_pk)
    claims = {c.pk: c for c in answer.claims.all()}
    (first, _, first_value), (second, _, second_value) = chosen
    adjudicate(
        answer=answer,
        lead=lead,
        version=0,
        decisions=[
            DecisionInput(claims[first.claim_id], "support", first_value, "own words"),
            DecisionInput(claims[second.claim_id], "support", second_value),
        ],
        rationale="shared",
    )
    assert dict(Decision.objects.values_list("claim_id", "rationale")) == {
        first.claim_id: "own words",
        second.claim_id: "shared",
    }
    adjudicate(  # neither its own nor a shared one: optional, stored empty
        answer=answer,
        lead=lead,
        version=1,
        decisions=[DecisionInput(claims[first.claim_id], "support", "supported")],
    )
    assert Decision.objects.latest("pk").rationale == ""


def test_the_api_takes_a_rationale_per_decision(client, demo, lead):
    item, chosen = two_claims(demo)
    url = f"/api/v1/projects/{demo.slug}/adjudication/{item.task_number}/"
    login(client, lead)
    body = {
        "version": 0,
        "decisions": [
            {"claim": p.ordinal, "field": "support", "value": v, "rationale": f"api {p.ordinal}"}
            for p, _, v in chosen
        ],
    }
    response = client.post(url, json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    assert sorted(Decision.objects.values_list("rationale", flat=True)) == sorted(
        f"api {p.ordinal}" for p, _, _ in chosen
    )
    body["decisions"][0]["rationale"] = ""
    body["version"] = 1
    body["decisions"] = body["decisions"][:1]
    saved = client.post(url, json.dumps(body), content_type="application/json")
    assert saved.status_code == 200, saved.content  # no rationale at all: optional
    assert Decision.objects.latest("pk").rationale == ""


# --- The queue ---------------------------------------------------------------------------------


def queue_url(project, **query):
    url = reverse("adjudication_queue", kwargs={"slug": project.slug})
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def test_the_queue_shows_the_question_and_fields_in_words(client, demo, lead):
    page = login(client, lead).get(queue_url(demo)).content.decode()
    first = adjudication_queue(demo)[0]
    question = first.question
    assert question[:60] in page
    assert "requires_evidence" not in page.split("<tbody>")[1]
    assert "failure_labels" not in page.split("<tbody>")[1]
    assert "baseline" not in page and "verifier" not in page  # blind to the variant here too


@pytest.mark.parametrize("slice_", ["answerable", "unanswerable", "adversarial"])
def test_the_slice_filter_keeps_the_slices_answers_by_get_and_by_htmx(client, demo, lead, slice_):
    client = login(client, lead)
    expected = {d.task_number for d in adjudication_queue(demo, slice=slice_)}
    plain = client.get(queue_url(demo, slice=slice_)).content.decode()
    shown = {int(n) for n in re.findall(r"/adjudicate/(\d+)/", plain)}
    assert shown == expected
    partial = client.get(
        queue_url(demo, slice=slice_), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="queue"
    ).content.decode()
    assert partial.startswith('\n<div id="queue">') or partial.lstrip().startswith(
        '<div id="queue">'
    )
    assert "<html" not in partial
    assert {int(n) for n in re.findall(r"/adjudicate/(\d+)/", partial)} == expected


def test_the_field_filter_shows_only_answers_disputing_that_field(client, demo, lead):
    client = login(client, lead)
    every = adjudication_queue(demo)
    relevance = {d.task_number for d in every if "relevance" in d.fields}
    assert relevance and relevance != {d.task_number for d in every}
    page = client.get(queue_url(demo, field="relevance")).content.decode()
    assert {int(n) for n in re.findall(r"/adjudicate/(\d+)/", page)} == relevance
    assert '<option value="requires_evidence">needs evidence</option>' in page
    nothing = client.get(queue_url(demo, slice="nonsense", field="nonsense"))
    assert nothing.status_code == 200  # an unknown filter filters nothing


def test_the_queue_is_paginated_with_links_that_keep_the_filters(client, demo, lead, monkeypatch):
    from annotate.adjudication import views

    monkeypatch.setattr(views, "QUEUE_PAGE", 2)
    client = login(client, lead)
    page = client.get(queue_url(demo, slice="answerable")).content.decode()
    assert "page 1 of" in page
    assert 'href="?slice=answerable&amp;page=2"' in page
    second = client.get(queue_url(demo, slice="answerable", page=2)).content.decode()
    assert 'rel="prev"' in second and "3–4 of" in second


def test_the_queue_page_has_a_fixed_number_of_queries(
    client, demo, lead, django_assert_max_num_queries
):
    from annotate.common import computed

    client = login(client, lead)
    client.get(queue_url(demo))
    computed.clear()
    # computed: session, user, role, data version (2), the answers' label states (2), their
    # cases and pairs (4 a chunk: one chunk here) and the queue's answers (1)
    with django_assert_max_num_queries(12):
        assert client.get(queue_url(demo, slice="answerable")).status_code == 200
    # kept: every further page and filter reads only the data version, and the open flags
    # (one query, whatever their number: issue #34)
    with django_assert_max_num_queries(6):
        assert client.get(queue_url(demo, slice="answerable", page=2)).status_code == 200


@pytest.mark.parametrize("who", ["reviewer_a", "outsider"])
def test_only_the_lead_sees_the_queue(client, demo, request, who):
    person = request.getfixturevalue(who)
    assert login(client, person).get(queue_url(demo)).status_code == 404


def decide_everything(client, project, number):
    """Post 'a' for every field of the task still waiting for a decision."""
    from annotate.adjudication.selectors import adjudication_screen

    screen = adjudication_screen(project, number)
    rows = [*(f for c in screen.claims for f in c.fields), *screen.answer_fields]
    data = {f"f-{row.key}": "a" for row in rows if row.source == PENDING}
    data.update(version=str(screen.version), rationale="A has it.")
    client.get(screen_url(project, number))
    return client.post(screen_url(project, number), data)


def test_decisions_walk_the_queue_without_deriving_the_whole_project_each_time(
    client, demo, lead, monkeypatch
):
    """After a decision the lead goes on to the queue's next item. The queue is read once and
    carried in the session: deriving every pair of the project after each decision cost 2 s
    per decision at 10,000 answers (now 60-100 ms). Each candidate is checked alone, and one
    decided meanwhile (here by another lead) is passed over."""
    real = pairs_for_project
    whole = []

    def counted(project, *, answer_ids=None):
        if answer_ids is None or len(answer_ids) > 1:  # the queue's (in chunks), or all
            whole.append(project.pk)
        return real(project, answer_ids=answer_ids)

    monkeypatch.setattr(summary, "pairs_for_project", counted)
    numbers = [d.task_number for d in adjudication_queue(demo)]
    assert len(numbers) >= 4
    client = login(client, lead)
    whole.clear()
    client.get(reverse("adjudication_queue", kwargs={"slug": demo.slug}))
    assert len(whole) == 1  # the queue page derives it, and keeps it
    first = decide_everything(client, demo, numbers[0])
    assert first["Location"] == screen_url(demo, numbers[1])
    assert len(whole) == 1  # the decision carried the kept queue on: nothing derived again
    # another lead settles the next item meanwhile
    other = Client()
    other.force_login(lead)
    decide_everything(other, demo, numbers[1])
    whole.clear()
    second = decide_everything(client, demo, numbers[2])
    assert second["Location"] == screen_url(demo, numbers[3])  # numbers[1] passed over
    assert whole == []


def test_the_queue_derives_a_chunk_of_answers_at_a_time(demo, monkeypatch):
    """The whole project's pairs at once took a worker from 59 to 203 MB at 10,000 answers:
    the queue derives QUEUE_CHUNK answers at a time and keeps each answer's score only, and
    finds the same queue."""
    whole = [(d.answer_pk, d.score, d.fields) for d in adjudication_queue(demo)]
    real = pairs_for_project
    sizes = []

    def counted(project, *, answer_ids=None):
        sizes.append(None if answer_ids is None else len(answer_ids))
        return real(project, answer_ids=answer_ids)

    monkeypatch.setattr(summary, "pairs_for_project", counted)
    monkeypatch.setattr(summary, "QUEUE_CHUNK", 2)
    chunked = [(d.answer_pk, d.score, d.fields) for d in adjudication_queue(demo)]
    assert chunked == whole and len(whole) >= 4
    assert sizes and None not in sizes and max(sizes) == 2
    assert sum(sizes) == len(doubly_labelled(demo)) > len(sizes)
