"""Every API answer is JSON, errors included: a script that parses the body must never get
Django's HTML error page. Pages keep theirs."""

from __future__ import annotations

import pytest
from django.test import Client

from annotate.api.projects import ProjectList
from tests.api import API, token_client


def boom(*args, **kwargs):
    raise RuntimeError("the database fell over")


def test_an_exception_in_an_api_view_is_a_json_500(db, lead, monkeypatch):
    monkeypatch.setattr(ProjectList, "get", boom)
    client = token_client(lead)
    client.raise_request_exception = False
    response = client.get(f"{API}/projects/")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert "logged" in response.json()["detail"]
    assert "the database fell over" not in response.content.decode()  # no internals


def test_the_exception_is_still_reported_as_django_reports_one(db, lead, monkeypatch, caplog):
    monkeypatch.setattr(ProjectList, "get", boom)
    client = token_client(lead)
    client.raise_request_exception = False
    with caplog.at_level("ERROR", logger="django.request"):
        client.get(f"{API}/projects/")
    (record,) = [r for r in caplog.records if r.name == "django.request"]
    assert record.status_code == 500 and record.exc_info[0] is RuntimeError


def _api_catch_all():
    from config import api_urls

    return api_urls.urlpatterns[-1]  # re_path(r"^api/", not_found)


def test_an_exception_outside_drf_under_api_is_a_json_500(db, monkeypatch):
    monkeypatch.setattr(_api_catch_all(), "callback", boom)
    response = Client(raise_request_exception=False).get("/api/not-a-thing/")
    assert response.status_code == 500
    assert response.json() == {
        "detail": "Server error: the request failed on our side and has been logged."
    }


@pytest.mark.parametrize("path", ["/api/v1/nowhere/", "/api/schema/nowhere/"])
def test_unknown_api_paths_are_json_404s(db, path):
    response = Client().get(path)
    assert response.status_code == 404 and response.json() == {"detail": "Not found."}


def test_a_request_django_refuses_under_api_is_a_json_400(db):
    response = Client().get(f"{API}/projects/", HTTP_HOST="evil.example")
    assert response.status_code == 400 and response.json() == {"detail": "Bad request."}


def test_pages_keep_their_html_500(db, lead, monkeypatch):
    from annotate.projects import views

    monkeypatch.setattr(views, "projects_for", boom)
    client = Client(raise_request_exception=False)
    client.force_login(lead)
    response = client.get("/")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")
