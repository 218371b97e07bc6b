"""Where a running job's heartbeat and progress go on SQLite: a small file per job attempt,
beside the database file, which the import's write lock does not block.

SQLite lets one connection write at a time, and an import holds that lock from its first
line read to its commit: the settings open every transaction IMMEDIATE, and all or nothing
needs the import to be one transaction. A heartbeat written to the job's row waited for the
lock, gave up after SQLite's 20 s timeout, and the job page read the row as the claim had left
it -- no progress, and a heartbeat so old that it said "the worker stopped" about an import
that went on to succeed (8,000 answers: 21 s, called stopped from 10 s on). Committing the
import in chunks would let the heartbeat through, but a failed import must leave nothing
behind; so the live fields travel outside the database instead.

A file per job attempt, replaced whole on each beat (os.replace is atomic: a reader sees one
beat or the one before, never half of one), in a folder named after the database file as
SQLite names its own companions (claimdesk.sqlite3-wal): every process that can open the
database finds it, with no setting to keep in step. A file is never read once its job has
ended (the row holds the final fields then), and is removed by prune_jobs, not when the job
ends: a page that had just read the row as running would otherwise find no file, fall back to
the claim's heartbeat and call the job stopped. PostgreSQL has row locks; there the heartbeat
stays in the job's row and nothing here is used, nor on an SQLite database in memory, which
no other process can reach.

Readers do not call this module: Job.from_db lays a running job's live fields over its row,
so the job page, the API, a retry and the staleness checks all read them the same way.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from datetime import datetime
from pathlib import Path

from django.db import DEFAULT_DB_ALIAS, connections

logger = logging.getLogger(__name__)

LIVE_FIELDS = ("stage", "lines_read", "rows_written")


def folder(using: str = DEFAULT_DB_ALIAS) -> Path | None:
    """The folder of live progress files, or None where the job's row is written instead."""
    db = connections[using]
    if db.vendor != "sqlite":
        return None
    name = str(db.settings_dict["NAME"])
    if name == ":memory:" or "mode=memory" in name:
        return None
    path = Path(name)
    return path.with_name(f"{path.name}-progress")


def _path(where: Path, job_id, attempt: int) -> Path:
    return where / f"{job_id}-{attempt}.json"


def write(job_id, *, attempt: int, at: datetime, fields: dict) -> bool:
    """Record a beat of `job_id`'s attempt; False where it could not be (no folder here, a
    full disk, no permission): the caller writes the row instead."""
    where = folder()
    if where is None:
        return False
    beat = {"heartbeat_at": at.isoformat(), **{name: fields[name] for name in LIVE_FIELDS}}
    temporary = where / f".{job_id}-{attempt}.{os.getpid()}.{threading.get_ident()}"
    try:
        where.mkdir(exist_ok=True)
        temporary.write_text(json.dumps(beat))
        os.replace(temporary, _path(where, job_id, attempt))
    except OSError:
        logger.warning("job %s: live progress not written to %s", job_id, where, exc_info=True)
        return False
    return True


def read(job_id, *, attempt: int, using: str = DEFAULT_DB_ALIAS) -> dict | None:
    """The latest beat of `job_id`'s attempt, heartbeat_at as a datetime; None if it has none."""
    where = folder(using)
    if where is None:
        return None
    try:
        beat = json.loads(_path(where, job_id, attempt).read_text())
        beat["heartbeat_at"] = datetime.fromisoformat(beat["heartbeat_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none yet (the first beat comes half a second after the claim)
    return beat


def prune(running: set[str]) -> int:
    """Remove the files of every job not in `running` (ids as text); how many went."""
    where = folder()
    if where is None or not where.is_dir():
        return 0
    removed = 0
    for path in where.iterdir():
        if path.name.lstrip(".")[:36] in running:  # a job's id, as text, is 36 characters
            continue
        path.unlink(missing_ok=True)
        removed += 1
    return removed
