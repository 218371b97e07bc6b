"""API tokens, kept by django-rest-knox: the database holds only a SHA-512 digest of each
token and its first characters (to find it), so a leaked backup gives no working token.
A token expires after CLAIMDESK_TOKEN_DAYS; a person may hold several (one per script or
machine) and revoke each; changing a password revokes them all."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone
from knox.models import AuthToken
from knox.settings import knox_settings

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
