"""The API keeps its OpenAPI contract: schemathesis generates requests for every operation of
/api/schema/ and calls the app in-process (WSGI) on the demo project, labelled and with a
judge run. No request may get a server error, and every response must match the schema
(status code, content type, body). Bounded: 20 generated examples per operation, derandomized,
so the run takes about the same time and finds the same things every time.

Requests go out as the lead with a token; the reviewer's task endpoints go out as reviewer A
(as the lead they would all be 403 and their schema never exercised). Path parameters are
pinned to the demo project, and a generated task number, run id or username is mapped onto
one that exists, so most requests reach real data rather than 404."""

from __future__ import annotations

import pytest
import schemathesis
from django.contrib.auth import get_user_model
from django.core import signals
from django.core.handlers.wsgi import WSGIHandler
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from annotate.models import Answer, Project
from evaluation.models import JudgeRun
from tests.api import build_demo, token_client
from tests.conftest import PASSWORD

pytestmark = [pytest.mark.django_db]

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# Streamed downloads are still called and must not fail; their bodies are JSONL/CSV, which
# the schema describes as binary, so only their status and content type are checked.
STREAMS = ("/gold.jsonl", "/gold.csv", "/bundle/")


# Loaded at collection (the schema needs no database). schemathesis.pytest.from_fixture would
# load it per test instead, but its pytest plugin does not run on pytest 9 yet.
schema = schemathesis.openapi.from_wsgi("/api/schema/", WSGIHandler())
schema.config.update(parameters={"slug": "demo"})
schema.config.phases.update(phases=["examples", "coverage", "fuzzing"])


@schemathesis.serializer("application/x-ndjson")
def jsonl_body(ctx, value) -> bytes:
    """A raw JSONL body (bundle, labels, judge run), sent as the bytes generated for it."""
    if isinstance(value, bytes):
        return value
    data = getattr(value, "data", None)
    return data if isinstance(data, bytes) else str(value).encode()


@pytest.fixture(scope="module")
def world(django_db_setup, django_db_blocker):
    """The demo project and its people, built once for the whole module (every operation is
    its own test, and each test's own writes are rolled back), removed at the end."""
    User = get_user_model()
    with django_db_blocker.unblock():
        people = {
            name: User.objects.create_user(username=name, password=PASSWORD)
            for name in ("alice", "bob", "lena")
        }
        project = build_demo([people["alice"], people["bob"]], people["lena"])
        tokens = {name: token_client(user) for name, user in people.items()}
        try:
            yield {
                "project": project,
                "lead": people["lena"],
                "tokens": {n: c._credentials["HTTP_AUTHORIZATION"] for n, c in tokens.items()},
                "numbers": list(
                    Answer.objects.filter(project=project)
                    .order_by("task_number")
                    .values_list("task_number", flat=True)
                ),
                "runs": list(JudgeRun.objects.filter(project=project).values_list("pk", flat=True)),
            }
        finally:
            Answer.objects.filter(project=project).delete()  # variants are protected by them
            Project.objects.filter(pk=project.pk).delete()
            User.objects.filter(pk__in=[u.pk for u in people.values()]).delete()


@pytest.fixture(autouse=True)
def keep_the_test_connection():
    """Calling the WSGI app directly fires request_started/finished, whose
    close_old_connections would close the connection holding the test's transaction (on
    PostgreSQL). Django's own test client disconnects it the same way."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def existing(value, choices):
    """A generated value mapped onto one that exists (negative ones are kept, for 404s)."""
    if isinstance(value, int) and value >= 0 and choices:
        return choices[value % len(choices)]
    return value


@schema.parametrize()
@settings(
    max_examples=20,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_operation_keeps_the_contract(case, world):
    params = case.path_parameters or {}
    if "number" in params:
        params["number"] = existing(params["number"], world["numbers"])
    if "run_id" in params:
        params["run_id"] = existing(params["run_id"], world["runs"])
    if "index" in params:
        params["index"] = existing(params["index"], [0, 1, 2])
    if "username" in params:
        params["username"] = existing(len(params["username"]), ["alice", "bob", "lena"])
    if case.path.endswith("/compare/") and case.query is not None:
        case.query.update(a="baseline", b="verifier")
    token = world["tokens"]["alice" if "/tasks/" in case.path else "lena"]
    checks = CHECKS
    if case.path.endswith(STREAMS) and case.method == "GET":
        checks = [c for c in CHECKS if c is not response_schema_conformance]
    case.call_and_validate(app=WSGIHandler(), headers={"Authorization": token}, checks=checks)
