"""The "use it from Python" example of docs/api.md (pasted into the README) runs, as written,
with `requests` against a live server: upload a bundle, open labelling, pull gold, push a
judge run, read calibration."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from knox.models import AuthToken

from annotate.models import Membership, Project, Role
from evaluation.models import JudgeRun

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "api.md"
README = ROOT / "README.md"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.DOTALL)


def example(path: Path) -> str:
    """The block that talks to the API (the README may hold other Python)."""
    blocks = [b for b in python_blocks(path) if "/api/v1" in b or "API}" in b]
    assert len(blocks) == 1, f"{path.name} should hold exactly one API example"
    return blocks[0]


@pytest.mark.django_db(transaction=True)
def test_the_python_example_runs_against_a_live_server(live_server, lead, monkeypatch, capsys):
    _, token = AuthToken.objects.create(user=lead)
    monkeypatch.setenv("CLAIMDESK_URL", live_server.url)
    monkeypatch.setenv("CLAIMDESK_TOKEN", token)
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(example(DOCS), str(DOCS), "exec"), namespace)

    project = Project.objects.get(slug="demo")
    assert project.state == Project.State.OPEN
    assert Membership.objects.get(project=project, user=lead).role == Role.LEAD
    assert len(namespace["gold"]) == 101
    assert JudgeRun.objects.get(project=project).pk == namespace["run_id"]
    calibration = namespace["calibration"]
    assert calibration["split"] == "judge_test" and calibration["n"] > 0
    out = capsys.readouterr().out
    assert "101 gold rows" in out and "judge strict-judge-v2" in out


def test_the_readme_carries_the_same_example_once_it_is_pasted():
    if not README.exists() or "/api/v1" not in README.read_text():
        pytest.skip("the README does not have the API example yet (docs/api.md has it)")
    assert example(README).strip() == example(DOCS).strip()
