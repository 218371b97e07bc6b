"""Issue #34: one back-link rule on every page (README, "The pages"): one level up, named by
the page it opens in that page's own words; never sideways."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from annotate.adjudication.queue import adjudication_queue
from annotate.models import Assignment
from evaluation.judges.runs import import_judge_run
from tests.conftest import FIXTURES, PASSWORD, labelled_demo

pytestmark = pytest.mark.django_db
BACK = re.compile(r'<a class="back-link" href="([^"]*)">([^<]*)</a>')


def back_link(client, url) -> tuple[str, str] | None:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    found = BACK.findall(response.content.decode())
    assert len(found) <= 1, (url, found)
    return (html.unescape(found[0][0]), html.unescape(found[0][1])) if found else None


def test_every_page_s_back_link_goes_one_level_up_named_as_that_page(client, lead):
    project = labelled_demo(leads=[lead.username], password=PASSWORD)
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        run = import_judge_run(lines=stream, project=project, user=lead).run
    slug = project.slug
    home, up = reverse("home"), "All projects"
    queue = reverse("adjudication_queue", args=[slug])
    judges = reverse("judges", args=[slug])
    number = adjudication_queue(project)[0].task_number
    client.login(username=lead.username, password=PASSWORD)
    for url, expected in [
        (reverse("project_setup", args=[slug]), (home, up)),
        (reverse("members", args=[slug]), (home, up)),
        (queue, (home, up)),
        (reverse("gold", args=[slug]), (home, up)),
        (judges, (home, up)),
        (reverse("adjudicate", args=[slug, number]), (queue, "Adjudication")),
        (reverse("judge_run", args=[slug, run.pk]), (judges, "Judges")),
        (f"{reverse('judge_compare', args=[slug])}?a={run.pk}&b={run.pk}", (judges, "Judges")),
    ]:
        assert back_link(client, url) == expected, url
    client.logout()
    client.login(username="alice", password=PASSWORD)
    mine = Assignment.objects.filter(project=project, reviewer__username="alice").first()
    task = reverse("task", args=[slug, mine.answer.task_number])
    project_page = (reverse("project", args=[slug]), project.name)
    for url, expected in [
        (reverse("project", args=[slug]), (home, up)),
        (task, project_page),
        (reverse("my_tasks", args=[slug]), project_page),
        (
            reverse("flag_task", args=[slug, mine.answer.task_number]),
            (task, f"Task {mine.answer.task_number}"),
        ),
    ]:
        assert back_link(client, url) == expected, url
