"""Mounted by config/urls.py at p/<slug>/evaluation/ (namespace "evaluation")."""

from django.urls import path

from evaluation import views

app_name = "evaluation"
urlpatterns = [
    path("", views.report, name="report"),
]
