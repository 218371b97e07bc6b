"""The login page with single sign-on on: the provider's button beside the password form, or
alone with password login off -- the form gone, a password posted anyway refused, the admin's
login too. django-axes still throttles passwords and leaves the provider's returns alone;
logout ends the session here, and at the provider when asked to."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.test import Client

from tests.conftest import PASSWORD
from tests.oidc_provider import PROVIDER_NAME, passwords_off, set_claims, sign_in

pytestmark = pytest.mark.django_db
User = get_user_model()
BUTTON = f"Sign in with {PROVIDER_NAME}</a>"


def signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_the_login_page_offers_the_provider_beside_the_password_form(client, sso, reviewer_a):
    page = client.get("/login/?next=/p/demo/").content.decode()
    assert BUTTON in page and 'href="/oidc/authenticate/?next=/p/demo/"' in page
    assert 'name="password"' in page and "or with a password" in page
    response = client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302 and signed_in(client)


def test_with_password_login_off_the_form_is_gone_and_a_password_is_refused(
    client, sso, settings, reviewer_a
):
    passwords_off(settings)
    page = client.get("/login/").content.decode()
    assert BUTTON in page
    assert 'name="password"' not in page and "<form" not in page.split("<main", 1)[1]
    assert "Forgot your password" not in page
    response = client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 403 and not signed_in(client)
    assert "Passwords are switched off here." in response.content.decode()
    assert not client.login(username="alice", password=PASSWORD)  # no backend takes one


def test_with_password_login_off_the_admin_login_is_the_login_page(client, sso, settings):
    User.objects.create_superuser("root", password=PASSWORD)
    passwords_off(settings)
    assert client.get("/admin/login/?next=/admin/auth/")["Location"] == (
        "/login/?next=/admin/auth/"
    )
    assert client.get("/admin/")["Location"].startswith("/admin/login/")
    response = client.post("/admin/login/", {"username": "root", "password": PASSWORD})
    assert response["Location"] == "/login/?next=/admin/" and not signed_in(client)


def test_with_password_login_off_someone_signed_in_but_not_staff_gets_403_not_a_loop(
    client, sso, settings
):
    passwords_off(settings)
    sign_in(client, "rita")
    assert client.get("/admin/")["Location"] == "/admin/login/?next=/admin/"
    assert client.get("/admin/login/?next=/admin/").status_code == 403
    User.objects.filter(username="rita").update(is_staff=True)
    assert client.get("/admin/login/")["Location"] == "/admin/"


def test_an_administrator_set_up_without_a_password_signs_in_with_the_provider(
    client, sso, settings
):
    """`createsuperuser --noinput` with no password, before their first sign-in."""
    User.objects.create_superuser("root", email="root@example.com", password=None)
    passwords_off(settings)
    set_claims(sso, "root")
    assert sign_in(client, "root", next="/admin/")["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


def test_password_sessions_end_when_password_login_is_switched_off(client, sso, settings):
    User.objects.create_user("alice", password=PASSWORD)
    client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert client.get("/").status_code == 200
    passwords_off(settings)
    assert client.get("/")["Location"] == "/login/?next=/"


def test_with_password_login_on_the_admin_login_is_the_admin_s(client, sso):
    User.objects.create_superuser("root", password=PASSWORD)
    assert b'name="password"' in client.get("/admin/login/").content
    response = client.post("/admin/login/?next=/admin/", {"username": "root", "password": PASSWORD})
    assert response["Location"] == "/admin/" and signed_in(client)


@pytest.fixture
def throttle(settings):
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 3
    settings.AXES_COOLOFF_TIME = timedelta(minutes=15)


def test_passwords_are_still_throttled_and_the_provider_s_returns_are_not(
    client, sso, throttle, reviewer_a
):
    set_claims(sso, "alice")  # alice has a password: every sign-in as her is refused
    for _ in range(5):
        sign_in(Client(), "alice")
    assert not AccessAttempt.objects.exists()
    sign_in(rita := Client(), "rita")
    assert signed_in(rita)  # nor is anyone else locked out of the provider

    for _ in range(3):
        client.post("/login/", {"username": "alice", "password": "wrong"})
    response = client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 429 and not signed_in(client)
    page = response.content.decode()
    assert "Too many failed logins" in page and BUTTON in page  # the provider stays open


def test_logout_ends_the_session_here(client, sso, settings):
    sign_in(client, "rita")
    response = client.post("/logout/")
    assert response["Location"] == "/login/" and not signed_in(client)


def test_logout_at_the_provider_when_asked(client, sso, settings):
    settings.CLAIMDESK_OIDC_PROVIDER_LOGOUT = True
    settings.OIDC_STORE_ID_TOKEN = True
    sign_in(client, "rita")
    id_token = client.session["oidc_id_token"]
    response = client.post("/logout/")
    assert not signed_in(client)
    url = urlsplit(response["Location"])
    assert f"{url.scheme}://{url.netloc}{url.path}" == f"{sso}/oauth2/end_session"
    assert parse_qs(url.query) == {
        "id_token_hint": [id_token],
        "client_id": ["claimdesk"],
        "post_logout_redirect_uri": ["http://testserver/login/"],
    }
    # A password session has no ID token: it ends here only.
    User.objects.create_user("alice", password=PASSWORD)
    client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert client.post("/logout/")["Location"] == "/login/"
