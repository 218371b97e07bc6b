"""Issue #34: the judges list shows each run's headline figures (n, kappa with its 95%
interval, accuracy) so that comparing runs needs no page per run. They are read from the
calibration already stored (annotate.common.computed), never computed by the list: a big
project's list does not compute every run's calibration in the request."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotate.common import computed as stored_reports
from annotate.gold.splits import DEFAULT_SPLIT
from evaluation.judges.runs import import_judge_run
from evaluation.models import JudgeRun
from evaluation.report_kinds import CALIBRATION
from tests.conftest import FIXTURES, PASSWORD, labelled_demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(lead):
    project = labelled_demo(leads=[lead.username])
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        import_judge_run(lines=stream, project=project, user=lead)
    return project


def judges_page(client, project) -> str:
    return client.get(reverse("judges", kwargs={"slug": project.slug})).content.decode()


def test_the_list_shows_the_stored_headline_and_never_computes_one(client, demo, lead, monkeypatch):
    client.login(username=lead.username, password=PASSWORD)
    run = JudgeRun.objects.get(project=demo)

    def computed(*args, **kwargs):
        raise AssertionError("the judges list computed a report")

    with monkeypatch.context() as patched:
        patched.setattr(stored_reports, "_compute", computed)
        page = judges_page(client, demo)
    assert "not computed yet: open the run" in page
    # the run's page computes and stores it (in this process, as tests run); the list reads it
    assert client.get(reverse("judge_run", args=[demo.slug, run.pk])).status_code == 200
    stored = stored_reports.read(demo, CALIBRATION, f"{run.pk}:{DEFAULT_SPLIT}").result
    assert stored["n"] > 0 and stored["kappa"] is not None and stored["kappa_ci95"]
    with monkeypatch.context() as patched:
        patched.setattr(stored_reports, "_compute", computed)
        page = judges_page(client, demo)
    low, high = stored["kappa_ci95"]
    assert f'data-label="n">{stored["n"]}</td>' in page
    assert f"{stored['kappa']:.2f}" in page and f"[{low:.2f}, {high:.2f}]" in page
    assert f"{round(stored['accuracy'] * 100)}%" in page
    assert "earlier labels" not in page


def test_the_list_reads_every_run_s_headline_in_one_query(client, demo, lead):
    """Two runs, then four: the same queries (the compare form appears from two runs on)."""
    client.login(username=lead.username, password=PASSWORD)

    def another(name):
        with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
            run = import_judge_run(lines=stream, project=demo, user=lead, name=name).run
        client.get(reverse("judge_run", args=[demo.slug, run.pk]))

    client.get(reverse("judge_run", args=[demo.slug, JudgeRun.objects.get(project=demo).pk]))
    another("second")
    judges_page(client, demo)
    with CaptureQueriesContext(connection) as two:
        judges_page(client, demo)
    another("third")
    another("fourth")
    judges_page(client, demo)
    with CaptureQueriesContext(connection) as four:
        page = judges_page(client, demo)
    assert page.count('muted small">[') == 4 and "not computed yet" not in page
    assert len(four) == len(two)
