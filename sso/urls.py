"""/oidc/: a login's start at the provider and its return (register
https://<your host>/oidc/callback/ as the redirect URI). The names are mozilla-django-oidc's,
which it reverses itself."""

from django.urls import path

from sso import views

urlpatterns = [
    path("authenticate/", views.StartLogin.as_view(), name="oidc_authentication_init"),
    path("callback/", views.Callback.as_view(), name="oidc_authentication_callback"),
]
