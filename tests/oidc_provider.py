"""A real OpenID Connect provider for the single sign-on tests: oidc-provider-mock's Flask app
served over HTTP on a port the OS assigns, with three people the tests sign in as, and the
settings that point claimdesk at it. Its sign-in page is a form with a button per person."""

from __future__ import annotations

import copy
import json
import threading
from urllib.parse import urlsplit

import pytest
import requests
import werkzeug.serving
from oidc_provider_mock import User
from oidc_provider_mock import app as provider_app

from sso import provider
from sso.mapping import parse_role_mapping

CLIENT_ID = "claimdesk"
CLIENT_SECRET = "client secret"
PROVIDER_NAME = "Example ID"

# The provider's people, by subject; their usernames are their preferred_username.
PEOPLE = {
    "rita": {"groups": ["eval-reviewers"]},
    "leo": {"groups": ["eval-leads", "eval-reviewers"]},
    "nora": {"groups": ["marketing"]},
}
ROLES = {
    "claim": "groups",
    "map": {
        "eval-leads": {"demo": "lead"},
        "eval-reviewers": {"demo": "reviewer", "small": "reviewer"},
    },
}
BACKENDS = {
    "axes": "axes.backends.AxesStandaloneBackend",
    "password": "django.contrib.auth.backends.ModelBackend",
    "sso": "sso.backend.SsoBackend",
}


def claims(sub: str, **extra) -> dict:
    return {
        "preferred_username": sub,
        "email": f"{sub}@example.com",
        "given_name": sub.capitalize(),
        "family_name": "Example",
        **PEOPLE.get(sub, {}),
        **extra,
    }


@pytest.fixture
def oidc_provider(monkeypatch):
    """The provider's address. Plain http on the loopback: authlib needs telling."""
    monkeypatch.setenv("AUTHLIB_INSECURE_TRANSPORT", "1")
    app = provider_app(
        require_nonce=True, user_claims=[User(sub=sub, claims=claims(sub)) for sub in PEOPLE]
    )
    server = werkzeug.serving.make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(5)
        server.server_close()


def set_claims(provider_url: str, sub: str, **extra) -> None:
    """Change what the provider says of ``sub`` from the next sign-in on (its /users API)."""
    response = requests.put(f"{provider_url}/users/{sub}", json=claims(sub, **extra), timeout=10)
    response.raise_for_status()


@pytest.fixture
def sso(settings, oidc_provider):
    """Single sign-on on, against the provider, beside password login (as config/settings.py
    makes it from the environment: tests/sso/test_settings.py)."""
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_OP_DISCOVERY_URL = f"{oidc_provider}/.well-known/openid-configuration"
    settings.CLAIMDESK_OIDC_PROVIDER_NAME = PROVIDER_NAME
    settings.CLAIMDESK_OIDC_ROLES = parse_role_mapping(json.dumps(ROLES))
    settings.AUTHENTICATION_BACKENDS = [BACKENDS["axes"], BACKENDS["password"], BACKENDS["sso"]]
    policy = copy.deepcopy(settings.CONTENT_SECURITY_POLICY)
    policy["DIRECTIVES"]["form-action"].append(oidc_provider)
    settings.CONTENT_SECURITY_POLICY = policy
    provider.forget()
    yield oidc_provider
    provider.forget()


def passwords_off(settings) -> None:
    settings.CLAIMDESK_PASSWORD_LOGIN = False
    settings.AUTHENTICATION_BACKENDS = [BACKENDS["axes"], BACKENDS["sso"]]


def sign_in(client, sub: str, *, next: str = ""):
    """Sign in through the provider as ``sub`` with Django's test client: the start, the
    provider's sign-in form (its button for ``sub``, posted over HTTP), and the return.
    Returns the return's response."""
    start = client.get("/oidc/authenticate/", {"next": next} if next else {})
    assert start.status_code == 302, start
    at_provider = requests.post(
        start["Location"], data={"sub": sub}, allow_redirects=False, timeout=10
    )
    assert at_provider.status_code == 302, at_provider.text
    back = urlsplit(at_provider.headers["Location"])
    assert back.path == "/oidc/callback/"
    return client.get(f"{back.path}?{back.query}")
