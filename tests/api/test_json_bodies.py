"""Issue #15: every JSON body the API reads is read strictly (annotate.common.safe_json). Deep
nesting made every JSON endpoint answer 500 (RecursionError inside DRF's parser); 1e400 became
infinity; NUL characters and lone surrogates went on to the database. Each is now a 400 whose
JSON body names the field, and nothing is written."""

from __future__ import annotations

import pytest

from annotate.adjudication.queue import adjudication_queue
from annotate.models import ClaimLabel, Decision, Membership
from annotate.projects.opening import open_labelling
from tests import api as shared
from tests.api import API, token_client

demo = shared.demo  # fixture

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def endpoints(demo, lead, reviewer_a):
    """(client, method, url) of every endpoint that reads a JSON body."""
    number = adjudication_queue(demo)[0].task_number
    reviewer = token_client(reviewer_a)
    task = reviewer.post(f"{API}/projects/demo/tasks/next/").json()["task_number"]
    leader = token_client(lead)
    return [
        (leader, "post", f"{API}/projects/demo/members/"),
        (leader, "patch", f"{API}/projects/demo/members/bob/"),
        (leader, "post", f"{API}/projects/demo/adjudication/{number}/"),
        (reviewer, "patch", f"{API}/projects/demo/tasks/{task}/claims/0/"),
        (reviewer, "patch", f"{API}/projects/demo/tasks/{task}/answer/"),
        (reviewer, "post", f"{API}/projects/demo/tasks/{task}/skip/"),
    ]


def send(client, method: str, url: str, body: bytes | str, content_type="application/json"):
    return client.generic(method.upper(), url, data=body, content_type=content_type)


def written() -> tuple[int, int, int]:
    return Decision.objects.count(), ClaimLabel.objects.count(), Membership.objects.count()


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(DEEP, id="100,000 levels deep"),
        pytest.param('{"a": ' + "[" * 40 + "]" * 40 + "}", id="40 levels deep"),
        pytest.param('{"note": NaN}', id="NaN"),
        pytest.param('{"note": 1e400}', id="1e400"),
        pytest.param('{"note": ' + "9" * 5000 + "}", id="a 5000-digit integer"),
        pytest.param('{"note": "a\\u0000b"}', id="NUL"),
        pytest.param('{"note": "\\ud800"}', id="lone surrogate"),
        pytest.param('{"note": "a", "note": "b"}', id="a key twice"),
        pytest.param(b'{"note": "\xff"}', id="not UTF-8"),
        pytest.param('{"note": ', id="not JSON"),
    ],
)
def test_every_json_endpoint_answers_a_hostile_body_with_a_4xx_json_error(endpoints, body):
    before = written()
    for client, method, url in endpoints:
        response = send(client, method, url, body)
        assert response.status_code == 400, (url, response.status_code, response.content)
        assert response["Content-Type"].startswith("application/json")
        assert response.json()
    assert written() == before


def test_a_problem_is_named_by_its_field_path(endpoints):
    client, method, url = endpoints[2]  # adjudication
    body = (
        '{"version": 0, "rationale": "r", "decisions": [{"claim": 0, "field": "evidence", '
        '"value": {"evidence_ids": ["notes\\u0000"], "evidence_quote": 1e999}}]}'
    )
    response = send(client, method, url, body)
    assert response.status_code == 400
    assert response.json() == {
        "decisions.0.value.evidence_ids.0": [
            "NUL U+0000 at character 5 is not allowed in text (tab, newline and carriage return "
            "are)"
        ],
        "decisions.0.value.evidence_quote": [
            "number 1e999 is out of range (beyond ±1.8e308, the largest a float holds)"
        ],
    }
    assert not Decision.objects.exists()


def test_deep_nesting_is_named_at_its_top_field(endpoints):
    client, method, url = endpoints[4]  # the answer's draft
    response = send(client, method, url, '{"failure_labels": ' + "[" * 40 + "]" * 40 + "}")
    assert response.json() == {"failure_labels": ["nested deeper than 32 levels"]}


def test_a_body_over_a_megabyte_is_413(endpoints):
    client, method, url = endpoints[5]  # skip
    response = send(client, method, url, '{"reason": "' + "x" * 1_000_001 + '"}')
    assert response.status_code == 413
    assert response.json() == {"detail": "A JSON body may be at most 1,000,000 bytes."}


def test_an_ordinary_body_still_works(team, reviewer_a):
    project = open_labelling(project=team)
    client = token_client(reviewer_a)
    number = client.post(f"{API}/projects/{project.slug}/tasks/next/").json()["task_number"]
    response = send(
        client,
        "patch",
        f"{API}/projects/{project.slug}/tasks/{number}/answer/",
        '{"relevance": 2, "note": "tab\\there, newline\\nthere, 🙂"}',
    )
    assert response.status_code == 200, response.content
    assert response.json()["label"]["note"] == "tab\there, newline\nthere, 🙂"
