"""Nobody learns that a project or an account exists unless they may see it.

An outsider (an account without a role in the project) gets the same answer -- status,
headers and body -- for an existing project's slug and for one that does not exist, on every
project URL of the pages and of the API, whatever the method. A lead adding a member is told
the same thing whether or not the username already had an account. Creating a project must
say when a slug is in use (slugs are one namespace for the site), and says nothing more."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLResolver, get_resolver

from annotate.models import Membership
from tests.api import API, JSONL, token_client
from tests.conftest import FIXTURES, PASSWORD, may_create_projects

MISSING = "no-such-project"
METHODS = ("get", "head", "options", "post", "put", "patch", "delete")


def routes(resolver=None, prefix=""):
    for pattern in (resolver or get_resolver()).url_patterns:
        if isinstance(pattern, URLResolver):
            yield from routes(pattern, prefix + str(pattern.pattern))
        elif "<slug:slug>" in prefix + str(pattern.pattern):
            yield prefix + str(pattern.pattern)


def concrete(route: str, slug: str) -> str:
    path = route.replace("<slug:slug>", slug).lstrip("^").rstrip("$")
    path = re.sub(r"<int:\w+>", "1", path)
    path = path.replace("<str:fmt>", "csv").replace("<str:username>", "lena")
    return "/" + path


def answer(response, slug: str) -> tuple:
    """What a prober sees, with the slug itself and per-response CSRF tokens taken out."""
    body = b"" if response.streaming else response.content
    body = re.sub(rb"[A-Za-z0-9]{64}", b"<csrf>", body).replace(slug.encode(), b"<slug>")
    headers = {
        name: value.replace(slug, "<slug>")
        for name, value in response.items()
        if name not in ("Content-Length", "Expires")  # Expires: now, to the second
    }
    return response.status_code, headers, body


@pytest.fixture
def target(team, reviewer_a, lead):
    """A project with its people, under a slug that occurs nowhere else in a page (not as
    "small" does, in <small>), so that taking it out of an answer takes out nothing else."""
    from annotate.services import add_member
    from tests.conftest import import_fixture

    project = import_fixture("small.jsonl", "hidden-target-7q")
    add_member(project=project, username=reviewer_a.username, role="reviewer")
    add_member(project=project, username=lead.username, role="lead")
    return project


@pytest.fixture(params=["session", "session+csrf", "htmx", "token"])
def prober(request, target, outsider):
    if request.param == "token":
        client = token_client(outsider)
    else:
        client = Client(enforce_csrf_checks=request.param == "session+csrf")
        client.login(username=outsider.username, password=PASSWORD)
    headers = {"HTTP_HX_REQUEST": "true"} if request.param == "htmx" else {}
    return client, headers


def test_every_project_url_answers_an_outsider_alike_for_any_slug(target, prober):
    client, headers = prober
    paths = sorted(set(routes()))
    assert any(p.startswith("api/") for p in paths) and any(p.startswith("p/") for p in paths)
    differences = []
    for route in paths:
        for method in METHODS:
            existing = getattr(client, method)(concrete(route, target.slug), **headers)
            missing = getattr(client, method)(concrete(route, MISSING), **headers)
            if answer(existing, target.slug) != answer(missing, MISSING):
                differences.append((method.upper(), route, existing.status_code))
    assert differences == []


def add_member_answer(client, url: str, username: str) -> tuple:
    data = {"action": "add", "username": username, "role": "reviewer", "password": "a long pass 77"}
    response = client.post(url, data, follow=True)
    text = re.sub(r"[A-Za-z0-9]{64}", "<csrf>", response.content.decode())
    return response.status_code, text.replace(username, "<name>")


def test_adding_a_member_does_not_tell_whether_the_account_existed(client, team, lead, outsider):
    client.login(username=lead.username, password=PASSWORD)
    url = f"/p/{team.slug}/members/"
    existing = add_member_answer(client, url, outsider.username)
    new = add_member_answer(client, url, "newcomer")
    assert existing[0] == new[0] == 200
    assert "keeps its own" in existing[1]
    # The member lists differ by one row (the first added is listed too): compare the message.
    message = re.compile(r'<div class="flash[^"]*".*?</div>', re.S)
    assert message.findall(existing[1]) == message.findall(new[1])
    assert get_user_model().objects.get(username=outsider.username).check_password(PASSWORD)


def test_a_weak_password_is_refused_alike_for_an_existing_and_a_new_account(
    client, team, lead, outsider
):
    client.login(username=lead.username, password=PASSWORD)
    answers = []
    for username in (outsider.username, "newcomer"):
        data = {"action": "add", "username": username, "role": "reviewer", "password": "password"}
        response = client.post(f"/p/{team.slug}/members/", data)
        text = re.sub(r"[A-Za-z0-9]{64}", "<csrf>", response.content.decode())
        answers.append((response.status_code, text.replace(username, "<name>")))
    assert answers[0] == answers[1] and answers[0][0] == 400
    assert not Membership.objects.filter(project=team, user=outsider).exists()


def test_the_api_adds_a_member_alike_whether_the_account_existed(team, lead, outsider):
    api = token_client(lead)
    url = f"{API}/projects/{team.slug}/members/"
    answers = []
    for username in (outsider.username, "newcomer"):
        response = api.post(
            url,
            {"username": username, "role": "reviewer", "password": "a long pass 77"},
            format="json",
        )
        answers.append((response.status_code, {**response.json(), "username": "<name>"}))
    assert answers[0] == answers[1] == (201, {"username": "<name>", "role": "reviewer"})


def test_a_slug_in_use_is_refused_saying_only_that(client, team, outsider):
    may_create_projects(outsider)  # the others get 403 whatever the slug
    client.login(username=outsider.username, password=PASSWORD)
    with open(FIXTURES / "small.jsonl", "rb") as bundle:
        response = client.post("/projects/new/", {"slug": team.slug, "file": bundle})
    body = response.content.decode()
    assert response.status_code == 400 and "This slug is not available" in body
    assert team.name not in body and team.corpus_version not in body
    with open(FIXTURES / "small.jsonl", "rb") as bundle:
        api = token_client(outsider).post(
            f"{API}/projects/?slug={team.slug}", bundle.read(), content_type=JSONL
        )
    assert api.status_code == 400 and api.json() == {
        "slug": ["This slug is not available: choose another."]
    }
