from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from annotate.labelling.views import preferences
from annotate.members import token_views
from config.lazy import lazy

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "p/<slug:slug>/agreement/", lazy("evaluation.views.agreement.agreement"), name="agreement"
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
