"""Property-based fuzzing of every JSON endpoint (issue #15): random JSON, deep nesting, huge
numbers, NaN as text, wrong types, and bodies shaped like the real ones with hostile values.
Each answer is a 2xx, or a 4xx with a JSON body and nothing written -- never a 500; after an
accepted write the pages that show it still render, and the gold export still follows its JSON
Schema. Budgets and profiles: tests/fuzz.py."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from annotate.adjudication.queue import adjudication_queue
from annotate.gold.exports import gold_rows
from annotate.gold.pairs import ANSWER_FIELDS, CLAIM_FIELDS
from annotate.models import Assignment, ClaimLabel, Decision, Membership
from tests import api as shared
from tests.annotate.test_gold_schema import SCHEMA
from tests.api import API, token_client
from tests.fuzz import HOSTILE, JSON_VALUES, RAW_TOKENS, Raw, dumps, fuzz, in_savepoint

demo = shared.demo  # fixture


@pytest.fixture
def world(demo, lead, reviewer_a):
    number = adjudication_queue(demo)[0].task_number
    reviewer = token_client(reviewer_a)
    task = reviewer.post(f"{API}/projects/demo/tasks/next/").json()["task_number"]
    return {
        "lead": token_client(lead),
        "reviewer": reviewer,
        "adjudication": f"{API}/projects/demo/adjudication/{number}/",
        "task": f"{API}/projects/demo/tasks/{task}/",
        "validator": jsonschema.Draft202012Validator(SCHEMA),
        "project": demo,
    }


def pick(*values):
    """A real value half the time, a hostile one otherwise: real ones get a body past the
    serializer to the services, where the deeper checks are."""
    real = st.sampled_from(values)
    return st.one_of(real, real, HOSTILE, JSON_VALUES)


ADJUDICATION_VALUES = pick(
    "supported",
    "contradicted",
    "insufficient_evidence",
    "none",
    "major",
    0,
    2,
    True,
    "",
    "appropriate",
    ["wrong_citation"],
    {"evidence_ids": ["notes-17"], "evidence_quote": "Assignment 2"},
    {"evidence_ids": [1, 2]},
    {"notes-17": "supports"},
)
DECISION = st.fixed_dictionaries(
    {
        "claim": st.one_of(st.sampled_from([None, 0, 1, 99]), HOSTILE),
        "field": pick(*CLAIM_FIELDS, *ANSWER_FIELDS),
        "value": ADJUDICATION_VALUES,
    }
)
SHAPED = {
    # endpoint: (who, method, url key or suffix, body strategy)
    "adjudicate": (
        "lead",
        "post",
        "adjudication",
        st.fixed_dictionaries(
            {
                "version": pick(0, 0, 0, 1),
                "rationale": pick("because"),
                "decisions": st.lists(DECISION, max_size=3) | HOSTILE,
            }
        ),
    ),
    "claim": (
        "reviewer",
        "patch",
        "task:claims/0/",
        st.fixed_dictionaries(
            {},
            optional={
                "support": pick("supported", "contradicted", ""),
                "severity": pick("none", "major"),
                "requires_evidence": pick(True, False),
                "evidence_ids": pick(["notes-17"], []),
                "evidence_quote": pick("Assignment 2 is due", ""),
                "citations": pick({"notes-17": "supports"}, {}),
                "note": pick("n"),
            },
        ),
    ),
    "answer": (
        "reviewer",
        "patch",
        "task:answer/",
        st.fixed_dictionaries(
            {},
            optional={
                "relevance": pick(0, 1, 2, None),
                "abstention": pick("appropriate", "", None),
                "failure_labels": pick(["wrong_citation"], []),
                "note": pick("n"),
            },
        ),
    ),
    "skip": ("reviewer", "post", "task:skip/", st.fixed_dictionaries({"reason": pick("unclear")})),
    "add member": (
        "lead",
        "post",
        "members",
        st.fixed_dictionaries(
            {"username": pick("carol", "bob"), "role": pick("reviewer", "lead")},
            optional={"password": pick("pw-long-enough-1")},
        ),
    ),
    "change role": (
        "lead",
        "patch",
        "member",
        st.fixed_dictionaries({"role": pick("reviewer", "lead")}),
    ),
}
BODIES = st.one_of(
    st.sampled_from([Raw(t) for t in RAW_TOKENS]),
    JSON_VALUES,
    st.dictionaries(st.text(max_size=20), HOSTILE | JSON_VALUES, max_size=6),
)


def url_of(world, where: str) -> str:
    if where == "adjudication":
        return world["adjudication"]
    if where == "members":
        return f"{API}/projects/demo/members/"
    if where == "member":
        return f"{API}/projects/demo/members/bob/"
    return world["task"] + where.removeprefix("task:")


def state() -> tuple:
    return (
        Decision.objects.count(),
        sorted(
            ClaimLabel.objects.values_list(
                "pk", "support", "severity", "requires_evidence", "evidence_quote", "note"
            )
        ),
        sorted(
            Assignment.objects.values_list(
                "pk", "status", "relevance", "abstention", "note", "release_reason"
            )
        ),
        sorted(Membership.objects.values_list("pk", "role")),
    )


def send(world, endpoint: str, body) -> None:
    who, method, where, _ = SHAPED[endpoint]
    client, url = world[who], url_of(world, where)
    text = body if isinstance(body, (bytes, str)) and not isinstance(body, Raw) else dumps(body)

    def run():
        before = state()
        response = client.generic(method.upper(), url, data=text, content_type="application/json")
        assert response.status_code < 500, response.content[:300]
        if response.status_code >= 400:
            assert isinstance(response.json(), dict)
            assert state() == before, "a refused request wrote something"
            event(f"{endpoint}: {response.status_code}")
            return
        event(f"{endpoint}: accepted")
        # what was accepted still shows, and gold still follows its schema
        assert world["lead"].get(world["adjudication"]).status_code == 200
        reviewer_page = world["reviewer"].get(world["task"])
        assert reviewer_page.status_code in (200, 404)  # 404: the task was skipped
        if endpoint == "adjudicate":
            rows = [json.loads(json.dumps(row)) for row in gold_rows(world["project"])]
            errors = [e.message for row in rows for e in world["validator"].iter_errors(row)]
            assert errors == []

    in_savepoint(run)


@fuzz(examples=120)
@given(data=st.data())
def test_fuzz_json_endpoints_with_bodies_shaped_like_theirs(world, data):
    endpoint = data.draw(st.sampled_from(sorted(SHAPED)), label="endpoint")
    send(world, endpoint, data.draw(SHAPED[endpoint][3], label="body"))


@fuzz(examples=80)
@given(endpoint=st.sampled_from(sorted(SHAPED)), body=BODIES)
def test_fuzz_json_endpoints_with_any_body(world, endpoint, body):
    send(world, endpoint, body)
