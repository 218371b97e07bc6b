"""`manage.py worker` with a fault put in for a test, chosen by CLAIMDESK_TEST_HOOK (the
arguments are the command's):

- ``drop-connection-in-maintenance``: the after-commit VACUUM/ANALYZE of an import
  (annotate.common.bulk.maintain) first has PostgreSQL terminate this worker's own
  connection, from another one, so that it fails as when the server drops it.
- ``drop-connection-while-writing``: the first import this worker runs has its connection
  terminated (as above) once it has written its answers, inside its transaction.
- ``pause-while-writing``: an import stops for good once it writes its answers (its heartbeat
  goes on), so that the test can kill the worker in the middle of it, every time.
- ``pause-export``: a gold export stops for good once it has written part of its file
  (in the "jobs" storage, wherever the export's code lives).

tests/workers.Worker starts it with ``hook=``; the code under test is unchanged.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

import psycopg  # noqa: E402
from django.core.files.storage import FileSystemStorage  # noqa: E402
from django.core.management import execute_from_command_line  # noqa: E402
from django.db import connection  # noqa: E402

from annotate.common import bulk  # noqa: E402
from jobs import progress  # noqa: E402

HOOK = os.environ.get("CLAIMDESK_TEST_HOOK", "")


def terminate_own_connection() -> None:
    params = connection.get_connection_params()
    admin = {k: params[k] for k in ("host", "port", "user", "password") if params.get(k)}
    pid = connection.connection.info.backend_pid
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    print(f"HOOK: terminated backend {pid}", flush=True)


def pause_forever(what: str) -> None:
    print(f"HOOK: paused {what}", flush=True)
    while True:
        time.sleep(60)


if HOOK == "drop-connection-in-maintenance":
    maintain = bulk.maintain

    def dropped(*args, **kwargs):
        terminate_own_connection()
        return maintain(*args, **kwargs)

    bulk.maintain = dropped
elif HOOK == "pause-while-writing":
    step = progress.Progress.step

    def paused(self, name, n):
        step(self, name, n)
        if name == "answers":
            pause_forever(f"job {self.job.pk} writing its answers")

    progress.Progress.step = paused
elif HOOK == "drop-connection-while-writing":
    step = progress.Progress.step
    dropped_once = []

    def dropping(self, name, n):
        step(self, name, n)
        if name == "answers" and not dropped_once:
            dropped_once.append(self.job.pk)
            terminate_own_connection()

    progress.Progress.step = dropping
elif HOOK == "pause-export":
    save = FileSystemStorage._save

    def saved_in_part(self, name, content):
        if not name.startswith("exports/"):
            return save(self, name, content)
        os.makedirs(os.path.dirname(self.path(name)), exist_ok=True)
        with open(self.path(name), "wb") as partial:
            partial.write(next(iter(content.chunks()))[:100])
        pause_forever(f"an export with part of {name} written")

    FileSystemStorage._save = saved_in_part
elif HOOK:
    raise SystemExit(f"CLAIMDESK_TEST_HOOK={HOOK!r}: no such hook")

if __name__ == "__main__":
    execute_from_command_line(["manage.py", "worker", *sys.argv[1:]])
