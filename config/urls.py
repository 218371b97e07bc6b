from django.contrib import admin
from django.urls import include, path

from annotate.labelling.views import preferences
from annotate.members import token_views
from config.lazy import lazy
from jobs import kinds
from sso import views as sso_views

# Every app's job kinds (its tasks module), as the URLconf loads, as admin.autodiscover() did:
# else a web process's first look at a job would import the importers in the middle of a
# request -- between reading a job's heartbeat and judging it, seconds on a busy machine.
kinds.discover()

urlpatterns = [
    # Before the admin's own: with password login off it sends people to the login page.
    path("admin/login/", sso_views.admin_login),
    path("admin/", admin.site.urls),
    path("login/", sso_views.LoginPage.as_view(), name="login"),
    path("logout/", sso_views.Logout.as_view(), name="logout"),
    path("oidc/", include("sso.urls")),
    path(
        "p/<slug:slug>/agreement/", lazy("evaluation.views.agreement.agreement"), name="agreement"
    ),
    path(
        "p/<slug:slug>/reviewers/", lazy("evaluation.views.reviewers.reviewers"), name="reviewers"
    ),
    path(
        "p/<slug:slug>/reviewers/<str:username>/clear-drift/",
        lazy("evaluation.views.reviewers.clear_drift"),
        name="reviewers_clear_drift",
    ),
    path("p/<slug:slug>/evaluation/", include("evaluation.urls")),
    path("p/<slug:slug>/judges/", include("evaluation.judges.urls")),
    path("account/token/", token_views.tokens, name="api_token"),
    path("account/preferences/", preferences, name="preferences"),
    path("", include("jobs.urls")),
    path("", include("config.api_urls")),
    path("", include("annotate.urls")),
]

handler400 = "config.errors.bad_request"
handler403 = "config.errors.permission_denied"
handler404 = "config.errors.page_not_found"
handler500 = "config.errors.server_error"
