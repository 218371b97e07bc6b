"""The evaluation report page: lead only, every section, CSV for every table, limits as GET
parameters, and a query count that does not grow with the number of answers."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from annotate.management.commands.load_demo import load as load_demo
from annotate.members.services import add_member
from annotate.models import Answer, Case, Role
from tests.conftest import PASSWORD
from tests.evaluation.test_reports import build_stages_project

pytestmark = pytest.mark.django_db

SECTIONS = ("Retrieval", "Generation", "Abstention", "Stage diagnosis", "Variants", "Latency")
TABLES = (
    "retrieval",
    "generation",
    "failure_labels",
    "abstention",
    "stages",
    "diagnosis",
    "variants",
    "comparison",
    "fusion",
    "transitions",
    "latency",
)


@pytest.fixture
def stages(reviewer_a, reviewer_b, lead):
    project = build_stages_project()
    add_member(project=project, username=lead.username, role=Role.LEAD)
    return project


def url(project, **query):
    base = reverse("evaluation:report", kwargs={"slug": project.slug})
    if not query:
        return base
    return base + "?" + "&".join(f"{k}={v}" for k, v in query.items())


def as_user(client, user):
    client.login(username=user.username, password=PASSWORD)
    return client


def read_csv(response) -> list[dict]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


def test_lead_sees_every_section_with_n_and_the_stated_gain(client, stages, lead):
    response = as_user(client, lead).get(url(stages))
    assert response.status_code == 200
    html = response.content.decode()
    for title in SECTIONS:
        assert f">{title}</h2>" in html
    assert "exponential gain" in html
    assert "n=6" in html  # eligible cases under each retrieval bar
    assert 'role="img"' in html and "<title" in html
    for table in TABLES:
        assert f"format=csv&amp;table={table}" in html
    # the stage table links answers to the lead's answer page
    assert "c-prompt/baseline</a>" in html
    assert "overall score" not in html.replace("no single overall score", "")


@pytest.mark.parametrize("who", ["reviewer_a", "outsider"])
def test_reviewers_and_outsiders_get_404(client, stages, who, request, outsider):
    response = as_user(client, request.getfixturevalue(who)).get(url(stages))
    assert response.status_code == 404


def test_anonymous_is_sent_to_log_in(client, stages):
    response = client.get(url(stages))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_stage_csv_lists_the_constructed_diagnosis(client, stages, lead):
    response = as_user(client, lead).get(url(stages, format="csv", table="stages"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "stages-stages.csv" in response["Content-Disposition"]
    rows = read_csv(response)
    baseline = {
        r["stage"]: r["answer_ids"]
        for r in rows
        if r["slice"] == "answerable" and r["variant"] == "baseline"
    }
    assert baseline["not_in_corpus"] == "c-index/baseline"
    assert baseline["not_in_prompt"] == "c-prompt/baseline"
    assert baseline["false_abstention"] == "c-abstain/baseline"


def test_retrieval_csv_keeps_full_precision_and_undefined_empty(client, stages, lead):
    rows = read_csv(as_user(client, lead).get(url(stages, format="csv", table="retrieval")))
    row = next(
        r
        for r in rows
        if (r["slice"], r["variant"], r["ranking"], r["k"]) == ("all", "baseline", "full", "3")
    )
    assert float(row["recall"]) == pytest.approx(5 / 6, abs=1e-12)
    unanswerable = next(r for r in rows if r["slice"] == "unanswerable")
    assert unanswerable["recall"] == "" and unanswerable["eligible"] == "0"


def test_unknown_csv_table_is_404(client, stages, lead):
    response = as_user(client, lead).get(url(stages, format="csv", table="nope"))
    assert response.status_code == 404


def test_limits_and_pair_come_from_get_parameters(client, stages, lead):
    client = as_user(client, lead)
    rows = read_csv(
        client.get(
            url(stages, format="csv", table="variants", latency_budget=1000, unsupported_limit=0.7)
        )
    )
    meets = {r["variant"]: r["meets_both"] for r in rows}
    assert meets == {"baseline": "true", "hybrid": "false"}
    transitions = read_csv(
        client.get(url(stages, format="csv", table="transitions", a="baseline", b="hybrid", k=3))
    )
    fixed = next(r for r in transitions if (r["metric"], r["transition"]) == ("recall", "fixed"))
    assert (fixed["cases"], fixed["case_ids"]) == ("1", "c-retrieval")
    html = client.get(url(stages, latency_budget="fast", unsupported_limit=2)).content.decode()
    assert "Enter a number at least 0." in html
    assert "Enter a number between 0 and 1." in html
    same = client.get(url(stages, a="hybrid", b="hybrid")).content.decode()
    assert "Choose a variant other than a: a comparison needs two." in same


def test_the_page_reads_without_labels(client, reviewer_a, lead):
    from tests.conftest import import_fixture

    project = import_fixture("stages.jsonl", "unlabelled")
    add_member(project=project, username=lead.username, role=Role.LEAD)
    response = as_user(client, lead).get(url(project))
    assert response.status_code == 200
    assert "generation metrics wait for labels" in response.content.decode()


def test_query_count_does_not_grow_with_the_answers(
    client, stages, lead, django_assert_max_num_queries
):
    from annotate.common import computed

    client = as_user(client, lead)
    client.get(url(stages))  # warm the session
    computed.clear()
    # stored by the first view: the session, the user, the role, the data version (2), the
    # stored report and the stored comparison of two variants (each without its result, kept
    # decoded in this process); the answers' and the variants' ids (kept from then on)
    with django_assert_max_num_queries(9):
        assert client.get(url(stages)).status_code == 200
    with django_assert_max_num_queries(7):
        assert client.get(url(stages)).status_code == 200
    demo = load_demo()  # 60 answers, 40 labelled, instead of 18
    add_member(project=demo, username=lead.username, role=Role.LEAD)
    # computed in the request (a small project): the above, and for the report and the
    # comparison each their own reads (12) and storing it (an update, then the first time an
    # insert in its savepoint: 4); the comparison names its variants by id (1)
    with django_assert_max_num_queries(9 + 2 * (12 + 4) + 1):
        assert client.get(url(demo)).status_code == 200
    with django_assert_max_num_queries(7):
        assert client.get(url(demo, dv="baseline", ds="ok", dpage=2)).status_code == 200


def test_ids_in_the_tables_are_escaped(client, stages, lead):
    """Table cells are written in Python (views._cell_html), not by the template: ids from
    a bundle must still come out as text, in the links and in the cells."""
    answer = Answer.objects.filter(project=stages).order_by("pk").first()
    Answer.objects.filter(pk=answer.pk).update(answer_id='a"<script>alert(1)</script>')
    Case.objects.filter(pk=answer.case_id).update(case_id="c&<b>bold</b>")
    page = as_user(client, lead).get(url(stages)).content.decode()
    assert "<script>alert(1)" not in page and "<b>bold</b>" not in page
    assert "a&quot;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "c&amp;&lt;b&gt;bold&lt;/b&gt;" in page
