"""API tests and what they share: token clients for the named people, and the demo project
with both reviewers' labels and a judge run (a project "with data")."""

from __future__ import annotations

import pytest
from knox.models import AuthToken
from rest_framework.test import APIClient

API = "/api/v1"
JSONL = "application/x-ndjson"


def token_client(user=None) -> APIClient:
    """A script's client: a new API token of the person in the Authorization header (none:
    anonymous)."""
    client = APIClient()
    if user is not None:
        _, key = AuthToken.objects.create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def finished_job(client: APIClient, response) -> dict:
    """The job an upload answered 202 with, read back from its URL once it has ended (at once,
    with the in-process task backend the tests run on)."""
    assert response.status_code == 202, response.content
    assert response["Location"] == response.json()["url"]
    job = client.get(response["Location"]).json()
    assert job["status"] in ("succeeded", "failed"), job
    return job


@pytest.fixture
def people(reviewer_a, reviewer_b, lead, outsider) -> dict[str, APIClient]:
    return {
        "reviewer_a": token_client(reviewer_a),
        "reviewer_b": token_client(reviewer_b),
        "lead": token_client(lead),
        "outsider": token_client(outsider),
        "anonymous": token_client(None),
    }


def build_demo(reviewers, lead):
    """The demo project, open, with both reviewers' labels of every answer and one judge run:
    agreement, adjudication, gold and calibration all have something to show. The reviewers
    must be named alice and bob (the label file names them)."""
    from annotate.imports.label_import import import_labels
    from annotate.members.services import add_member
    from annotate.projects.opening import open_labelling
    from evaluation.judges.runs import import_judge_run
    from tests.conftest import FIXTURES, import_fixture

    project = import_fixture("demo.jsonl", "demo")
    for person in reviewers:
        add_member(project=project, username=person.username, role="reviewer")
    add_member(project=project, username=lead.username, role="lead")
    project = open_labelling(project=project)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        import_labels(lines=stream, project=project)
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        import_judge_run(lines=stream, project=project, user=lead, source_name="run.jsonl")
    return project


@pytest.fixture
def demo(db, reviewer_a, reviewer_b, lead):
    return build_demo([reviewer_a, reviewer_b], lead)
