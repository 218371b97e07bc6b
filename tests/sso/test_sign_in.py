"""Single sign-on through a real OpenID Connect provider (tests/oidc_provider.py), with
Django's test client on our side and HTTP to the provider: accounts made at a first login,
roles from the provider's groups claim, the accounts it may and may not sign in to, and what
the login page says when it may not."""

from __future__ import annotations

import logging

import pytest
import requests
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.test import Client

from annotate.members.services import add_member
from annotate.models import Membership, Role
from sso import provider
from tests.conftest import PASSWORD, import_fixture
from tests.oidc_provider import set_claims, sign_in

pytestmark = pytest.mark.django_db
User = get_user_model()


@pytest.fixture
def projects(db):
    """demo and small are the mapping's (tests/oidc_provider.ROLES); stages is not, and lena
    leads all three, by hand."""
    made = {slug: import_fixture(name, slug) for slug, name in PROJECT_FILES.items()}
    for project in made.values():
        add_member(project=project, username="lena", role=Role.LEAD, password=PASSWORD)
    return made


PROJECT_FILES = {"demo": "demo.jsonl", "small": "small.jsonl", "stages": "stages.jsonl"}


def roles(username: str) -> dict[str, str]:
    return dict(
        Membership.objects.filter(user__username=username).values_list("project__slug", "role")
    )


def said(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def signed_in_as(client) -> str | None:
    user_id = client.session.get("_auth_user_id")
    return User.objects.get(pk=user_id).username if user_id else None


def test_a_first_sign_in_makes_the_account_with_the_roles_its_groups_map_to(client, sso, projects):
    response = sign_in(client, "rita")
    assert response.status_code == 302 and response["Location"] == "/"
    rita = User.objects.get(username="rita")
    assert signed_in_as(client) == "rita"
    assert not rita.has_usable_password()  # signs in only through the provider
    assert (rita.email, rita.first_name, rita.last_name) == ("rita@example.com", "Rita", "Example")
    assert roles("rita") == {"demo": "reviewer", "small": "reviewer"}
    home = client.get("/").content.decode()
    assert "Course notes v1" in home and "Small sample" in home
    assert "Stage diagnosis by construction" not in home


def test_the_page_asked_for_is_the_one_shown_after_signing_in(client, sso, projects):
    response = sign_in(client, "rita", next="/p/demo/")
    assert response["Location"] == "/p/demo/"
    assert sign_in(Client(), "rita", next="https://elsewhere.example/")["Location"] == "/"


def test_roles_follow_the_claim_at_each_sign_in_in_the_projects_the_mapping_names(sso, projects):
    sign_in(Client(), "leo")
    assert roles("leo") == {"demo": "lead", "small": "reviewer"}
    # A lead adds leo to a project the mapping does not name: that role is the lead's to keep.
    add_member(project=projects["stages"], username="leo", role=Role.REVIEWER)

    set_claims(sso, "leo", groups=["eval-reviewers"])
    sign_in(Client(), "leo")
    assert roles("leo") == {"demo": "reviewer", "small": "reviewer", "stages": "reviewer"}

    set_claims(sso, "leo", groups=["marketing"])
    sign_in(Client(), "leo")
    assert roles("leo") == {"stages": "reviewer"}

    set_claims(sso, "leo", groups=["eval-leads"])
    sign_in(Client(), "leo")
    assert roles("leo") == {"demo": "lead", "stages": "reviewer"}


def test_a_role_given_by_hand_in_a_mapped_project_follows_the_claim(sso, projects):
    add_member(project=projects["small"], username="nora", role=Role.LEAD)
    sign_in(Client(), "nora")  # in the marketing group only
    assert roles("nora") == {}
    assert Membership.objects.filter(project=projects["small"], role=Role.LEAD).count() == 1


def test_a_project_s_only_lead_stays_its_lead_when_the_claim_no_longer_says_so(
    sso, projects, caplog
):
    sign_in(Client(), "leo")
    Membership.objects.filter(project=projects["demo"], user__username="lena").delete()
    set_claims(sso, "leo", groups=["eval-reviewers"])
    with caplog.at_level(logging.WARNING, logger="sso.roles"):
        sign_in(Client(), "leo")
    assert roles("leo") == {"demo": "lead", "small": "reviewer"}
    assert "leo keeps the lead role in demo, whose only lead they are" in caplog.text


def test_an_account_with_a_password_is_never_taken_over(client, sso, projects):
    """lena logs in with a password; the provider's lena may be someone else."""
    set_claims(sso, "lena", groups=["eval-leads"])
    response = sign_in(client, "lena")
    assert response["Location"] == "/login/" and signed_in_as(client) is None
    assert said(response) == [
        "An account named lena already logs in with a password, so single sign-on does not "
        "take it over. Ask your administrator to link them."
    ]
    lena = User.objects.get(username="lena")
    assert lena.check_password(PASSWORD) and lena.email == ""
    assert roles("lena") == {"demo": "lead", "small": "lead", "stages": "lead"}


def test_an_account_set_up_without_a_password_is_the_one_signed_in_to(client, sso, projects):
    """A lead added rita from a members CSV before her first sign-in: no password."""
    add_member(project=projects["stages"], username="rita", role=Role.REVIEWER)
    rita = User.objects.get(username="rita")
    assert not rita.has_usable_password()
    sign_in(client, "rita")
    assert signed_in_as(client) == "rita" and User.objects.filter(username="rita").count() == 1
    assert roles("rita") == {"demo": "reviewer", "small": "reviewer", "stages": "reviewer"}
    assert User.objects.get(pk=rita.pk).email == "rita@example.com"


def test_a_switched_off_account_is_refused_and_loses_its_session(sso, projects):
    first = Client()
    sign_in(first, "rita")
    User.objects.filter(username="rita").update(is_active=False)
    assert first.get("/")["Location"] == "/login/?next=/"  # the session it had is over
    response = sign_in(second := Client(), "rita")
    assert signed_in_as(second) is None
    assert said(response) == ["This account is switched off. Ask your evaluation lead."]
    assert roles("rita") == {"demo": "reviewer", "small": "reviewer"}  # untouched


def test_a_claim_that_is_no_username_is_refused(client, sso, projects):
    set_claims(sso, "nora", preferred_username="nora with spaces")
    response = sign_in(client, "nora")
    assert signed_in_as(client) is None and not User.objects.filter(email__startswith="nora")
    assert said(response) == [
        "The sign-in service gave no usable username (its preferred_username claim). "
        "Ask your administrator."
    ]


def test_the_username_comes_from_the_claim_the_settings_name(client, sso, settings, projects):
    settings.CLAIMDESK_OIDC_USERNAME_CLAIM = "email"
    sign_in(client, "rita")
    assert signed_in_as(client) == "rita@example.com"


def test_a_return_counts_once_and_only_in_the_browser_that_started_it(client, sso, projects):
    start = client.get("/oidc/authenticate/")
    at_provider = requests.post(
        start["Location"], data={"sub": "rita"}, allow_redirects=False, timeout=10
    )
    back = at_provider.headers["Location"].removeprefix("http://testserver")
    other = Client()
    assert other.get(back)["Location"] == "/login/" and signed_in_as(other) is None
    assert client.get(back)["Location"] == "/" and signed_in_as(client) == "rita"
    assert client.get(back).status_code == 400  # its state is spent: SuspiciousOperation


def test_cancelling_at_the_provider_comes_back_to_the_login_page(client, sso):
    start = client.get("/oidc/authenticate/")
    denied = requests.post(
        start["Location"], data={"action": "deny"}, allow_redirects=False, timeout=10
    )
    back = denied.headers["Location"].removeprefix("http://testserver")
    assert "error=access_denied" in back
    response = client.get(back)
    assert response["Location"] == "/login/" and signed_in_as(client) is None
    assert said(response) == ["Signing in was cancelled at the sign-in service."]


def test_a_provider_that_is_down_fails_the_login_and_nothing_else(sso, settings, projects):
    signed_in = Client()
    sign_in(signed_in, "rita")
    settings.OIDC_OP_DISCOVERY_URL = "http://127.0.0.1:9/.well-known/openid-configuration"
    provider.forget()
    assert signed_in.get("/").status_code == 200  # a session needs no provider
    client = Client()
    response = client.get("/oidc/authenticate/")
    assert response["Location"] == "/login/?next=/"
    assert said(response) == ["The sign-in service did not answer. Try again in a minute."]
    assert "Sign in with Example ID" in client.get("/login/").content.decode()


def test_an_api_token_made_after_signing_in_works(client, sso, projects):
    sign_in(client, "rita")
    key = client.post("/account/token/", {"action": "create"}).context["new_key"]
    api = Client(HTTP_AUTHORIZATION=f"Token {key}")
    listed = api.get("/api/v1/projects/").json()["results"]
    assert sorted(project["slug"] for project in listed) == ["demo", "small"]


def test_without_the_settings_there_is_no_single_sign_on(client, projects):
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404
    page = client.get("/login/").content.decode()
    assert "Sign in with" not in page and 'name="password"' in page
