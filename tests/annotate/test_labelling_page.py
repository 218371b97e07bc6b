"""The labelling page as the server renders it: the page works without its script (a claim is
chosen by its link, its editor and the passages' controls post together), it shows only the
fields the project's label schema labels (with their keys), and the way back, the user's
preferences and the API are a click away."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotate.labelling.services import save_claim_label
from annotate.models import Answer, Assignment, ClaimLabel, Project
from annotate.projects.opening import open_labelling
from annotate.projects.services import set_label_schema
from annotate.schema import LabelSchema
from tests.conftest import PASSWORD


@pytest.fixture
def opened(team) -> Project:
    return open_labelling(project=team)


def task(project, reviewer, answer_id="a2-deadline/baseline") -> Assignment:
    answer = Answer.objects.get(project=project, answer_id=answer_id)
    return Assignment.objects.create(project=project, answer=answer, reviewer=reviewer)


def page_url(assignment, **query) -> str:
    url = reverse("task", args=[assignment.project.slug, assignment.answer.task_number])
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


@pytest.mark.django_db
def test_without_the_script_a_claim_is_chosen_by_its_link_and_saved_with_the_passages(
    client, opened, reviewer_a
):
    mine = task(opened, reviewer_a)
    second = mine.answer.claims.get(ordinal=1)
    cited = second.citations.get().cited_id
    client.login(username=reviewer_a.username, password=PASSWORD)
    page = client.get(page_url(mine)).content.decode()
    assert 'href="?claim=1"' in page  # every claim is a link to its editor
    assert 'data-claim="0" method="post"' in page  # the first unfinished claim is open
    page = client.get(page_url(mine, claim=1)).content.decode()
    assert f'action="/p/{opened.slug}/tasks/{mine.answer.task_number}/claims/1/"' in page
    # the passages' controls belong to that one editor
    assert f'name="evidence_ids" value="{cited}" form="claim-form"' in page
    assert f'name="citation:{cited}" value="supports" form="claim-form"' in page
    passage_text = mine.answer.retrieved.get(passage__passage_id=cited).passage.text
    save = reverse("save_claim", args=[opened.slug, mine.answer.task_number, 1])
    reply = client.post(
        save,
        {
            "support": "supported",
            "requires_evidence": "on",
            "evidence_ids": [cited],
            "evidence_quote": passage_text.split(".")[0],
            f"citation:{cited}": "supports",
            "version": "0",
        },
    )
    assert reply.status_code == 302 and reply["Location"].endswith("?claim=1")
    label = ClaimLabel.objects.get(assignment=mine, claim=second)
    assert label.evidence_ids == [cited] and label.citations == {cited: "supports"}
    page = client.get(reply["Location"]).content.decode()
    assert re.search(rf'value="{re.escape(cited)}" form="claim-form"[^>]*checked', page)
    assert "<mark" in page  # the quote is marked in its passage


@pytest.mark.django_db
def test_fields_the_schema_leaves_out_have_no_control_and_no_key(team, client, reviewer_a):
    project = set_label_schema(
        project=team,
        schema=LabelSchema.parse({"support": "binary", "claim_fields": [], "answer_fields": []}),
    )
    project = open_labelling(project=project)
    mine = task(project, reviewer_a)
    client.login(username=reviewer_a.username, password=PASSWORD)
    page = client.get(page_url(mine)).content.decode()
    for absent in (
        'name="severity"',
        'name="evidence_ids"',
        'name="evidence_quote"',
        'name="citation:',
        'name="relevance"',
        'name="failure_labels"',
        "cycles it",
        "toggle the current passage",
        "citation supports",
        "relevance 2",
    ):
        assert absent not in page, absent
    assert 'value="unsupported" data-key="2"' in page
    assert "supported · unsupported" in page  # the dialog lists the binary keys


@pytest.mark.django_db
def test_the_way_back_the_preferences_and_the_api_are_one_click_away(client, opened, reviewer_a):
    mine = task(opened, reviewer_a)
    save_claim_label(assignment=mine, claim=mine.answer.claims.first(), data={"note": "x"})
    client.login(username=reviewer_a.username, password=PASSWORD)
    page = client.get(page_url(mine)).content.decode()
    assert f'<a class="project-name" href="/p/{opened.slug}/">' in page
    assert f'href="/p/{opened.slug}/tasks/">Your tasks</a>' in page
    for link in ("/account/preferences/", "/account/token/", "/api/docs/"):
        assert f'href="{link}"' in page
    assert "Task " in page and " of " not in re.search(r"Task \d+[^<]*", page).group(0)

    assert 'data-shortcuts="on"' in page
    reply = client.post(reverse("preferences"), {})  # the box unticked: shortcuts off
    assert reply.status_code == 302
    assert 'data-shortcuts="off"' in client.get(page_url(mine)).content.decode()
    form = client.get(reverse("preferences")).content.decode()
    assert 'name="single_key_shortcuts"' in form and "checked" not in form


def test_controls_name_what_they_describe_and_act_on(client, opened, reviewer_a):
    """The preference's help is announced with its box (its id is the one Django's
    aria-describedby names); each passage's evidence box and citation verdict say which
    passage they are for, so a screen reader moving through them can tell them apart."""
    mine = task(opened, reviewer_a)
    client.login(username=reviewer_a.username, password=PASSWORD)
    form = client.get(reverse("preferences")).content.decode()
    described = re.search(r'aria-describedby="([^"]+)"', form).group(1)
    assert f'id="{described}"' in form
    page = client.get(page_url(mine)).content.decode()
    names = re.findall(r'Evidence <span class="visually-hidden">([^<]+)</span>', page)
    assert names and len(set(names)) == len(names)
