"""Nothing private is kept by a browser or a proxy: every answer to a signed-in person and
every API answer says `Cache-Control: no-store`; static files keep their caching."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.api import API, token_client
from tests.conftest import PASSWORD


def no_store(response) -> bool:
    return "no-store" in response.get("Cache-Control", "")


@pytest.fixture
def signed_in(team, lead) -> Client:
    client = Client()
    client.login(username=lead.username, password=PASSWORD)
    return client


@pytest.mark.parametrize(
    "path", ["/", "/p/small/setup/", "/p/small/members/", "/p/small/gold.csv", "/nowhere/"]
)
def test_pages_for_a_signed_in_person_are_not_stored(signed_in, path):
    assert no_store(signed_in.get(path))


def test_the_page_that_shows_a_new_token_is_not_stored(signed_in):
    response = signed_in.post("/account/token/", {"action": "create"})
    assert response.status_code == 201 and no_store(response)


def test_api_answers_are_not_stored_whoever_asks(team, lead):
    assert no_store(token_client(lead).get(f"{API}/projects/"))
    assert no_store(token_client(lead).get(f"{API}/projects/small/gold.jsonl"))
    assert no_store(Client().get(f"{API}/projects/"))  # a 401 too
    assert no_store(Client().get("/api/schema/"))


def test_static_files_keep_their_caching(signed_in, settings):
    settings.WHITENOISE_USE_FINDERS = True
    settings.WHITENOISE_AUTOREFRESH = True
    client = Client()  # the middleware reads those settings when it is built
    client.cookies = signed_in.cookies
    response = client.get("/static/claimdesk.css")
    assert response.status_code == 200
    assert "max-age" in response["Cache-Control"] and not no_store(response)
