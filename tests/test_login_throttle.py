"""Login throttling (django-axes) on /login/ and /admin/login/: after AXES_FAILURE_LIMIT
wrong passwords for one username from one address, that pair is refused -- the right
password too -- with the login page saying why, until the cool-off has passed. Behind
reverse proxies (CLAIMDESK_PROXY_COUNT) the address is the client's, not the proxy's."""

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


def log_in(client, path, username, password, address="192.0.2.10", forwarded=None):
    extra = {} if forwarded is None else {"HTTP_X_FORWARDED_FOR": forwarded}
    data = {"username": username, "password": password}
    return client.post(path, data, REMOTE_ADDR=address, **extra)


def fail(client, path, username, times=LIMIT, address="192.0.2.10", forwarded=None):
    for _ in range(times):
        response = log_in(client, path, username, "wrong password", address, forwarded)
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


# --- Behind reverse proxies ----------------------------------------------------------------

PROXY = "10.0.0.2"  # what REMOTE_ADDR is for every request that came through the proxy


def test_without_proxies_a_forwarded_header_changes_nothing(client, reviewer_a):
    """X-Forwarded-For is the client's to write: a new value on each try escapes nothing."""
    for n in range(LIMIT):
        log_in(client, "/login/", reviewer_a.username, "wrong", forwarded=f"198.51.100.{n}")
    response = log_in(client, "/login/", reviewer_a.username, PASSWORD, forwarded="198.51.100.99")
    assert response.status_code == 429


def test_behind_a_proxy_the_lockout_is_the_client_s_not_everyone_s(client, reviewer_a, settings):
    settings.CLAIMDESK_PROXY_COUNT = 1
    fail(client, "/login/", reviewer_a.username, address=PROXY, forwarded="198.51.100.7")
    locked = log_in(client, "/login/", reviewer_a.username, PASSWORD, PROXY, "198.51.100.7")
    assert locked.status_code == 429
    # the same person from elsewhere, through the same proxy, gets in
    other = log_in(Client(), "/login/", reviewer_a.username, PASSWORD, PROXY, "203.0.113.40")
    assert other.status_code == 302
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.7"}


def test_behind_a_proxy_what_the_client_wrote_before_the_proxy_s_entry_is_ignored(
    client, reviewer_a, settings
):
    """The proxy appends the address it saw; entries to its left came with the request."""
    settings.CLAIMDESK_PROXY_COUNT = 1
    for n in range(LIMIT):
        forged = f"192.0.2.{n}, 198.51.100.7"
        log_in(client, "/login/", reviewer_a.username, "wrong", PROXY, forged)
    response = log_in(client, "/login/", reviewer_a.username, PASSWORD, PROXY, "198.51.100.7")
    assert response.status_code == 429


@pytest.mark.parametrize(
    ("count", "remote", "forwarded", "address"),
    [
        (0, "192.0.2.10", "198.51.100.7", "192.0.2.10"),
        (1, PROXY, "198.51.100.7", "198.51.100.7"),
        (1, PROXY, "192.0.2.1, 198.51.100.7", "198.51.100.7"),
        (2, PROXY, "192.0.2.1, 198.51.100.7, 10.0.0.9", "198.51.100.7"),
        (2, PROXY, "198.51.100.7", PROXY),  # came through fewer proxies than configured
        (1, PROXY, None, PROXY),
        (1, PROXY, "unknown", PROXY),
        (1, PROXY, "2001:db8::1", "2001:db8::1"),
    ],
)
def test_the_client_address_behind_n_proxies(settings, count, remote, forwarded, address):
    from django.test import RequestFactory

    from config.proxies import client_ip

    settings.CLAIMDESK_PROXY_COUNT = count
    extra = {} if forwarded is None else {"HTTP_X_FORWARDED_FOR": forwarded}
    request = RequestFactory().get("/login/", REMOTE_ADDR=remote, **extra)
    assert client_ip(request) == address
