from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from evaluation import agreement_views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("p/<slug:slug>/agreement/", agreement_views.agreement, name="agreement"),
    path("p/<slug:slug>/evaluation/", include("evaluation.urls")),
    path("p/<slug:slug>/judges/", include("evaluation.judge_urls")),
    path("", include("annotate.urls")),
]
