"""Mounted by config/urls.py at p/<slug>/evaluation/ (namespace "evaluation"). The views are
imported on their first request (config.lazy): they carry the statistics stack."""

from django.urls import path

from config.lazy import lazy

app_name = "evaluation"
urlpatterns = [
    path("", lazy("evaluation.views.report.report"), name="report"),
]
