"""Reading releases: a project's releases, one by name, and a release's rows as they were
frozen (its JSONL file, read line by line), in the formats a download offers. The JSONL is
the release; CSV and Parquet are derived from its bytes, so they never change either."""

from __future__ import annotations

import json
from collections.abc import Iterator

from django.core.files.storage import storages
from django.db.models import QuerySet

from annotate.gold.exports import gold_csv
from annotate.gold.parquet import parquet_file
from annotate.models import GoldRelease, Project

FORMATS = ("jsonl", "csv", "parquet")


def releases_of(project: Project) -> QuerySet[GoldRelease]:
    """The project's releases, newest first, with who made each (one query)."""
    return (
        GoldRelease.objects.filter(project=project)
        .select_related("created_by")
        .order_by("-created_at", "-pk")
    )


def release_named(project: Project, name: str) -> GoldRelease | None:
    return releases_of(project).filter(name=name).first()


def jsonl_chunks(release: GoldRelease, chunk_size: int = 1 << 16) -> Iterator[bytes]:
    """The release's JSONL file, its exact bytes, in chunks."""
    with storages["jobs"].open(release.file, "rb") as stream:
        while chunk := stream.read(chunk_size):
            yield chunk


def release_rows(release: GoldRelease) -> Iterator[dict]:
    """The release's rows, one dict per line of its file."""
    with storages["jobs"].open(release.file, "rb") as stream:
        for line in stream:
            if line.strip():
                yield json.loads(line)


def release_csv(release: GoldRelease) -> Iterator[str]:
    return gold_csv(release_rows(release))


def release_parquet(release: GoldRelease):
    """The release as one Parquet file: a temporary file, rewound (parquet.parquet_file).
    The caller closes it."""
    return parquet_file(release_rows(release))
