"""Production settings come from the environment and pass Django's deployment checks."""

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    unset = ("DEBUG", "HTTPS", "DJANGO_ALLOW_ASYNC_UNSAFE")
    environment = {k: v for k, v in os.environ.items() if k not in unset}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_settings_pass_check_deploy(tmp_path):
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        SECRET_KEY=secrets.token_urlsafe(50),
        DEBUG="false",
        HTTPS="true",
        ALLOWED_HOSTS="claimdesk.example.org",
        CLAIMDESK_VAR_DIR=str(tmp_path),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_without_a_secret_key_a_local_one_is_kept_outside_the_repository(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SECRET_KEY"}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE',"
            " 'config.settings'); django.setup(); from django.conf import settings;"
            " print(len(settings.SECRET_KEY))",
        ],
        cwd=ROOT,
        env={**env, "CLAIMDESK_VAR_DIR": str(tmp_path)},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) >= 50
    assert (tmp_path / "secret_key").exists()
