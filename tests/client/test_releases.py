"""Pulling a release through claimdesk_client against a live server: make one, list it, read
its card, download it (JSONL byte for byte as frozen, CSV, Parquet), compare two, and a
release too large for a request made by a worker and waited for."""

from __future__ import annotations

import hashlib

import pyarrow.parquet as pq
import pytest
from claimdesk_client import NotFound, Refused

from annotate.models import Project
from tests.client import test_workflows as workflows
from tests.client.test_workflows import read_without_client
from tests.conftest import decide_support

pytestmark = pytest.mark.django_db(transaction=True)

demo = workflows.demo  # fixture


def test_make_list_read_download_and_compare_releases(claimdesk, demo, lead, tmp_path):
    v1 = claimdesk.create_release(demo, "v1")
    assert (v1["name"], v1["row_count"], v1["created_by"]) == ("v1", 101, lead.username)
    assert v1["card"].startswith("---\n")
    assert [r["name"] for r in claimdesk.releases(demo)] == ["v1"]
    assert claimdesk.release(demo, "v1") == v1

    frozen = claimdesk.download_release(demo, "v1", tmp_path / "v1.jsonl")
    assert hashlib.sha256(frozen.read_bytes()).hexdigest() == v1["sha256"]
    decide_support(Project.objects.get(slug=demo), lead)
    claimdesk.create_release(demo, "v2", decided_only=False)
    again = claimdesk.download_release(demo, "v1", tmp_path / "again.jsonl")
    assert again.read_bytes() == frozen.read_bytes()  # labels changed; v1 did not

    table = pq.read_table(claimdesk.download_release(demo, "v1", tmp_path / "v1.parquet"))
    assert table.num_rows == 101
    csv_file = claimdesk.download_release(demo, "v1", tmp_path / "v1.csv")
    assert csv_file.read_bytes() == read_without_client(
        lead, "/api/v1/projects/demo/releases/v1/gold.csv"
    )
    diff = claimdesk.diff_releases(demo, "v1", "v2")
    assert diff["counts"]["changed"] >= 1 and diff["counts"]["added"] == 0

    with pytest.raises(Refused) as taken:
        claimdesk.create_release(demo, "v1")
    assert "already has a release named 'v1'" in str(taken.value)
    with pytest.raises(NotFound):
        claimdesk.release(demo, "v9")


def test_a_large_release_is_made_by_a_worker_and_waited_for(claimdesk, demo, settings):
    settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS = 10
    release = claimdesk.create_release(demo, "big", item="answer")
    assert release["name"] == "big" and release["row_count"] == 40
    job = claimdesk.create_release(demo, "big2", wait=False)
    assert job["kind"] == "gold_release"
