"""The client against a live server (pytest-django's live_server, jobs run in the request as
everywhere in the suite), with a lead's token. Every request a test's clients make is checked
against the OpenAPI schema at teardown: its path is an operation of the schema, each query
parameter one the operation declares, and each field of its body (a form's parts, a JSON
object's keys) a property of the operation's request body, so the client cannot drift from
the API."""

from __future__ import annotations

import json
import re
import threading
from functools import cache
from urllib.parse import parse_qsl, urlsplit

import pytest
from claimdesk_client import Client
from knox.models import AuthToken

from annotate.members.services import allow_adding_anyone
from tests.conftest import may_create_projects


@cache
def schema() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


@cache
def operations() -> list[tuple[re.Pattern, str, set[str], dict[str, set[str]]]]:
    """(path pattern, method, query parameter names, body fields by media type) of every
    operation in the schema."""
    found = []
    for template, methods in schema()["paths"].items():
        pattern = re.compile(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(template)) + r"\Z")
        for method, operation in methods.items():
            names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
            content = operation.get("requestBody", {}).get("content", {})
            bodies = {media: properties(body["schema"]) for media, body in content.items()}
            found.append((pattern, method.upper(), names, bodies))
    return found


def properties(body: dict) -> set[str]:
    if "$ref" in body:
        body = schema()["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
    return set(body.get("properties", {}))


def fields_sent(request) -> tuple[str, set[str]] | None:
    """(media type, field names) of a request's body; None without one."""
    media = (request.headers.get("Content-Type") or "").split(";")[0]
    if not request.body:
        return None
    if media == "multipart/form-data":
        return media, set(re.findall(rb'form-data; name="([^"]+)"', request.body))
    if media == "application/json":
        return media, set(json.loads(request.body))
    return media, set()


def off_schema(request) -> str | None:
    """Why a request is not one the schema describes, or None."""
    parts = urlsplit(request.url)
    sent = {name for name, _ in parse_qsl(parts.query, keep_blank_values=True)}
    for pattern, method, names, bodies in operations():
        if method != request.method or not pattern.match(parts.path):
            continue
        where = f"{method} {parts.path}"
        if sent - names:
            return f"{where}: unknown query parameters {sorted(sent - names)}"
        body = fields_sent(request)
        if body is not None:
            media, fields = body
            if media not in bodies:
                return f"{where}: the schema takes no {media} body"
            fields = {f.decode() if isinstance(f, bytes) else f for f in fields}
            if fields - bodies[media]:
                return f"{where}: unknown body fields {sorted(fields - bodies[media])}"
        return None
    return f"{request.method} {parts.path}: no such operation in the schema"


@pytest.fixture
def connect(live_server):
    """connect(user) -> a Client with a fresh token of `user`, its requests checked against
    the schema; closed at the end of the test, and the live server's connection threads
    seen to end (as tests/api/test_readme_example.py explains)."""
    clients: list[Client] = []
    problems: list[str] = []
    before = set(threading.enumerate())

    def check(response, *args, **kwargs):
        problem = off_schema(response.request)
        if problem:
            problems.append(problem)

    def connect(user, **options) -> Client:
        _, token = AuthToken.objects.create(user=user)
        client = Client(live_server.url, token, poll_interval=0, **options)
        client.session.hooks["response"].append(check)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        client.close()
    for thread in set(threading.enumerate()) - before:
        if thread.name.endswith("(process_request_thread)"):
            thread.join(timeout=10)
    assert not problems, "requests the schema does not describe:\n" + "\n".join(problems)


@pytest.fixture
def claimdesk(connect, lead):
    """A lead's client, who may create projects and add anyone to them."""
    may_create_projects(lead)
    allow_adding_anyone(user=lead)
    return connect(lead)
