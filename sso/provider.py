"""Where the provider's endpoints are: the OIDC_OP_*_ENDPOINT settings, or else its discovery
document (OIDC_OP_DISCOVERY_URL), fetched at the first login that needs it and kept for the
life of the process. Not at start-up: a provider that is down must not stop the server, nor
the pages of people already signed in; it fails only the logins made while it is down."""

from __future__ import annotations

import functools

import requests
from django.conf import settings

# The discovery document's name for each endpoint -> the setting that overrides it.
SETTINGS = {
    "authorization_endpoint": "OIDC_OP_AUTHORIZATION_ENDPOINT",
    "token_endpoint": "OIDC_OP_TOKEN_ENDPOINT",
    "userinfo_endpoint": "OIDC_OP_USER_ENDPOINT",
    "jwks_uri": "OIDC_OP_JWKS_ENDPOINT",
    "end_session_endpoint": "OIDC_OP_LOGOUT_ENDPOINT",
}


class ProviderUnavailable(Exception):
    """The provider's discovery document could not be read, or lacks an endpoint."""


def endpoint(name: str, *, required: bool = True) -> str:
    """The endpoint the discovery document calls ``name``; "" for a missing one that is not
    required (end_session_endpoint: not every provider has one)."""
    configured = getattr(settings, SETTINGS[name], "")
    if configured or not settings.OIDC_OP_DISCOVERY_URL:
        return configured
    value = _discovery(settings.OIDC_OP_DISCOVERY_URL).get(name) or ""
    if required and not value:
        raise ProviderUnavailable(f"the provider's discovery document names no {name}")
    return value


@functools.lru_cache(maxsize=4)  # a failure raises, so it is not kept: the next login retries
def _discovery(url: str) -> dict:
    try:
        response = requests.get(url, timeout=settings.OIDC_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(f"{url}: {exc}") from exc
    if not isinstance(document, dict):
        raise ProviderUnavailable(f"{url}: not a discovery document")
    return document


def forget() -> None:
    """Drop the kept discovery documents (tests; a provider that moved its endpoints)."""
    _discovery.cache_clear()
