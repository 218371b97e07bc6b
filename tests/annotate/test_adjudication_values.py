"""Issue #15: a lead's gold value is type-checked strictly wherever it comes from (the API, the
adjudication page). `relevance: true` and `evidence_ids: [1, 2]` were accepted, broke the
task's page and made the gold export fail its own JSON Schema; "²" in the page's relevance
field was a 500. Every refused value is a 400 and nothing is written; every accepted one
exports as valid gold."""

from __future__ import annotations

import json

import jsonschema
import pytest
from django.urls import reverse

from annotate.adjudication.queue import adjudication_queue
from annotate.adjudication.services import DecisionInput, _check_decision_value, adjudicate
from annotate.common.errors import ServiceError
from annotate.gold.exports import gold_rows
from annotate.gold.pairs import ANSWER_FIELDS, CLAIM_FIELDS
from annotate.models import Answer, Decision
from tests import api as shared
from tests.annotate.test_gold_schema import SCHEMA
from tests.api import API, token_client
from tests.conftest import PASSWORD

demo = shared.demo  # fixture
pytestmark = pytest.mark.django_db


@pytest.fixture
def item(demo):
    """The most serious disagreement of the demo project, with a claim that cites a passage."""
    return adjudication_queue(demo)[0]


def post(lead, item, decisions):
    url = f"{API}/projects/demo/adjudication/{item.task_number}/"
    body = {"version": 0, "rationale": "checked the passage", "decisions": decisions}
    return token_client(lead).post(url, body, format="json")


@pytest.mark.parametrize(
    "decision, message",
    [
        ({"claim": None, "field": "relevance", "value": True}, "true is not a valid relevance"),
        ({"claim": None, "field": "relevance", "value": 1.0}, "1.0 is not a valid relevance"),
        ({"claim": None, "field": "relevance", "value": "2"}, '"2" is not a valid relevance'),
        ({"claim": None, "field": "relevance", "value": 3}, "3 is not a valid relevance"),
        (
            {"claim": 0, "field": "evidence", "value": {"evidence_ids": [1, 2]}},
            '{"evidence_ids": [1, 2]} is not a valid evidence',
        ),
        (
            {"claim": 0, "field": "evidence", "value": {"evidence_ids": ["nowhere"]}},
            'not a passage of this task: "nowhere"',
        ),
        (
            {"claim": 0, "field": "evidence", "value": {"evidence_ids": [], "x": 1}},
            "is not a valid evidence: an object with evidence_ids",
        ),
        (
            {"claim": None, "field": "failure_labels", "value": [["wrong_citation"]]},
            "is not a valid failure_labels: a list of",
        ),
        (
            {"claim": None, "field": "failure_labels", "value": ["wrong_citation"] * 2},
            "a label is given twice",
        ),
        ({"claim": 0, "field": "requires_evidence", "value": 1}, "1 is not a valid"),
        ({"claim": 0, "field": "support", "value": ["supported"]}, "is not a valid support"),
        ({"claim": 0, "field": "support", "value": "unsupported"}, "is not a valid support"),
        ({"claim": 0, "field": "severity", "value": {"none": 1}}, "is not a valid severity"),
        ({"claim": None, "field": "abstention", "value": 0}, "0 is not a valid abstention"),
        (
            {"claim": 0, "field": "citations", "value": {"not-cited": "supports"}},
            'the claim does not cite "not-cited"',
        ),
        (
            {"claim": 0, "field": "citations", "value": {"x": ["supports"]}},
            "is not a valid citations",
        ),
    ],
)
def test_a_gold_value_of_the_wrong_type_or_outside_its_field_is_400(lead, item, decision, message):
    response = post(lead, item, [decision])
    assert response.status_code == 400, response.content
    assert message in response.json()["decisions"][0], response.json()
    assert not Decision.objects.exists()


def test_accepted_values_of_every_field_export_as_valid_gold(demo, lead, item):
    screen = token_client(lead).get(f"{API}/projects/demo/adjudication/{item.task_number}/")
    screen = screen.json()
    shown = screen["passages"][0]
    claim = screen["claims"][0]
    quote = shown["text"].split(".")[0]
    decisions = [
        {"claim": None, "field": "relevance", "value": 2},
        {"claim": None, "field": "abstention", "value": ""},
        {"claim": None, "field": "failure_labels", "value": ["wrong_citation"]},
        {"claim": claim["index"], "field": "support", "value": "contradicted"},
        {"claim": claim["index"], "field": "severity", "value": "minor"},
        {"claim": claim["index"], "field": "requires_evidence", "value": False},
        {
            "claim": claim["index"],
            "field": "evidence",
            "value": {"evidence_ids": [shown["passage_id"]], "evidence_quote": quote},
        },
        {
            "claim": claim["index"],
            "field": "citations",
            "value": {
                c["passage_id"]: "supports" if c["resolved"] else "citation_not_found"
                for c in claim["citations"]
            },
        },
    ]
    response = post(lead, item, decisions)
    assert response.status_code == 200, response.content
    validator = jsonschema.Draft202012Validator(SCHEMA)
    rows = [json.loads(json.dumps(row)) for row in gold_rows(demo)]
    assert [e.message for row in rows for e in validator.iter_errors(row)] == []


def test_a_quote_that_is_not_in_the_chosen_passage_is_refused(lead, item, demo):
    screen = token_client(lead).get(f"{API}/projects/demo/adjudication/{item.task_number}/")
    passage = screen.json()["passages"][0]["passage_id"]
    value = {"evidence_ids": [passage], "evidence_quote": "words no passage holds"}
    response = post(lead, item, [{"claim": 0, "field": "evidence", "value": value}])
    assert "the quote does not occur in the chosen passage(s)" in response.json()["decisions"][0]


def test_the_service_refuses_a_claim_field_for_the_answer(lead, item):
    with pytest.raises(ServiceError, match="'support' is not a field of the answer"):
        adjudicate(
            answer=Answer.objects.get(pk=item.answer_pk),
            lead=lead,
            version=0,
            decisions=[DecisionInput(claim=None, field="support", value="supported")],
            rationale="r",
        )


def test_the_value_check_never_raises_whatever_the_value():
    strange = [None, True, 1, 1.5, "", "²", [], [[1]], [{}], {}, {"a": [1]}, {"evidence_ids": [[]]}]
    for field in (*CLAIM_FIELDS, *ANSWER_FIELDS, "nonsense"):
        for value in strange:
            _check_decision_value(field, value, cited={}, shown={})


# --- The adjudication page --------------------------------------------------------------------


def page_post(client, item, data):
    url = reverse("adjudicate", kwargs={"slug": "demo", "number": item.task_number})
    client.get(url)
    return client.post(url, {"version": "0", "rationale": "r", **data})


@pytest.mark.parametrize("typed", ["²", "٢", "2.0", "-1", "99999999999999999999", " 2"])
def test_a_relevance_typed_on_the_page_that_is_not_0_1_or_2_is_an_error(client, lead, item, typed):
    # "²".isdigit() is true and int("²") raises: that was a 500.
    client.login(username=lead.username, password=PASSWORD)
    response = page_post(client, item, {"f-answer-relevance": "other", "o-answer-relevance": typed})
    assert response.status_code == 400
    assert "is not a valid relevance" in response.content.decode()
    assert not Decision.objects.exists()


def test_a_relevance_typed_as_a_digit_is_saved(client, lead, item):
    client.login(username=lead.username, password=PASSWORD)
    response = page_post(client, item, {"f-answer-relevance": "other", "o-answer-relevance": "1"})
    assert response.status_code == 302
    assert Decision.objects.get(field="relevance").value == 1


@pytest.mark.parametrize("version", ["x", "", "1e3", "²"])
def test_a_version_that_is_not_a_number_is_an_error_not_a_500(client, lead, item, version):
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("adjudicate", kwargs={"slug": "demo", "number": item.task_number})
    client.get(url)
    response = client.post(url, {"version": version, "f-answer-relevance": "a", "rationale": "r"})
    assert response.status_code == 400
    assert "out of date" in response.content.decode()
