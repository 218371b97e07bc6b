"""Issue #34: failure labels are shown in words ("Missing evidence"), never as identifiers
(`missing_evidence`), wherever a page shows them: the labelling screen and its shortcuts,
the adjudication screen, the evaluation report's table. Files, the API and CSV headers keep
the identifiers."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from annotate.adjudication.queue import adjudication_queue
from annotate.models import FAILURE_LABELS, Assignment
from tests.conftest import PASSWORD, labelled_demo

pytestmark = pytest.mark.django_db
WORDS = ["Missing evidence", "Unsupported claim", "Wrong citation", "False abstention"]


def text_of(page: str) -> str:
    """What a person reads: no tags, no attributes (a value="missing_evidence" is fine)."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return re.sub(r"<[^>]+>", " ", page)


def test_failure_labels_read_as_words_on_every_page_that_shows_them(client, lead):
    project = labelled_demo(leads=[lead.username], password=PASSWORD)
    slug = project.slug
    # the labelling screen, on a task in progress, with its shortcuts list
    mine = Assignment.objects.filter(project=project, reviewer__username="alice").first()
    Assignment.objects.filter(pk=mine.pk).update(status=Assignment.Status.IN_PROGRESS)
    client.login(username="alice", password=PASSWORD)
    task = text_of(
        client.get(reverse("task", args=[slug, mine.answer.task_number])).content.decode()
    )
    assert all(word in task for word in WORDS), task
    assert not [label for label in FAILURE_LABELS if label in task]
    client.logout()
    client.login(username=lead.username, password=PASSWORD)
    # the adjudication screen of a task whose reviewers differ on failure labels
    disputed = next(d for d in adjudication_queue(project) if "failure_labels" in d.fields)
    screen = client.get(reverse("adjudicate", args=[slug, disputed.task_number])).content.decode()
    screen = text_of(screen)
    assert any(word in screen for word in WORDS)
    assert not [label for label in FAILURE_LABELS if label in screen]
    # the evaluation report's failure-label table: its columns in words; its CSV keeps the ids
    report = client.get(f"/p/{slug}/evaluation/")
    assert report.status_code == 200
    body = text_of(report.content.decode())
    assert all(word in body for word in WORDS)
    # false_abstention is also a stage of the stage diagnosis, defined by name on the page
    assert not [label for label in FAILURE_LABELS[:3] if label in body]
