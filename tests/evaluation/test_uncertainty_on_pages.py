"""The lead's pages show how sure each number is: intervals on the evaluation charts, a kappa
that cannot be read says why (also when only one reviewer used a single label), and the judge's
calibration has a chart with intervals on the judge's own figures."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Claim, Role
from annotate.projects.opening import open_labelling
from annotate.projects.services import set_label_schema
from annotate.schema import LabelSchema
from evaluation.judges.runs import import_judge_run
from tests.conftest import FIXTURES, PASSWORD, import_fixture
from tests.evaluation.test_reports import build_stages_project

pytestmark = pytest.mark.django_db


def as_lead(client, lead):
    client.login(username=lead.username, password=PASSWORD)
    return client


def one_sided_project(lead):
    """The small bundle, support only: alice calls every claim supported, bob does not."""
    project = import_fixture("small.jsonl", "one-sided")
    set_label_schema(project=project, schema=LabelSchema("three_way", (), ()))
    for name in ("alice", "bob"):
        add_member(project=project, username=name, role=Role.REVIEWER)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    project = open_labelling(project=project)
    claims = Claim.objects.filter(answer__project=project).order_by("answer__answer_id", "ordinal")
    by_answer: dict[str, list[int]] = {}
    for claim in claims.select_related("answer"):
        by_answer.setdefault(claim.answer.answer_id, []).append(claim.ordinal)
    mixed = ["supported", "contradicted", "insufficient_evidence"]
    for reviewer in ("alice", "bob"):  # alice submits first: she is reviewer A everywhere
        lines = []
        for i, (answer_id, ordinals) in enumerate(sorted(by_answer.items())):
            lines.append(
                json.dumps(
                    {
                        "answer_id": answer_id,
                        "reviewer": reviewer,
                        "claims": [
                            {
                                "index": o,
                                "support": "supported"
                                if reviewer == "alice"
                                else mixed[(i + o) % 3],
                            }
                            for o in ordinals
                        ],
                    }
                )
            )
        import_labels(lines=lines, project=project)
    return project


def test_a_kappa_made_zero_by_one_reviewers_single_label_reads_undefined_with_the_reason(
    client, lead, reviewer_a, reviewer_b
):
    project = one_sided_project(lead)
    client = as_lead(client, lead)
    url = reverse("agreement", kwargs={"slug": project.slug})
    report = json.loads(client.get(url + "?format=json").content)
    support = report["slices"]["all"]["support"]
    assert support["kappa"] == 0.0 and support["ci95"] == [0.0, 0.0]  # the numbers stay
    html = client.get(url).content.decode()
    assert "undefined — reviewer A used one label only (supported)" in html
    assert "0.00 [0.00, 0.00]" not in html
    assert "reported as 0.00" in html  # the number is still there, read as what it is
    assert 'role="img"' in html and "Cohen&#x27;s kappa with 95% intervals" in html


def test_every_rate_chart_of_the_evaluation_page_draws_intervals_and_marks_small_n(
    client, lead, reviewer_a, reviewer_b
):
    project = build_stages_project()
    add_member(project=project, username=lead.username, role=Role.LEAD)
    html = as_lead(client, lead).get(reverse("evaluation:report", args=[project.slug]))
    html = html.content.decode()
    assert "95% interval [" in html  # in each defined bar's description
    assert "small n" in html and "url(#chart-" in html  # six cases: every bar is small
    assert "…" not in html.split("<svg", 1)[1]  # no name cut short in a chart


def test_the_judge_run_page_charts_the_judge_against_the_human_ceiling(client, lead):
    project = import_fixture("demo.jsonl", "demo")
    for name in ("alice", "bob"):
        add_member(project=project, username=name, role=Role.REVIEWER)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    project = open_labelling(project=project)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        import_labels(lines=stream, project=project)
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        run = import_judge_run(lines=stream, project=project, user=lead).run
    client = as_lead(client, lead)
    report = json.loads(client.get(reverse("judge_run_json", args=[project.slug, run.pk])).content)
    low, high = report["kappa_ci95"]
    assert low <= report["kappa"] <= high
    assert report["binary"]["kappa_ci95"][0] <= report["binary"]["kappa"]
    html = client.get(reverse("judge_run", args=[project.slug, run.pk])).content.decode()
    assert 'id="calibration-charts"' in html
    assert "Cohen&#x27;s kappa: the judge against the human ceiling" in html
    assert "Reviewers A vs B (the ceiling)" in html and "Judge vs gold (three-way)" in html
    assert "Rates with 95% Wilson intervals" in html and "TPR: unsupported caught" in html
    assert "Confusion: rows gold, columns the judge" in html
