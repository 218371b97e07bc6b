"""A release as a Hugging Face dataset folder: README.md (its card) and one Parquet file per
item and judge split (data/claims/judge_dev.parquet ...: the card's `configs` name them), which
`datasets.load_dataset("parquet", data_files=...)`, `Dataset.from_parquet` and the Hub read;
and the folder pushed to the Hub (huggingface_hub) when a token is configured."""

from __future__ import annotations

import os
from pathlib import Path

from annotate.common.errors import ServiceError
from annotate.gold.parquet import GoldParquetWriter
from annotate.models import GoldRelease
from annotate.releases.card import data_path
from annotate.releases.selectors import release_rows

NO_TOKEN = (
    "No Hugging Face token: set HF_TOKEN (a write token of the account or organisation that "
    "owns the dataset repository) to push a release to the Hub."
)


class HubRefused(ServiceError):
    pass


def write_folder(release: GoldRelease, folder: str | os.PathLike) -> list[Path]:
    """Write the release's dataset folder into `folder` (made if missing); returns the files
    written, README.md first. Rows stream from the release's file into one writer per
    partition, each holding at most a batch."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    readme = root / "README.md"
    readme.write_text(release.card, encoding="utf-8")
    writers: dict[tuple[str, str], GoldParquetWriter] = {}
    try:
        for row in release_rows(release):
            key = (row["item"], row["judge_split"])
            writer = writers.get(key)
            if writer is None:
                target = root / data_path(*key)
                target.parent.mkdir(parents=True, exist_ok=True)
                writer = writers[key] = GoldParquetWriter(str(target))
            writer.write(row)
    finally:
        for writer in writers.values():
            writer.close()
    return [readme, *(root / data_path(*key) for key in sorted(writers))]


def hub_token() -> str | None:
    """The Hugging Face token: HF_TOKEN from the environment (as huggingface_hub reads it)."""
    return os.environ.get("HF_TOKEN") or None


def push_to_hub(
    release: GoldRelease, repo_id: str, folder: str | os.PathLike, *, private: bool = True
) -> str:
    """Write the release's folder and upload it to the dataset repository `repo_id` on the
    Hugging Face Hub (created, private by default, if missing); returns the commit's URL.
    Raises HubRefused without a token (HF_TOKEN)."""
    token = hub_token()
    if token is None:
        raise HubRefused(NO_TOKEN)
    # late import: heavy library (memory)
    from huggingface_hub import HfApi

    write_folder(release, folder)
    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(
        folder_path=str(folder),
        repo_id=repo_id,
        repo_type="dataset",
        commit_message=f"claimdesk gold release {release.name} ({release.sha256[:12]})",
    )
    return str(getattr(commit, "commit_url", commit))
