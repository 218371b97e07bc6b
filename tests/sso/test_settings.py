"""Single sign-on is configured by the environment alone (config/settings.py): off without
it; on, the backends, the mapping and the Content-Security-Policy's form-action follow; a
setting that cannot work stops the start with every problem named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHOW = """
import django, json
django.setup()
from django.conf import settings as s
print(json.dumps({
    "backends": s.AUTHENTICATION_BACKENDS,
    "form_action": s.CONTENT_SECURITY_POLICY["DIRECTIVES"]["form-action"],
    "owned": sorted(s.CLAIMDESK_OIDC_ROLES.owned),
    "password_login": s.CLAIMDESK_PASSWORD_LOGIN,
    "store_id_token": s.OIDC_STORE_ID_TOKEN,
    "algorithm": s.OIDC_RP_SIGN_ALGO,
}))
"""
SSO = {
    "OIDC_RP_CLIENT_ID": "claimdesk",
    "OIDC_RP_CLIENT_SECRET": "secret",
    "OIDC_OP_DISCOVERY_URL": "https://id.example.com/realms/acme/.well-known/openid-configuration",
}


def load(**env: str) -> subprocess.CompletedProcess:
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OIDC_", "CLAIMDESK_OIDC_", "CLAIMDESK_PASSWORD"))
    }
    environment.update(env, DJANGO_SETTINGS_MODULE="config.settings")
    return subprocess.run(
        [sys.executable, "-c", SHOW], cwd=ROOT, env=environment, capture_output=True, text=True
    )


def shown(**env: str) -> dict:
    result = load(**env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def refused(**env: str) -> str:
    result = load(**env)
    assert result.returncode != 0
    return result.stderr.strip().splitlines()[-1]


def test_without_the_environment_nothing_changes():
    settings = shown()
    assert settings["backends"] == [
        "axes.backends.AxesStandaloneBackend",
        "django.contrib.auth.backends.ModelBackend",
    ]
    assert settings["form_action"] == ["'self'"] and settings["password_login"]
    assert settings["owned"] == []


def test_a_client_id_and_a_provider_switch_it_on_beside_passwords():
    settings = shown(
        **SSO,
        CLAIMDESK_OIDC_ROLES=json.dumps({"map": {"eval-leads": {"demo": "lead"}}}),
    )
    assert settings["backends"] == [
        "axes.backends.AxesStandaloneBackend",
        "django.contrib.auth.backends.ModelBackend",
        "sso.backend.SsoBackend",
    ]
    assert settings["form_action"] == ["'self'", "https://id.example.com"]
    assert settings["owned"] == ["demo"] and settings["algorithm"] == "RS256"
    assert not settings["store_id_token"]


def test_password_login_off_leaves_only_the_provider():
    settings = shown(**SSO, CLAIMDESK_PASSWORD_LOGIN="false")
    assert settings["backends"] == ["axes.backends.AxesStandaloneBackend", "sso.backend.SsoBackend"]
    assert not settings["password_login"]


def test_endpoints_given_one_by_one_and_logout_at_the_provider():
    settings = shown(
        OIDC_RP_CLIENT_ID="claimdesk",
        OIDC_OP_AUTHORIZATION_ENDPOINT="https://login.example.com/authorize",
        OIDC_OP_TOKEN_ENDPOINT="https://api.example.com/token",
        OIDC_OP_USER_ENDPOINT="https://api.example.com/userinfo",
        OIDC_OP_JWKS_ENDPOINT="https://api.example.com/jwks",
        OIDC_OP_LOGOUT_ENDPOINT="https://logout.example.com/end",
        CLAIMDESK_OIDC_PROVIDER_LOGOUT="true",
    )
    assert settings["form_action"] == [
        "'self'",
        "https://login.example.com",
        "https://logout.example.com",
    ]
    assert settings["store_id_token"]


def test_settings_that_cannot_work_stop_the_start():
    assert refused(CLAIMDESK_PASSWORD_LOGIN="false") == (
        "django.core.exceptions.ImproperlyConfigured: CLAIMDESK_PASSWORD_LOGIN=false needs "
        "single sign-on on (OIDC_RP_CLIENT_ID)"
    )
    assert refused(
        OIDC_RP_CLIENT_ID="claimdesk", OIDC_OP_TOKEN_ENDPOINT="https://id.example.com/token"
    ) == (
        "django.core.exceptions.ImproperlyConfigured: single sign-on needs "
        "OIDC_OP_DISCOVERY_URL, or OIDC_OP_AUTHORIZATION_ENDPOINT, OIDC_OP_USER_ENDPOINT, "
        "OIDC_OP_JWKS_ENDPOINT"
    )
    assert refused(**SSO, CLAIMDESK_OIDC_ROLES='{"map": {"staff": {"demo": "admin"}}}') == (
        "django.core.exceptions.ImproperlyConfigured: CLAIMDESK_OIDC_ROLES: "
        "map.staff.demo: unknown role 'admin' (use reviewer or lead)"
    )
