"""Uploads fit the deployment: a bundle, labels or judge-run file past CLAIMDESK_MAX_UPLOAD_MB
is refused with a clear message -- a field error on the pages, 413 with a JSON detail in the
API -- and a body far past it is refused before it is read."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotate.models import Project
from tests.api import API, JSONL, finished_job, token_client
from tests.conftest import PASSWORD, may_create_projects

MB = 1024 * 1024
LIMITED = "uploads are limited to 1 MB"


@pytest.fixture(autouse=True)
def one_megabyte(settings):
    settings.CLAIMDESK_MAX_UPLOAD_MB = 1


def body(megabytes: float) -> bytes:
    line = b'{"type": "passage", "passage_id": "p", "text": "' + b"x" * 1000 + b'"}\n'
    return line * int(megabytes * MB / len(line) + 1)


def upload(megabytes: float) -> SimpleUploadedFile:
    return SimpleUploadedFile("big.jsonl", body(megabytes), content_type=JSONL)


@pytest.fixture
def browser(team, lead) -> Client:
    may_create_projects(lead)
    client = Client()
    client.login(username=lead.username, password=PASSWORD)
    return client


def test_the_new_project_page_refuses_a_big_bundle_with_a_field_error(browser):
    response = browser.post("/projects/new/", {"slug": "big", "file": upload(1.2)})
    assert response.status_code == 400
    assert LIMITED in response.content.decode()
    assert not Project.objects.filter(slug="big").exists()


def test_the_upload_page_refuses_a_big_bundle_with_a_field_error(browser):
    response = browser.post("/p/small/upload/", {"file": upload(1.2)})
    assert response.status_code == 400 and LIMITED in response.content.decode()


def test_the_judge_upload_refuses_a_big_run_with_a_field_error(browser):
    response = browser.post("/p/small/judges/upload/", {"file": upload(1.2)})
    assert response.status_code == 400 and LIMITED in response.content.decode()


def test_the_upload_forms_tell_the_browser_the_limit(browser):
    for path in ("/projects/new/", "/p/small/upload/", "/p/small/judges/"):
        assert f'data-max-bytes="{MB}"' in browser.get(path).content.decode(), path


@pytest.mark.parametrize("path", ["projects/small/bundle/", "projects/small/labels/"])
def test_the_api_answers_413_for_a_big_raw_body(team, lead, path):
    response = token_client(lead).post(f"{API}/{path}", body(1.2), content_type=JSONL)
    assert response.status_code == 413 and LIMITED in response.json()["detail"]


@pytest.mark.parametrize(
    "path",
    ["projects/", "projects/small/bundle/", "projects/small/labels/", "projects/small/judge-runs/"],
)
def test_the_api_answers_413_for_a_big_multipart_file(team, lead, path):
    response = token_client(lead).post(f"{API}/{path}", {"slug": "big", "file": upload(1.2)})
    assert response.status_code == 413 and LIMITED in response.json()["detail"]


def test_a_body_far_past_the_limit_is_refused_unread(team, lead, browser):
    api = token_client(lead).post(f"{API}/projects/small/bundle/", body(3), content_type=JSONL)
    assert api.status_code == 413 and "limited to 1 MB" in api.json()["detail"]
    page = browser.post("/p/small/upload/", {"file": upload(3)})
    assert page.status_code == 413 and LIMITED in page.content.decode()


def test_a_file_under_the_limit_still_imports(team, lead):
    from tests.conftest import FIXTURES

    small = (FIXTURES / "small.jsonl").read_bytes()
    client = token_client(lead)
    response = client.post(f"{API}/projects/small/bundle/", small, content_type=JSONL)
    assert finished_job(client, response)["status"] == "succeeded"
