"""Nobody learns that a project or an account exists unless they may see it.

An outsider (an account without a role in the project) gets the same answer -- status,
headers and body -- for an existing project's slug and for one that does not exist, on every
project URL of the pages and of the API, whatever the method. A lead adding a member is told
the same thing whether or not the username already had an account: added, by a lead who may
add anyone; refused, by one who may add only the people of their own projects. Creating a
project refuses a slug in use (slugs are one namespace for the site) as it refuses a malformed
one, and says nothing more."""

from __future__ import annotations

import html
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import URLResolver, get_resolver

from annotate.members.services import allow_adding_anyone
from annotate.models import Membership
from annotate.projects.creation import SLUG_TAKEN
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
    from annotate.members.services import add_member
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
    allow_adding_anyone(user=lead)
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
    allow_adding_anyone(user=lead)
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
    allow_adding_anyone(user=lead)
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


def test_a_lead_adds_no_stranger_and_is_refused_alike_whether_the_account_exists(
    client, team, lead, outsider
):
    """A lead without the permission to add anyone neither attaches an account they do not
    share a project with nor creates one; the refusal is the same for both, on the page, in
    its CSV import and in the API. People already in a project they lead they may add."""
    from annotate.models import Project

    client.login(username=lead.username, password=PASSWORD)
    url = f"/p/{team.slug}/members/"
    answers = [add_member_answer(client, url, name) for name in (outsider.username, "newcomer")]
    assert answers[0] == answers[1] and answers[0][0] == 400
    assert "already in a project you lead" in answers[0][1]
    imports = []
    for name in (outsider.username, "newcomer"):
        csv_file = SimpleUploadedFile("m.csv", f"{name},reviewer\n".encode())
        response = client.post(url, {"action": "import", "file": csv_file})
        imports.append((response.status_code, response.content.decode().replace(name, "<n>")))
    imports = [(code, re.sub(r"[A-Za-z0-9]{64}", "<csrf>", text)) for code, text in imports]
    assert imports[0] == imports[1] and imports[0][0] == 400
    api = token_client(lead)
    refusals = [
        api.post(
            f"{API}/projects/{team.slug}/members/",
            {"username": name, "role": "reviewer"},
            format="json",
        )
        for name in (outsider.username, "newcomer")
    ]
    assert [r.status_code for r in refusals] == [400, 400]
    assert refusals[0].json() == refusals[1].json() and list(refusals[0].json()) == ["username"]
    assert not Membership.objects.filter(project=team, user=outsider).exists()
    assert not get_user_model().objects.filter(username="newcomer").exists()

    # Once the outsider is in another project the lead leads, the lead may add them here.
    other = Project.objects.create(slug="other-one", name="Other", corpus_version="v1")
    Membership.objects.create(project=other, user=lead, role="lead")
    Membership.objects.create(project=other, user=outsider, role="reviewer")
    added = api.post(
        f"{API}/projects/{team.slug}/members/",
        {"username": outsider.username, "role": "reviewer"},
        format="json",
    )
    assert added.status_code == 201
    assert Membership.objects.get(project=team, user=outsider).role == "reviewer"


def test_a_slug_in_use_is_refused_as_a_malformed_one_is(client, target, outsider):
    """A creator learns that a slug cannot be used, as they would for a slug with a space in
    it or one too long: never that a project holds it, nor anything of that project."""
    may_create_projects(outsider)  # the others get 403 whatever the slug
    client.login(username=outsider.username, password=PASSWORD)
    api = token_client(outsider)
    pages, answers = [], []
    for slug in (target.slug, "not a slug", "ab-" * 27):  # 81 characters
        with open(FIXTURES / "small.jsonl", "rb") as bundle:
            response = client.post("/projects/new/", {"slug": slug, "file": bundle})
        body = re.sub(r"[A-Za-z0-9]{64}", "<csrf>", response.content.decode())
        pages.append((response.status_code, body.replace(html.escape(slug), "<slug>")))
        with open(FIXTURES / "small.jsonl", "rb") as bundle:
            raw = api.post(f"{API}/projects/?slug={slug}", bundle.read(), content_type=JSONL)
        with open(FIXTURES / "small.jsonl", "rb") as bundle:
            form = api.post(f"{API}/projects/", {"slug": slug, "file": bundle})
        answers += [(raw.status_code, raw.json()), (form.status_code, form.json())]
    assert pages[0][0] == 400 and "This slug is not available" in pages[0][1]
    assert pages[0] == pages[1] == pages[2]
    assert target.name not in pages[0][1] and target.corpus_version not in pages[0][1]
    assert answers == [(400, {"slug": [SLUG_TAKEN]})] * 6
