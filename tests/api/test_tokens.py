"""API tokens (django-rest-knox): stored as digests only, shown once, several per person,
each revocable on the token page, expiring, and all revoked when the password changes. The
header stays `Authorization: Token <key>`."""

from __future__ import annotations

import re
import time
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.test import APIClient

from tests.api import API

TOKEN = re.compile(r'<code id="new-token" class="token">([0-9a-f]{64})</code>')


def script(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def works(key: str) -> bool:
    return script(key).get(f"{API}/projects/").status_code == 200


@pytest.fixture
def page(client, reviewer_a):
    client.force_login(reviewer_a)
    return client


def create(page) -> str:
    response = page.post("/account/token/", {"action": "create"})
    assert response.status_code == 201
    return TOKEN.search(response.content.decode()).group(1)


def test_a_new_token_is_shown_once_and_stored_only_as_a_digest(page, reviewer_a):
    assert b"You have no API token" in page.get("/account/token/").content
    key = create(page)
    assert works(key)
    listing = page.get("/account/token/").content.decode()
    assert key not in listing and key[:8] in listing  # a short prefix names it
    (stored,) = AuthToken.objects.filter(user=reviewer_a)
    assert key not in stored.digest and len(key) == 64
    with connection.cursor() as cursor:  # nowhere in the table, in clear
        cursor.execute(f"SELECT * FROM {AuthToken._meta.db_table}")
        assert not any(key in str(value) for row in cursor.fetchall() for value in row)


def test_several_tokens_each_revoked_on_its_own(page, reviewer_a):
    first, second = create(page), create(page)
    assert works(first) and works(second)
    digest = AuthToken.objects.get(user=reviewer_a, token_key=first[:15]).digest
    response = page.post("/account/token/", {"action": "revoke", "token": digest}, follow=True)
    assert b"Token revoked" in response.content
    assert not works(first) and works(second)


def test_revoke_all(page):
    keys = [create(page), create(page)]
    page.post("/account/token/", {"action": "revoke_all"})
    assert not any(works(key) for key in keys)


def test_nobody_revokes_someone_elses_token(page, reviewer_b):
    _, key = AuthToken.objects.create(user=reviewer_b)
    digest = AuthToken.objects.get(user=reviewer_b).digest
    response = page.post("/account/token/", {"action": "revoke", "token": digest}, follow=True)
    assert b"already revoked or has expired" in response.content
    assert works(key)


def test_a_token_expires(page, reviewer_a, settings):
    key = create(page)
    stored = AuthToken.objects.get(user=reviewer_a)
    assert abs(stored.expiry - stored.created - timedelta(days=30)) < timedelta(seconds=5)
    AuthToken.objects.filter(pk=stored.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    response = script(key).get(f"{API}/projects/")
    assert response.status_code == 401 and response.json() == {"detail": "Invalid token."}
    assert b"You have no API token" in page.get("/account/token/").content


def test_changing_the_password_revokes_every_token(page, reviewer_a):
    keys = [create(page), create(page)]
    user = get_user_model().objects.get(pk=reviewer_a.pk)
    user.set_password("a brand new passphrase")
    user.save()
    assert not any(works(key) for key in keys)


def test_add_member_reset_password_revokes_too(reviewer_a, team):
    _, key = AuthToken.objects.create(user=reviewer_a)
    call_command(
        "add_member", "small", reviewer_a.username, "--role", "reviewer",
        "--password", "another long passphrase", "--reset-password",
    )  # fmt: skip
    assert not works(key)


def test_an_inactive_account_cannot_use_its_token(reviewer_a):
    _, key = AuthToken.objects.create(user=reviewer_a)
    get_user_model().objects.filter(pk=reviewer_a.pk).update(is_active=False)
    assert not works(key)


def test_the_token_page_needs_a_login(client, db):
    assert client.get("/account/token/").status_code == 302


def test_an_address_sending_wrong_tokens_is_paused_with_429(page, reviewer_a, settings):
    """Past CLAIMDESK_TOKEN_FAILURE_LIMIT wrong tokens within the window, every token from
    that address is answered 429 with Retry-After, the right one too (a guesser must not
    learn which key was right); another address, and the browser's session, are not
    paused; the next window starts afresh."""
    settings.CLAIMDESK_TOKEN_FAILURE_LIMIT = 3
    settings.CLAIMDESK_TOKEN_FAILURE_WINDOW_SECONDS = 3600
    key = create(page)
    for guess in range(3):
        assert script(f"{guess:064x}").get(f"{API}/projects/").status_code == 401
    garbled = APIClient()
    garbled.credentials(HTTP_AUTHORIZATION="Token a b")
    paused = garbled.get(f"{API}/projects/")
    assert paused.status_code == 429 and int(paused["Retry-After"]) > 0
    assert "Too many wrong tokens" in paused.json()["detail"]
    assert script(key).get(f"{API}/projects/").status_code == 429
    elsewhere = script(key).get(f"{API}/projects/", REMOTE_ADDR="10.9.8.7")
    assert elsewhere.status_code == 200
    assert page.get(f"{API}/projects/").status_code == 200  # signed in: no token checked
    settings.CLAIMDESK_TOKEN_FAILURE_WINDOW_SECONDS = 1  # a new window
    time.sleep(1.1)
    assert works(key)


def test_a_token_that_is_not_utf8_is_a_401_and_counted(db, settings):
    settings.CLAIMDESK_TOKEN_FAILURE_LIMIT = 1
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token \xe9\xe9")
    assert client.get(f"{API}/projects/").status_code == 401
    assert client.get(f"{API}/projects/").status_code == 429
