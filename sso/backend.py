"""Who a person signed in at the provider is here (mozilla-django-oidc's backend, through its
documented hooks: verify_claims, filter_users_by_claims, create_user, update_user).

An account is found by its username, which is the CLAIMDESK_OIDC_USERNAME_CLAIM claim
(preferred_username by default). The provider may sign in to an account only if it has no
usable password: one it created at a first login, or one a lead or an administrator set up
with no password (a members CSV, `createsuperuser --noinput`). An account with a password is
never taken over, whatever the provider says the person's name is: the login is refused, and
an administrator links them by switching the account's password off (README.md)."""

from __future__ import annotations

import logging

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import SuspiciousOperation, ValidationError
from django.db import transaction
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from sso import provider
from sso.roles import sync_roles

log = logging.getLogger(__name__)

_USERNAME = UnicodeUsernameValidator()
# Profile claims copied to the account at each login: the provider is their authority.
PROFILE = {"email": "email", "given_name": "first_name", "family_name": "last_name"}


class Refused(SuspiciousOperation):
    """A login the provider vouched for that is refused here; says why, for the login page.
    A SuspiciousOperation so that the library's get_or_create_user turns it into a failed
    login (None) instead of an error page."""


class SsoBackend(OIDCAuthenticationBackend):
    def __init__(self, *args, **kwargs):
        # The library's __init__ reads the provider's endpoints, and Django builds a backend
        # for every request of a person signed in with it (get_user): those requests must not
        # need the provider's discovery document. What a login reads is read then (below).
        self.UserModel = get_user_model()

    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: provider.endpoint("token_endpoint"))
    OIDC_OP_USER_ENDPOINT = property(lambda self: provider.endpoint("userinfo_endpoint"))
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: provider.endpoint("jwks_uri"))
    OIDC_RP_CLIENT_ID = property(lambda self: settings.OIDC_RP_CLIENT_ID)
    OIDC_RP_CLIENT_SECRET = property(lambda self: settings.OIDC_RP_CLIENT_SECRET)
    OIDC_RP_SIGN_ALGO = property(lambda self: settings.OIDC_RP_SIGN_ALGO)
    OIDC_RP_IDP_SIGN_KEY = property(lambda self: settings.OIDC_RP_IDP_SIGN_KEY)

    # The library's get_user returns switched-off accounts too; Django's refuses them, so a
    # person switched off in the admin loses the session they had.
    get_user = ModelBackend.get_user

    def authenticate(self, request, **kwargs):
        # Django asks every backend about every login: a password login is none of ours.
        if request is None or "nonce" not in kwargs:
            return None
        try:
            return super().authenticate(request, **kwargs)
        except (requests.RequestException, provider.ProviderUnavailable) as exc:
            log.warning("single sign-on: the provider did not answer: %s", exc)
            request.sso_refused = "The sign-in service did not answer. Try again in a minute."
        except SuspiciousOperation as exc:  # a token whose signature or nonce does not hold
            log.warning("single sign-on: %s", exc)
            request.sso_refused = "The sign-in could not be verified. Try again."
        return None

    def _username(self, claims) -> str:
        return claims.get(settings.CLAIMDESK_OIDC_USERNAME_CLAIM) or ""

    def describe_user_by_claims(self, claims):
        return f"username {self._username(claims)!r}"

    def verify_claims(self, claims):
        username = self._username(claims)
        try:
            if not isinstance(username, str) or not username or len(username) > 150:
                raise ValidationError("no username")
            _USERNAME(username)
        except ValidationError:
            claim = settings.CLAIMDESK_OIDC_USERNAME_CLAIM
            log.warning("single sign-on: claim %s is no username: %r", claim, username)
            self.request.sso_refused = (
                f"The sign-in service gave no usable username (its {claim} claim). "
                "Ask your administrator."
            )
            return False
        return True

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(username=self._username(claims))

    @transaction.atomic
    def create_user(self, claims):
        user = self.UserModel.objects.create_user(
            self._username(claims),
            **self._profile(claims),
        )  # no password given: the account's password is unusable
        self._sync_roles(user, claims)
        return user

    @transaction.atomic
    def update_user(self, user, claims):
        if user.has_usable_password():
            log.warning("single sign-on: %s has a password; not signed in", user.get_username())
            raise self._refuse(
                f"An account named {user.get_username()} already logs in with a password, so "
                "single sign-on does not take it over. Ask your administrator to link them."
            )
        if not user.is_active:
            raise self._refuse("This account is switched off. Ask your evaluation lead.")
        changed = []
        for field, value in self._profile(claims).items():
            if getattr(user, field) != value:
                setattr(user, field, value)
                changed.append(field)
        if changed:
            user.save(update_fields=changed)
        self._sync_roles(user, claims)
        return user

    def _profile(self, claims) -> dict[str, str]:
        """The account's fields the claims give, cut to the fields' lengths."""
        fields = {}
        for claim, field in PROFILE.items():
            value = claims.get(claim)
            if isinstance(value, str) and value:
                fields[field] = value[: self.UserModel._meta.get_field(field).max_length]
        return fields

    def _refuse(self, message: str) -> Refused:
        self.request.sso_refused = message
        return Refused(message)

    def _sync_roles(self, user, claims) -> None:
        mapping = settings.CLAIMDESK_OIDC_ROLES
        sync_roles(user=user, roles=mapping.roles_for(claims), owned=mapping.owned)
