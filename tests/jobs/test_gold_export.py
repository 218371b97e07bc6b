"""Gold exports: small ones stream from the request; past CLAIMDESK_GOLD_STREAM_MAX_ROWS a
worker writes the file and the lead downloads it from the job, in the browser and the API.
The file is the streamed export, byte for byte, and asking again while the labels stay as they
are gives the same job."""

from __future__ import annotations

import gc

import pytest
from django.test import Client

from annotate.common import jsonl
from annotate.gold import exports
from annotate.gold.exports import gold_rows, gold_size
from jobs.models import Job
from tests.api import API, finished_job, token_client
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def streamed(response) -> bytes:
    return b"".join(response.streaming_content)


@pytest.fixture
def browser(demo, lead) -> Client:
    lead.set_password(PASSWORD)
    lead.save()
    client = Client()
    client.login(username=lead.username, password=PASSWORD)
    return client


def test_a_small_gold_set_streams_from_the_request(browser, demo):
    assert gold_size(demo) == 101  # every row of the demo's gold set
    response = browser.get("/p/demo/gold.jsonl")
    assert response.status_code == 200 and response.streaming
    assert len(streamed(response).splitlines()) == 101
    assert not Job.objects.exists()


def test_a_large_gold_set_is_written_by_a_worker_and_downloaded_from_its_job(
    browser, demo, settings
):
    expected = streamed(browser.get("/p/demo/gold.csv?item=claim"))
    settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS = 50
    assert "a worker writes the file" in browser.get("/p/demo/gold/").content.decode()

    response = browser.get("/p/demo/gold.csv?item=claim")
    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.kind == Job.Kind.GOLD_EXPORT and job.status == Job.Status.SUCCEEDED
    assert job.rows_total == 101 and job.result["rows"] == job.rows_written > 0
    page = browser.get(response["Location"]).content.decode()
    assert f"/jobs/{job.pk}/download/" in page and "Download CSV" in page
    download = browser.get(f"/jobs/{job.pk}/download/")
    assert download["Content-Disposition"] == 'attachment; filename="demo-gold.csv"'
    assert b"".join(download.streaming_content) == expected

    # The same labels and filters: the same job; other filters: another.
    assert browser.get("/p/demo/gold.csv?item=claim")["Location"] == f"/jobs/{job.pk}/"
    assert browser.get("/p/demo/gold.csv")["Location"] != f"/jobs/{job.pk}/"


def test_an_export_that_fails_halfway_leaves_no_partial_file(browser, demo, settings, monkeypatch):
    from jobs.services import storage

    def exported() -> set[str]:
        return set(storage().listdir("exports")[1]) if storage().exists("exports") else set()

    before = exported()
    settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS = 50
    real = gold_rows

    def breaks_after_sixty_rows(project, **filters):
        for number, row in enumerate(real(project, **filters)):
            if number == 60:
                raise RuntimeError("the database went away")
            yield row

    monkeypatch.setattr(exports, "gold_rows", breaks_after_sixty_rows)
    # 60 rows of 1 MB chunks never reach the disk unless written as they come: make them.
    monkeypatch.setattr(jsonl, "jsonl", lambda rows: ("x" * (1 << 20) for _ in rows))
    browser.get("/p/demo/gold.jsonl")
    job = Job.objects.get()
    assert job.status == Job.Status.FAILED and "RuntimeError" in job.failure
    assert not job.output
    assert exported() == before


def test_the_api_answers_202_for_a_large_gold_set_and_serves_the_file(demo, lead, settings):
    client = token_client(lead)
    expected = streamed(client.get(f"{API}/projects/demo/gold.jsonl"))
    settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS = 50
    job = finished_job(client, client.get(f"{API}/projects/demo/gold.jsonl"))
    assert job["kind"] == "gold_export" and job["status"] == "succeeded"
    assert job["progress"]["rows_total"] == 101 and job["progress"]["percent"] == 100
    download = client.get(job["download_url"])
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == expected


def test_only_the_projects_leads_see_an_export_job(demo, lead, reviewer_a, outsider, settings):
    settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS = 50
    job = finished_job(
        token_client(lead), token_client(lead).get(f"{API}/projects/demo/gold.jsonl")
    )
    for person in (reviewer_a, outsider):
        assert token_client(person).get(job["url"]).status_code == 404
        assert token_client(person).get(job["download_url"]).status_code == 404
        person.set_password(PASSWORD)
        person.save()
        client = Client()
        client.login(username=person.username, password=PASSWORD)
        assert client.get(f"/jobs/{job['id']}/").status_code == 404
        assert client.get(f"/jobs/{job['id']}/download/").status_code == 404


def test_a_worker_writes_the_file_with_the_collector_paused_a_stream_keeps_it(
    browser, demo, settings, monkeypatch
):
    """The worker's file: Python's cyclic collector paused while the rows are written (its
    full collections walked each chunk's rows: 0.6 of 3.3 s for 55,000 rows), and on again
    afterwards. A download streamed by a request keeps the collector: a slow reader would
    hold it off for the whole web process."""
    seen = collector_states(monkeypatch, exports, "gold_csv")
    assert gc.isenabled()
    streamed(browser.get("/p/demo/gold.csv?item=claim"))
    assert seen and all(seen)

    seen.clear()
    settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS = 50
    assert browser.get("/p/demo/gold.csv?item=claim").status_code == 302
    assert Job.objects.get().status == Job.Status.SUCCEEDED
    assert seen and not any(seen)
    assert gc.isenabled()


def test_export_gold_writes_its_rows_with_the_collector_paused(demo, tmp_path, monkeypatch):
    from django.core.management import call_command

    from annotate.management.commands import export_gold

    seen = collector_states(monkeypatch, export_gold, "jsonl")
    call_command("export_gold", "--project", "demo", "--output", str(tmp_path / "gold.jsonl"))
    assert len(seen) == 101 and not any(seen)
    assert gc.isenabled()


def collector_states(monkeypatch, module, name: str) -> list[bool]:
    """Wrap the encoder ``module.name``: whether the cyclic collector was on as each line
    was written (the list fills as it writes)."""
    seen: list[bool] = []
    encode = getattr(module, name)

    def watched(rows):
        for line in encode(rows):
            seen.append(gc.isenabled())
            yield line

    monkeypatch.setattr(module, name, watched)
    return seen
