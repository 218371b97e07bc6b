"""The lead's report pages do not grow with the project (issue #12): a project ten times the
size gives pages of about the same size, with per-case tables a page at a time, filterable,
and the full tables as CSV; a page of a per-case table costs a fixed number of queries."""

from __future__ import annotations

import csv
import io
import re
from collections import Counter

import pytest
from django.urls import reverse

from annotate.common import computed
from tests.conftest import PASSWORD
from tests.evaluation.scale import build_scaled_project

pytestmark = pytest.mark.django_db

SMALL, LARGE = 50, 500
# How much bigger a page of the large project may be: a few more digits in counts and ids,
# one more page link -- never rows.
GROWTH_BYTES = 12_000
LIMIT_BYTES = 400_000


@pytest.fixture
def projects(reviewer_a, reviewer_b, lead):
    return {size: build_scaled_project(f"scale-{size}", size, lead=lead) for size in (SMALL, LARGE)}


@pytest.fixture
def large(reviewer_a, reviewer_b, lead):
    return build_scaled_project(f"scale-{LARGE}", LARGE, lead=lead)


def pages(project, run) -> dict[str, str]:
    slug = project.slug
    return {
        "evaluation": reverse("evaluation:report", args=[slug]) + "?a=baseline&b=hybrid",
        "agreement": reverse("agreement", args=[slug]),
        "adjudication queue": reverse("adjudication_queue", args=[slug]),
        "judge run": reverse("judge_run", args=[slug, run.pk]),
    }


def test_pages_weigh_the_same_for_ten_times_the_answers(client, projects, lead, monkeypatch):
    # Pages of ten rows, which the small project fills too: its pages then hold as many rows
    # as the large one's, and only what does not depend on rows may differ.
    from annotate.adjudication import views as adjudication_views
    from evaluation.judges import views as judge_views
    from evaluation.views import report as evaluation_views

    monkeypatch.setattr(adjudication_views, "QUEUE_PAGE", 10)
    monkeypatch.setattr(evaluation_views, "PER_PAGE", 10)
    monkeypatch.setattr(judge_views, "ITEMS_PER_PAGE", 10)
    client.login(username=lead.username, password=PASSWORD)
    sizes = {}
    for count, (project, run) in projects.items():
        for name, url in pages(project, run).items():
            response = client.get(url)
            assert response.status_code == 200, (name, count)
            sizes[name, count] = len(response.content)
    for name in pages(*projects[SMALL]):
        small, large = sizes[name, SMALL], sizes[name, LARGE]
        assert large - small < GROWTH_BYTES, f"{name}: {small} → {large} bytes"
        assert large < LIMIT_BYTES, f"{name}: {large} bytes"


def test_the_large_projects_pages_stay_small_at_the_usual_page_size(client, large, lead):
    client.login(username=lead.username, password=PASSWORD)
    for name, url in pages(*large).items():
        size = len(client.get(url).content)
        assert size < LIMIT_BYTES / 2, f"{name}: {size} bytes"


def test_the_diagnosis_is_paged_filtered_and_complete_in_the_csv(client, large, lead):
    project, _ = large
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("evaluation:report", args=[project.slug])
    page = client.get(url).content.decode()
    # up to the next table (the filters' own ids start with table-diagnosis-)
    table = re.split(r'id="table-(?!diagnosis-)', page.split('id="table-diagnosis"')[1])[0]
    assert table.count("<tr>") - 1 == 50  # a page of rows under the header
    assert "of 400 rows" in table  # answerable cases' answers, both variants
    rows = list(
        csv.DictReader(
            io.StringIO(
                b"".join(client.get(url + "?format=csv&table=diagnosis").streaming_content).decode()
            )
        )
    )
    assert len(rows) == 400
    counts = Counter((r["variant"], r["stage"]) for r in rows)
    (variant, stage), _ = counts.most_common(1)[0]
    hybrid_ok = [r for r in rows if (r["variant"], r["stage"]) == (variant, stage)]
    partial = client.get(
        url + f"?dv={variant}&ds={stage}",
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="table-diagnosis",
    ).content.decode()
    assert partial.lstrip().startswith('<div class="card flush report-table" id="table-diagnosis"')
    assert "<html" not in partial
    shown = re.findall(rf"<tr><td>{variant}</td>", partial)
    assert len(shown) == min(50, len(hybrid_ok))
    assert f"of {len(hybrid_ok)} rows" in partial or f">{len(hybrid_ok)} rows<" in partial


def test_a_cell_of_many_ids_shows_a_few_and_links_to_the_rest(client, large, lead):
    project, _ = large
    client.login(username=lead.username, password=PASSWORD)
    page = client.get(reverse("evaluation:report", args=[project.slug])).content.decode()
    stages = page.split('id="table-stages"')[1].split('id="table-diagnosis"')[0]
    more = re.findall(r'<a href="([^"]+)">and (\d+) more</a>', stages)
    assert more
    link, _ = more[0]
    assert "dv=" in link and "ds=" in link and link.endswith("#table-diagnosis")
    csv_body = b"".join(
        client.get(
            reverse("evaluation:report", args=[project.slug]) + "?format=csv&table=stages"
        ).streaming_content
    ).decode()
    longest = max(len(r["answer_ids"].split(";")) for r in csv.DictReader(io.StringIO(csv_body)))
    assert longest > 5  # the CSV keeps every id


def test_the_judge_pages_its_disagreements_and_filters_them(client, large, lead):
    project, run = large
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("judge_run", args=[project.slug, run.pk])
    full = client.get(reverse("judge_run_json", args=[project.slug, run.pk])).json()
    page = client.get(url).content.decode()
    section = page.split('id="disagreements-section"')[1].split("</section>")[0]
    assert section.count('<td class="cell-text">') == min(50, len(full["disagreements"]))
    wanted = [d for d in full["disagreements"] if d["judge"] == "contradicted"]
    partial = client.get(
        url + "?judge=contradicted", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="disagreements-section"
    ).content.decode()
    assert partial.lstrip().startswith("<section")
    assert partial.count('<td class="cell-text">') == min(50, len(wanted))
    body = b"".join(client.get(url + "?format=csv&table=disagreements").streaming_content).decode()
    assert len(list(csv.DictReader(io.StringIO(body)))) == len(full["disagreements"])
    problems = b"".join(client.get(url + "?format=csv&table=problems").streaming_content).decode()
    malformed = len(full["problems"]["malformed"])
    assert sum(1 for r in csv.DictReader(io.StringIO(problems)) if r["kind"] == "malformed") == (
        malformed
    )


def test_a_page_of_a_per_case_table_costs_the_same_queries_at_any_size(
    client, projects, lead, django_assert_max_num_queries
):
    client.login(username=lead.username, password=PASSWORD)
    for project, run in projects.values():
        computed.clear()
        url = reverse("evaluation:report", args=[project.slug])
        client.get(url)  # computes and stores the report
        # session, user, role; the data version (2), the stored report and comparison
        with django_assert_max_num_queries(7):
            client.get(url + "?dpage=3", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="table-diagnosis")
        judge = reverse("judge_run", args=[project.slug, run.pk])
        client.get(judge)
        # session, role, run; the data version (2) and the stored calibration (jobs.reports)
        with django_assert_max_num_queries(7):
            client.get(
                judge + "?dpage=2", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="disagreements-section"
            )
        queue = reverse("adjudication_queue", args=[project.slug])
        client.get(queue)
        with django_assert_max_num_queries(6):  # 5, and the open flags (#34): one query
            client.get(queue + "?page=2")
