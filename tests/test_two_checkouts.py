"""Two copies of the live-server tests at once (#34): two checkouts, or two people on one
machine, run the suite side by side. Every server a test starts takes a port the system
assigns (pytest-django's live_server; tests/jobs/test_scale_out.py for gunicorn): here two
pytest sessions each run live-server tests at the same moment, and both must pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# A few tests of the Python client against pytest-django's live server.
LIVE = [
    "tests/client/test_errors.py::test_an_empty_file_is_refused_at_once",
    "tests/client/test_errors.py::test_a_refused_csv_names_its_rows",
]

pytestmark = pytest.mark.slow  # two more pytest sessions: the PostgreSQL leg runs it


def test_two_sessions_of_live_server_tests_run_at_once_without_a_port_collision(tmp_path):
    # Each session on its own SQLite test database, as two checkouts would have.
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "PYTEST_ADDOPTS")}
    sessions = [
        subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *LIVE],
            cwd=ROOT,
            env={**env, "TMPDIR": str(tmp_path / str(i))},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(2)
        if (tmp_path / str(i)).mkdir() is None
    ]
    outputs = [session.communicate(timeout=600)[0] for session in sessions]
    for session, output in zip(sessions, outputs, strict=True):
        assert session.returncode == 0, output[-3000:]
        assert f"{len(LIVE)} passed" in output, output[-3000:]
