"""Login throttling (django-axes) on /login/ and /admin/login/: after AXES_FAILURE_LIMIT
wrong passwords for one username from one address, that pair is refused -- the right
password too -- with the login page saying why, until the cool-off has passed."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.test import Client
from django.utils import timezone

from tests.conftest import PASSWORD

LIMIT = 5


@pytest.fixture(autouse=True)
def throttle(settings):
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.AXES_COOLOFF_TIME = timedelta(minutes=15)


@pytest.fixture
def admin_user(db):
    return get_user_model().objects.create_superuser("root", password=PASSWORD)


def log_in(client, path, username, password, address="192.0.2.10"):
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=address)


def fail(client, path, username, times=LIMIT, address="192.0.2.10"):
    for _ in range(times):
        response = log_in(client, path, username, "wrong password", address)
    return response


def signed_in(client) -> bool:
    return "_auth_user_id" in client.session


def test_the_right_password_is_refused_after_too_many_wrong_ones(client, reviewer_a):
    fail(client, "/login/", reviewer_a.username)
    response = log_in(client, "/login/", reviewer_a.username, PASSWORD)
    assert response.status_code == 429 and not signed_in(client)
    page = response.content.decode()
    assert "Too many failed logins" in page and "15 minutes" in page
    assert 'name="password"' in page  # still the login page


def test_fewer_failures_than_the_limit_do_not_lock(client, reviewer_a):
    fail(client, "/login/", reviewer_a.username, times=LIMIT - 1)
    assert log_in(client, "/login/", reviewer_a.username, PASSWORD).status_code == 302
    assert signed_in(client)


def test_the_admin_login_is_throttled_too(client, admin_user):
    fail(client, "/admin/login/", admin_user.username)
    response = log_in(client, "/admin/login/", admin_user.username, PASSWORD)
    assert response.status_code == 429 and not signed_in(client)


def test_another_person_is_not_locked(client, reviewer_a, reviewer_b):
    fail(client, "/login/", reviewer_a.username)
    assert log_in(client, "/login/", reviewer_b.username, PASSWORD).status_code == 302


def test_the_same_person_from_another_address_is_not_locked(client, reviewer_a):
    fail(client, "/login/", reviewer_a.username, address="192.0.2.66")
    assert log_in(client, "/login/", reviewer_a.username, PASSWORD).status_code == 302


def test_the_lockout_ends_after_the_cool_off(client, reviewer_a, settings):
    fail(client, "/login/", reviewer_a.username)
    assert log_in(client, "/login/", reviewer_a.username, PASSWORD).status_code == 429
    # The clock moves on past the cool-off: the attempts are now that old.
    past = timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=past)
    assert log_in(client, "/login/", reviewer_a.username, PASSWORD).status_code == 302


def test_a_lockout_reads_the_same_for_an_account_that_does_not_exist(client, reviewer_a):
    real = fail(Client(), "/login/", reviewer_a.username, times=LIMIT + 1)
    made_up = fail(Client(), "/login/", "nobody-here", times=LIMIT + 1)
    assert real.status_code == made_up.status_code == 429
    strip = {reviewer_a.username: "X", "nobody-here": "X"}

    def text(response):
        body = re.sub(r"[A-Za-z0-9]{64}", "CSRF", response.content.decode())
        for name, mark in strip.items():
            body = body.replace(name, mark)
        return body

    assert text(real) == text(made_up)
