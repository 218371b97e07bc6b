"""Gold as Parquet (issue #36): export_gold, the Gold page's and the API's download, the worker's
export and every release, with typed columns (booleans, integers, lists of strings, nulls
kept), written in row groups; a release's dataset folder read back by `datasets` with equal
rows and types; pushed to the Hub through huggingface_hub (patched: no network)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import huggingface_hub
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from annotate.gold import parquet
from annotate.gold.exports import GOLD_CSV_COLUMNS, gold_rows
from annotate.models import GoldRelease
from annotate.releases.card import data_path
from annotate.releases.folder import write_folder
from annotate.releases.selectors import release_rows
from annotate.releases.services import create_release
from tests.api import API, token_client
from tests.conftest import PASSWORD, labelled_demo

pytestmark = pytest.mark.django_db

TYPES = {
    "task_number": pa.int64(),
    "claim_index": pa.int64(),
    "label": pa.int64(),
    "label_sets": pa.int64(),
    "answerable": pa.bool_(),
    "decided": pa.bool_(),
    "citations": pa.list_(pa.string()),
    "retrieved_contexts": pa.list_(pa.string()),
    "gold": pa.string(),
    "case_id": pa.string(),
}


@pytest.fixture
def demo(lead):
    return labelled_demo(leads=(lead.username,), password=PASSWORD)


def as_parquet_reads(row: dict) -> dict:
    """A JSONL row as its Parquet row reads: every column, absent ones null, nested objects
    as sorted JSON text."""
    return {
        name: (
            json.dumps(row[name], ensure_ascii=False, sort_keys=True)
            if name in parquet.JSON_COLUMNS and row.get(name) is not None
            else row.get(name)
        )
        for name in GOLD_CSV_COLUMNS
    }


def test_export_gold_writes_typed_parquet_in_row_groups(demo, tmp_path):
    target = tmp_path / "gold.parquet"
    rows = list(gold_rows(demo))
    written = parquet.write_parquet(gold_rows(demo), str(target), batch_rows=7)
    assert written == len(rows) == 101
    table = pq.read_table(target)
    assert pq.ParquetFile(target).metadata.num_row_groups == math.ceil(101 / 7)
    for name, kind in TYPES.items():
        assert table.schema.field(name).type == kind, name
    assert table.column_names == list(GOLD_CSV_COLUMNS)
    assert table.to_pylist() == [as_parquet_reads(r) for r in rows]
    # Nulls are kept: a pending claim's label, an answer row's claim columns.
    labels = table.column("label").to_pylist()
    assert None in labels and {0, 1} <= set(labels)

    call_command(
        "export_gold", "--project", "demo", "--format", "parquet", "--output", str(tmp_path / "c")
    )
    assert pq.read_table(tmp_path / "c").to_pylist() == table.to_pylist()
    with pytest.raises(CommandError, match="needs --output"):
        call_command("export_gold", "--project", "demo", "--format", "parquet")


def test_a_file_with_no_rows_has_every_column(tmp_path):
    assert parquet.write_parquet([], str(tmp_path / "empty.parquet")) == 0
    table = pq.read_table(tmp_path / "empty.parquet")
    assert table.num_rows == 0 and table.column_names == list(GOLD_CSV_COLUMNS)


def test_the_gold_page_and_the_api_download_parquet(demo, lead, settings):
    expected = [as_parquet_reads(r) for r in gold_rows(demo, item="answer")]
    browser = Client()
    browser.force_login(lead)
    page = browser.get(reverse("gold_download", args=["demo", "parquet"]), {"item": "answer"})
    assert page.status_code == 200 and page["Content-Type"] == "application/vnd.apache.parquet"
    assert pq.read_table(io.BytesIO(b"".join(page.streaming_content))).to_pylist() == expected
    api = token_client(lead).get(f"{API}/projects/demo/gold.parquet", {"item": "answer"})
    assert api.status_code == 200
    assert pq.read_table(io.BytesIO(b"".join(api.streaming_content))).to_pylist() == expected
    assert "Download Parquet" in browser.get(reverse("gold", args=["demo"])).content.decode()

    # Past the streaming limit a worker writes the Parquet file.
    settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS = 10
    queued = token_client(lead).get(f"{API}/projects/demo/gold.parquet", {"item": "answer"})
    assert queued.status_code == 202
    job = token_client(lead).get(queued["Location"]).json()
    assert job["status"] == "succeeded", job
    file = token_client(lead).get(job["download_url"])
    assert file["Content-Type"] == "application/vnd.apache.parquet"
    assert pq.read_table(io.BytesIO(b"".join(file.streaming_content))).to_pylist() == expected


def test_a_release_folder_reads_back_with_datasets_with_equal_rows_and_types(
    demo, lead, tmp_path, monkeypatch
):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    # late import: heavy library (memory)
    import datasets

    release = create_release(project=demo, name="v1", user=lead)
    folder = tmp_path / "v1"
    written = write_folder(release, folder)
    assert written[0] == folder / "README.md"
    assert (folder / "README.md").read_text() == release.card
    rows = list(release_rows(release))
    for item in ("claim", "answer"):
        files = {split: str(folder / data_path(item, split)) for split in release.partitions[item]}
        loaded = datasets.load_dataset(
            "parquet", data_files=files, cache_dir=str(tmp_path / "cache")
        )
        assert set(loaded) == {"judge_dev", "judge_test"}
        for split, dataset in loaded.items():
            expected = [
                as_parquet_reads(r) for r in rows if r["item"] == item and r["judge_split"] == split
            ]
            assert len(dataset) == release.partitions[item][split] == len(expected)
            assert dataset.to_list() == expected
            features = dataset.features
            assert features["decided"] == datasets.Value("bool")
            assert features["task_number"] == datasets.Value("int64")
            assert features["label_sets"] == datasets.Value("int64")
            assert features["gold"] == datasets.Value("string")
            assert features["citations"].feature == datasets.Value("string")
        single = datasets.Dataset.from_parquet(
            files["judge_dev"], cache_dir=str(tmp_path / "cache")
        )
        assert single.to_list() == loaded["judge_dev"].to_list()


class FakeHub:
    """HfApi's two calls a push makes, recorded; the folder's files read as uploaded."""

    calls: list = []

    def __init__(self, token=None):
        self.token = token

    def create_repo(self, repo_id, **options):
        self.calls.append(("create_repo", repo_id, options, self.token))

    def upload_folder(self, *, folder_path, repo_id, repo_type, commit_message):
        files = sorted(
            p.relative_to(folder_path).as_posix()
            for p in Path(folder_path).rglob("*")
            if p.is_file()
        )
        self.calls.append(("upload_folder", repo_id, repo_type, files, commit_message))
        return huggingface_hub.CommitInfo(
            commit_url=f"https://huggingface.co/datasets/{repo_id}/commit/abc",
            commit_message=commit_message,
            commit_description="",
            oid="abc",
        )


def test_push_to_hub_uploads_the_folder_with_a_token_and_refuses_without(
    demo, tmp_path, monkeypatch
):
    FakeHub.calls = []
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeHub)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(CommandError, match="No Hugging Face token: set HF_TOKEN"):
        call_command(
            "release_gold",
            "--project",
            "demo",
            "--name",
            "v1",
            "--output-dir",
            str(tmp_path / "v1"),
            "--push-to-hub",
            "team/gold",
        )
    assert FakeHub.calls == [] and not GoldRelease.objects.exists()  # refused before anything
    monkeypatch.setenv("HF_TOKEN", "hf_test")
    out = io.StringIO()
    call_command(
        "release_gold",
        "--project",
        "demo",
        "--name",
        "v2",
        "--output-dir",
        str(tmp_path / "v2"),
        "--push-to-hub",
        "team/gold",
        stdout=out,
    )
    release = GoldRelease.objects.get(name="v2")
    assert FakeHub.calls[0] == (
        "create_repo",
        "team/gold",
        {"repo_type": "dataset", "private": True, "exist_ok": True},
        "hf_test",
    )
    assert FakeHub.calls[1] == (
        "upload_folder",
        "team/gold",
        "dataset",
        [
            "README.md",
            "data/answers/judge_dev.parquet",
            "data/answers/judge_test.parquet",
            "data/claims/judge_dev.parquet",
            "data/claims/judge_test.parquet",
        ],
        f"claimdesk gold release v2 ({release.sha256[:12]})",
    )
    assert "https://huggingface.co/datasets/team/gold/commit/abc" in out.getvalue()
    with pytest.raises(CommandError, match="--push-to-hub needs --output-dir"):
        call_command("release_gold", "--project", "demo", "--name", "v3", "--push-to-hub", "x/y")
