"""A judge run imported from the command line has no uploader: the API answers
`imported_by: null`, and the schema says it may (schemathesis found the two disagreeing)."""

from __future__ import annotations

import json

from django.core.management import call_command
from rest_framework.test import APIClient

from tests import api as shared
from tests.api import API, token_client
from tests.conftest import FIXTURES

demo = shared.demo  # fixture


def test_a_run_imported_by_the_command_has_a_null_uploader_and_the_schema_allows_it(demo, lead):
    call_command(
        "import_judge_run",
        str(FIXTURES / "demo_judge_run.jsonl"),
        "--project",
        "demo",
        "--name",
        "from-the-cli",
    )
    runs = token_client(lead).get(f"{API}/projects/demo/judge-runs/?name=from-the-cli").json()
    assert runs["results"][0]["imported_by"] is None
    schema = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    field = json.loads(schema.content)["components"]["schemas"]["JudgeRun"]["properties"][
        "imported_by"
    ]
    assert field["nullable"] is True
