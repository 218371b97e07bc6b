"""Signing in and out: the login page (the password form, the provider's button, or both), the
admin's login, a login's start at the provider and its return, and logout.

Both switches are read per request, from CLAIMDESK_PASSWORD_LOGIN and OIDC_RP_CLIENT_ID (set:
single sign-on is on), so a test can flip them with Django's settings."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import redirect, resolve_url
from django.urls import reverse
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from sso import provider

log = logging.getLogger(__name__)

PROVIDER_DOWN = "The sign-in service did not answer. Try again in a minute."


def sso_enabled() -> bool:
    return bool(settings.OIDC_RP_CLIENT_ID)


def password_login() -> bool:
    return settings.CLAIMDESK_PASSWORD_LOGIN


def sign_in_options(request) -> dict:
    """Context processor: what the login page offers. A processor, not the login view's
    context, because django-axes' lockout answer renders the same page (AXES_LOCKOUT_CALLABLE)."""
    return {
        "sso_enabled": sso_enabled(),
        "sso_name": settings.CLAIMDESK_OIDC_PROVIDER_NAME,
        "password_login": password_login(),
    }


class LoginPage(auth_views.LoginView):
    redirect_authenticated_user = True

    def post(self, request, *args, **kwargs):
        # With password login off the form is gone, and a password posted anyway is refused
        # here, before it reaches a backend (ModelBackend is not listed either: settings.py).
        if not password_login():
            context = self.get_context_data(password_refused=True)
            return self.render_to_response(context, status=403)
        return super().post(request, *args, **kwargs)


def admin_login(request):
    """The admin's own login form while passwords are on; else the login page, which comes
    back to the admin once signed in (a staff account signs in with the provider like anyone).
    Someone signed in who may not use the admin gets 403: the login page would send them
    straight back to the admin, and the admin here."""
    if password_login():
        return admin.site.login(request)
    if admin.site.has_permission(request):
        return redirect("admin:index")
    if request.user.is_authenticated:
        raise PermissionDenied
    return redirect_to_login(request.GET.get("next") or reverse("admin:index"))


class StartLogin(OIDCAuthenticationRequestView):
    """Sends the browser to the provider's authorization endpoint (mozilla-django-oidc keeps
    the state, nonce and PKCE verifier in the session and the next page to show)."""

    def get(self, request):
        if not sso_enabled():
            raise Http404
        try:
            self.OIDC_OP_AUTH_ENDPOINT = provider.endpoint("authorization_endpoint")
        except provider.ProviderUnavailable as exc:
            log.warning("single sign-on: %s", exc)
            messages.error(request, PROVIDER_DOWN)
            return redirect_to_login(request.GET.get("next") or resolve_url("home"))
        return super().get(request)


class Callback(OIDCAuthenticationCallbackView):
    """Where the provider sends the browser back: the code is exchanged and the person signed
    in (sso.backend), or the login page says why not."""

    def get(self, request):
        if not sso_enabled():
            raise Http404
        return super().get(request)

    @property
    def failure_url(self):
        return resolve_url(settings.LOGIN_URL)

    def login_failure(self):
        if self.request.GET.get("error") == "access_denied":
            reason = "Signing in was cancelled at the sign-in service."
        else:
            reason = getattr(self.request, "sso_refused", "Signing in did not complete. Try again.")
        messages.error(self.request, reason)
        return super().login_failure()


class Logout(auth_views.LogoutView):
    """Ends the session here; with CLAIMDESK_OIDC_PROVIDER_LOGOUT, a session that single
    sign-on began also ends at the provider (its end_session_endpoint), which sends the
    browser back to the login page."""

    def post(self, request, *args, **kwargs):
        id_token = request.session.get("oidc_id_token")
        response = super().post(request, *args, **kwargs)
        if not (id_token and settings.CLAIMDESK_OIDC_PROVIDER_LOGOUT):
            return response
        try:
            end_session = provider.endpoint("end_session_endpoint", required=False)
        except provider.ProviderUnavailable as exc:
            log.warning("single sign-on: no logout at the provider: %s", exc)
            return response
        if not end_session:
            return response
        query = urlencode(
            {
                "id_token_hint": id_token,
                "client_id": settings.OIDC_RP_CLIENT_ID,
                "post_logout_redirect_uri": request.build_absolute_uri(
                    getattr(response, "url", None) or resolve_url(settings.LOGIN_URL)
                ),
            }
        )
        return HttpResponseRedirect(f"{end_session}?{query}")


def not_a_password_login(request, credentials) -> bool:
    """AXES_WHITELIST_CALLABLE: the provider's return is no password guess, so django-axes
    neither counts nor locks it. Its authenticate() call carries the nonce (and the PKCE
    verifier); a password login's never does. A person's failed returns from one office
    address would otherwise lock single sign-on for everyone behind that address."""
    return "nonce" in (credentials or {})
