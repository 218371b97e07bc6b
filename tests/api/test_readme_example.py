"""The "use it from Python" example of docs/api.md (pasted into the README) runs, as written,
with the API's client (claimdesk_client, client/) against a live server: upload a bundle,
open labelling, pull gold, push a judge run, read calibration. It runs on an empty database and
on the state a fresh `make run` leaves (the demo loaded by load_demo, a token of its `lead`),
and again on top of either: every step looks before it writes."""

from __future__ import annotations

import io
import re
import threading
from pathlib import Path

import pytest
from claimdesk_client import Client
from django.contrib.auth import get_user_model
from django.core.management import call_command
from knox.models import AuthToken

from annotate.members.services import allow_adding_anyone
from annotate.models import Membership, Project, Role
from evaluation.models import JudgeRun
from tests.conftest import may_create_projects

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "api.md"
README = ROOT / "README.md"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.DOTALL)


def example(path: Path) -> str:
    """The block that talks to the API (the README may hold other Python)."""
    blocks = [b for b in python_blocks(path) if "claimdesk_client" in b]
    assert len(blocks) == 1, f"{path.name} should hold exactly one API example"
    return blocks[0]


def run_example(live_server, user, monkeypatch) -> dict:
    may_create_projects(user)  # the example may start by creating its project
    allow_adding_anyone(user=user)  # and adding its reviewers, new accounts on an empty site
    _, token = AuthToken.objects.create(user=user)
    monkeypatch.setenv("CLAIMDESK_URL", live_server.url)
    monkeypatch.setenv("CLAIMDESK_TOKEN", token)
    monkeypatch.chdir(ROOT)
    namespace: dict = {"__name__": "readme_example"}
    before = set(threading.enumerate())
    try:
        exec(compile(example(DOCS), str(DOCS), "exec"), namespace)
    finally:
        hang_up(namespace, before)
    return namespace


def hang_up(namespace: dict, before: set[threading.Thread]) -> None:
    """Close the example's kept-alive connections and wait for the live server to see them
    end. The server serves each connection on a daemon thread of its own; one left waiting
    woke at interpreter exit, when the client was collected at last, and died printing
    "Exception in thread ... (process_request_thread)" after a passing run. Client.close()
    closes its connections one by one (requests' Session.close() alone only forgets them)."""
    for value in namespace.values():
        if isinstance(value, Client):
            value.close()
    for thread in set(threading.enumerate()) - before:
        if thread.name.endswith("(process_request_thread)"):
            thread.join(timeout=10)
            assert not thread.is_alive(), f"the live server still serves a connection: {thread}"


def assert_done(namespace: dict, user, out: str) -> None:
    project = Project.objects.get(slug="demo")
    assert project.state == Project.State.OPEN
    assert Membership.objects.get(project=project, user=user).role == Role.LEAD
    assert len(namespace["gold"]) == 101
    assert JudgeRun.objects.get(project=project).pk == namespace["run"]["id"]  # one run only
    calibration = namespace["calibration"]
    assert calibration["split"] == "judge_test" and calibration["n"] > 0
    assert "101 gold rows" in out and "judge strict-judge-v2" in out
    assert f"release v1: {namespace['release']['row_count']} rows" in out
    assert namespace["saved"].stat().st_size > 0  # the Parquet file pulled back


@pytest.mark.django_db(transaction=True)
def test_the_python_example_runs_against_a_live_server(live_server, lead, monkeypatch, capsys):
    namespace = run_example(live_server, lead, monkeypatch)
    out = capsys.readouterr().out
    assert "imported 60 answers" in out
    assert_done(namespace, lead, out)
    again = run_example(live_server, lead, monkeypatch)  # nothing is imported twice
    out = capsys.readouterr().out
    assert "imported" not in out
    assert_done(again, lead, out)


@pytest.mark.django_db(transaction=True)
def test_the_python_example_runs_on_what_make_run_leaves(live_server, monkeypatch, capsys):
    """`make run` migrates and runs load_demo: the demo is open, labelled, and led by `lead`.
    The example must neither re-import into it nor open it again (both would be refused)."""
    call_command("load_demo", stdout=io.StringIO())
    demo_lead = get_user_model().objects.get(username="lead")
    for _ in range(2):
        namespace = run_example(live_server, demo_lead, monkeypatch)
        out = capsys.readouterr().out
        assert "imported" not in out
        assert_done(namespace, demo_lead, out)


def test_the_client_comes_with_what_make_run_installs():
    """The example imports claimdesk_client, which `make run` installs (tests/client/
    test_package.py), and the client needs requests: requirements.txt pins it."""
    pinned = (ROOT / "requirements.txt").read_text().splitlines()
    assert any(re.match(r"requests==\d", line) for line in pinned)
    assert "claimdesk_client" in example(DOCS)


def test_the_readme_carries_the_same_example_once_it_is_pasted():
    if not README.exists() or "claimdesk_client" not in README.read_text():
        pytest.skip("the README does not have the API example yet (docs/api.md has it)")
    assert example(README).strip() == example(DOCS).strip()
