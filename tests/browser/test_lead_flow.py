"""A lead in a real browser: reads the agreement report, adjudicates a disagreement, and
downloads the gold JSONL, which validates against the documented schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from playwright.sync_api import expect

from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Decision
from annotate.projects.opening import open_labelling
from tests.conftest import FIXTURES, PASSWORD, import_fixture, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "gold-export.schema.json").read_text()
)


@pytest.fixture
def demo(lead):
    project = import_fixture("demo.jsonl", "demo")
    for name in ("alice", "bob"):
        add_member(
            project=project, username=name, role="reviewer", password=PASSWORD, reset_password=True
        )
    add_member(project=project, username=lead.username, role="lead")
    project = open_labelling(project=project)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        import_labels(lines=stream, project=project)
    return project


def test_lead_reads_agreement_adjudicates_and_downloads_valid_gold(page, demo, lead, tmp_path):
    page.set_default_timeout(10_000)
    login(page, lead)
    page.goto(f"/p/{demo.slug}/agreement/")
    expect(page.get_by_role("heading", name="Reviewer agreement")).to_be_visible()
    expect(page.locator("table.agreement").first).to_contain_text("Support")
    screenshot(page, "agreement-report")

    page.get_by_role("link", name="Adjudicate disagreements").click()
    page.get_by_role("link", name="Adjudicate").first.click()
    expect(page.get_by_role("heading", name="Adjudicate · Task")).to_be_visible()
    assert "baseline" not in page.content() and "verifier" not in page.content()
    first_open = page.locator("tr.differs").first
    first_open.locator("label").filter(has=page.locator("input[value=b]")).click()
    page.get_by_label("Rationale for this task").fill(
        "Reviewer B followed the guideline on supplied passages."
    )
    screenshot(page, "adjudication-screen")
    page.get_by_role("button", name="Save and next disagreement").click()
    expect(page.locator(".flash.success")).to_contain_text("1 decision saved")
    assert Decision.objects.filter(decided_by=lead).exists()

    page.goto(f"/p/{demo.slug}/adjudicate/")
    page.get_by_role("link", name="Gold set and downloads").click()
    expect(page.locator("#gold-counts")).to_contain_text("adjudicated")
    screenshot(page, "gold-page")
    with page.expect_download() as info:
        page.get_by_role("button", name="Download JSONL").click()
    path = tmp_path / "gold.jsonl"
    info.value.save_as(path)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for row in rows:
        validator.validate(row)
    assert len(rows) == 101
    assert any("adjudicated" in row["gold_source"].values() for row in rows)
