"""Shared set-up for benchmarks: a fresh, migrated database named in DATABASE_URL."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/claimdesk_bench"


def setup_bench_database() -> None:
    url = os.environ.get("BENCH_DATABASE_URL") or DEFAULT_URL
    name = urlparse(url).path.lstrip("/")
    if "bench" not in name:
        sys.exit(f"refusing to recreate database {name!r}: its name must contain 'bench'")
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import psycopg

    u = urlparse(url)
    with psycopg.connect(
        host=u.hostname,
        port=u.port or 5432,
        user=u.username or "postgres",
        dbname="postgres",
        autocommit=True,
    ) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def start_worker(env: dict[str, str] | None = None) -> subprocess.Popen:
    """The background worker a deployment runs beside its web servers (docker-compose's
    `worker`), on the same database: a big project's reports are computed there, not in the
    request."""
    return subprocess.Popen(
        [sys.executable, "manage.py", "worker"],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
    )


# What a report page shows while a worker computes the report.
PENDING = b'data-report-freshness="pending"'
