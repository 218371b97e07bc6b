"""API tokens, kept by django-rest-knox: the database holds only a SHA-512 digest of each
token and its first characters (to find it), so a leaked backup gives no working token.
A token expires after CLAIMDESK_TOKEN_DAYS; a person may hold several (one per script or
machine) and revoke each; changing a password revokes them all."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone
from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
from knox import auth
from knox.models import AuthToken
from knox.settings import knox_settings
from rest_framework.authentication import get_authorization_header
from rest_framework.exceptions import AuthenticationFailed, Throttled

from config.proxies import client_ip

SHOWN_PREFIX = 8  # of the 15 stored characters: enough to tell tokens apart, never to use one


@dataclass(frozen=True)
class TokenRow:
    id: str  # knox's digest of the token: names it for revoking, reveals nothing of it
    prefix: str
    created: object
    expires: object


def token_days() -> int:
    return knox_settings.TOKEN_TTL.days


def tokens_for(user) -> list[TokenRow]:
    """The person's tokens that still work, newest first."""
    rows = AuthToken.objects.filter(user=user, expiry__gt=timezone.now()).order_by("-created")
    return [
        TokenRow(
            id=t.digest, prefix=t.token_key[:SHOWN_PREFIX], created=t.created, expires=t.expiry
        )
        for t in rows
    ]


@transaction.atomic
def create_token(*, user) -> str:
    """A new token for `user`; the return value is the only time it exists in clear. Expired
    tokens are deleted on the way."""
    AuthToken.objects.filter(user=user, expiry__lte=timezone.now()).delete()
    _, key = AuthToken.objects.create(user=user, expiry=knox_settings.TOKEN_TTL)
    return key


def revoke_token(*, user, token_id: str) -> bool:
    """Revoke one of the person's own tokens; False when there was none such."""
    deleted, _ = AuthToken.objects.filter(user=user, digest=token_id).delete()
    return deleted > 0


def revoke_all(*, user) -> int:
    deleted, _ = AuthToken.objects.filter(user=user).delete()
    return deleted


class RevokeTokensOnPasswordChange:
    """Listed in AUTH_PASSWORD_VALIDATORS for its `password_changed` hook, which Django calls
    after every password change that goes through set_password() and save(): the admin, the
    changepassword command, `add_member --reset-password`. Django has no signal for it, and
    a new password must end every script that used the old login's tokens. It validates
    nothing."""

    def validate(self, password, user=None) -> None:
        return None

    def password_changed(self, password, user=None) -> None:
        if user is not None and user.pk is not None:
            revoke_all(user=user)

    def get_help_text(self) -> str:
        return ""


# --- Checking a token ----------------------------------------------------------------------


class TokenAuthentication(auth.TokenAuthentication):
    """knox's check of `Authorization: Token <key>`, paused for an address that keeps sending
    wrong ones: after CLAIMDESK_TOKEN_FAILURE_LIMIT wrong tokens from one address (the
    client's, as config.proxies reads it) within a window of
    CLAIMDESK_TOKEN_FAILURE_WINDOW_SECONDS, every token from there is answered 429 with
    Retry-After, unchecked, until the window ends. Unchecked, a right token included: were it
    let through, a 429 would tell a guesser that a key was wrong as well as a 401 does.

    The count is kept in Django's cache, which is each server process's own memory unless a
    shared cache is configured: the limit is per process. A request without a token, or
    signed in with its session, is not counted."""

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != self.authenticate_header(request).lower().encode():
            return None  # no token: the session, or a 401
        key, wait = _failure_window(request)
        if (cache.get(key) or 0) >= settings.CLAIMDESK_TOKEN_FAILURE_LIMIT:
            raise Throttled(
                wait=wait,
                detail=f"Too many wrong tokens from your address: try again in {wait} s.",
            )
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            _count_failure(key, wait)
            raise
        except UnicodeDecodeError:  # knox decodes the key as UTF-8; a header may be any bytes
            _count_failure(key, wait)
            raise AuthenticationFailed("Invalid token.") from None


class TokenScheme(KnoxTokenScheme):
    """The OpenAPI schema's security scheme for it: knox's own (drf-spectacular registers an
    extension by the class it names, not by its subclasses)."""

    target_class = "annotate.members.tokens.TokenAuthentication"


def _count_failure(key: str, wait: int) -> None:
    if not cache.add(key, 1, timeout=wait):
        try:
            cache.incr(key)
        except ValueError:  # the window ended between the two calls
            cache.set(key, 1, timeout=wait)


def _failure_window(request) -> tuple[str, int]:
    """The cache key counting this address's wrong tokens in the current window, and the
    seconds left in that window."""
    length = max(1, settings.CLAIMDESK_TOKEN_FAILURE_WINDOW_SECONDS)
    now = int(time.time())
    address = client_ip(request) or "unknown"
    return f"claimdesk:wrong-tokens:{address}:{now // length}", length - now % length
