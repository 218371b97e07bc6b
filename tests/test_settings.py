"""Production settings come from the environment and pass Django's deployment checks."""

import os
import re
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


def readme_production_settings() -> dict[str, str]:
    """The variables of the README's "Production settings" block, placeholders filled in."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Production settings", 1)[1]
    block = re.search(r"```env\n(.*?)```", section, flags=re.DOTALL).group(1)
    settings = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
    assert {"SECRET_KEY", "DEBUG", "HTTPS", "ALLOWED_HOSTS"} <= set(settings)
    settings["SECRET_KEY"] = secrets.token_urlsafe(50)
    settings.pop("DATABASE_URL", None)  # the check does not connect; keep the test's database
    return settings


def test_production_settings_pass_check_deploy(tmp_path):
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        **readme_production_settings(),
        CLAIMDESK_VAR_DIR=str(tmp_path),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout and "WARNING" not in result.stderr


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
