"""Making a release: the one place a GoldRelease is created (create_release). The page, the
API, the command and the worker's job all call it; anything that must happen when a release
is made (a "release made" event) hooks here, on the release it returns."""

from __future__ import annotations

import contextlib
import hashlib
import re
import tempfile
from collections.abc import Callable

from django.conf import settings
from django.core.files import File
from django.core.files.storage import storages
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from annotate.common import collector
from annotate.common.errors import ServiceError
from annotate.gold.exports import (
    GOLD_SCHEMA_VERSION,
    GoldFilter,
    gold_fingerprint,
    gold_rows,
    gold_size,
)
from annotate.gold.pairs import row_state
from annotate.models import GoldRelease, Project
from annotate.releases.card import ReleaseCounts, dataset_card
from annotate.webhooks import events as webhooks
from jobs import accept as jobs
from jobs.models import Job

# Names people cite and type: v1, 2026-12-07, gold-v1.2 -- letters, digits, '.', '_', '-'.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
NAME_RULE = (
    "A release name is 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or a "
    "digit (v1, 2026-12-07, gold-v1.2)."
)


class ReleaseRefused(ServiceError):
    """A release that cannot be made as asked (its name, its options); the message says why."""


class ReleaseNameTaken(ReleaseRefused):
    pass


def storage():
    return storages["jobs"]


def check_name(project: Project, name: str) -> str:
    """The name, if a new release of the project may take it; else ReleaseRefused saying
    why (ReleaseNameTaken when another release has it)."""
    if not isinstance(name, str) or not NAME.match(name):
        raise ReleaseRefused(NAME_RULE)
    if GoldRelease.objects.filter(project=project, name=name).exists():
        raise ReleaseNameTaken(f"This project already has a release named '{name}'.")
    return name


def check_options(*, item: str, split: str, decided_only: bool) -> GoldFilter:
    try:
        return GoldFilter(item=item, split=split, decided_only=bool(decided_only))
    except ValueError as exc:
        raise ReleaseRefused(str(exc)) from exc


def start_release(
    *,
    project: Project,
    name: str,
    user=None,
    item: str = "all",
    split: str = "all",
    decided_only: bool = False,
) -> GoldRelease | Job:
    """Make a release now (create_release), or, for a gold set past
    CLAIMDESK_GOLD_STREAM_MAX_ROWS rows, queue a worker's job that makes it (its name and
    options checked first, so a refused one is refused now). Returns the release or the job."""
    check_name(project, name)
    check_options(item=item, split=split, decided_only=decided_only)
    size = gold_size(project)
    if size > settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS:
        options = {"name": name, "item": item, "split": split, "decided_only": decided_only}
        return jobs.start_job(
            kind=Job.Kind.GOLD_RELEASE,
            project=project,
            user=user,
            params={"format": "jsonl", "release": options},
            rows=size,
        )
    return create_release(
        project=project, name=name, user=user, item=item, split=split, decided_only=decided_only
    )


def create_release(
    *,
    project: Project,
    name: str,
    user=None,
    item: str = "all",
    split: str = "all",
    decided_only: bool = False,
    on_row: Callable[[], None] | None = None,
) -> GoldRelease:
    """Freeze the project's gold as it is now under `name`: the gold export's JSONL (the
    options as export_gold's), written once to the "jobs" storage with its SHA-256, row count
    and dataset card; returns the release. Raises ReleaseRefused for a bad or taken name or
    bad options. The rows, their counts and the card's agreement are read in one snapshot
    of the database (PostgreSQL), so the card describes exactly the file. `on_row` is called
    after each row is written (a job's progress)."""
    check_name(project, name)
    chosen = check_options(item=item, split=split, decided_only=decided_only)
    # One snapshot for the rows, their counts and the card: on PostgreSQL a REPEATABLE READ
    # transaction (inside a caller's, its snapshot). SQLite opens every transaction with the
    # write lock (settings), which would stall every label save for the whole file: there the
    # rows are read query by query, as the worker's gold export reads them.
    snapshot = not connection.in_atomic_block and connection.vendor == "postgresql"
    with transaction.atomic() if snapshot else contextlib.nullcontext():
        if snapshot:
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        with tempfile.TemporaryFile() as body, collector.paused():
            digest, size, counts = _write_rows(project, chosen, body, on_row)
            return _record(project, name, user, chosen, body, digest, size, counts)


def _write_rows(
    project: Project, chosen: GoldFilter, body, on_row
) -> tuple[str, int, ReleaseCounts]:
    """The export's JSONL into `body`, hashed and counted as it goes (memory stays flat)."""
    sha = hashlib.sha256()
    counts = ReleaseCounts()
    size = 0
    for row in gold_rows(
        project, item=chosen.item, split=chosen.split, decided_only=chosen.decided_only
    ):
        line = (row.line + "\n").encode("utf-8")
        body.write(line)
        sha.update(line)
        size += len(line)
        counts.add(row, row_state(row["gold_source"]))
        if on_row is not None:
            on_row()
    return sha.hexdigest(), size, counts


def _record(project, name, user, chosen, body, digest, size, counts) -> GoldRelease:
    # late import: heavy library (memory) -- the agreement report's statistics (numpy)
    from evaluation.reports.agreement import agreement_report

    export_id, _ = gold_fingerprint(project)
    created_at = timezone.now()
    rows = sum(counts.partitions.values())
    options = {"item": chosen.item, "split": chosen.split, "decided_only": chosen.decided_only}
    card = dataset_card(
        project=project,
        name=name,
        options=options,
        counts=counts,
        report=agreement_report(project),
        row_count=rows,
        sha256=digest,
        schema_version=GOLD_SCHEMA_VERSION,
        created_at=created_at.strftime("%Y-%m-%d %H:%M UTC"),
        created_by=getattr(user, "username", None) or "a command",
    )
    body.seek(0)
    stored = storage().save(f"releases/{project.slug}/{name}-{digest[:12]}.jsonl", File(body))
    try:
        with transaction.atomic():
            release = GoldRelease.objects.create(
                project=project,
                name=name,
                created_by=user,
                created_at=created_at,
                schema_version=GOLD_SCHEMA_VERSION,
                export_id=export_id,
                row_count=rows,
                partitions=counts.partition_dict(),
                sha256=digest,
                size=size,
                file=stored,
                card=card,
                **options,
            )
            # The team's webhooks hear of it with the release, in its transaction.
            webhooks.release_made(project=project, name=name, rows=rows, sha256=digest)
            return release
    except IntegrityError:
        # Another lead took the name in the meantime.
        storage().delete(stored)
        raise ReleaseNameTaken(f"This project already has a release named '{name}'.") from None
    except BaseException:
        storage().delete(stored)
        raise
