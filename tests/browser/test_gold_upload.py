"""The Upload page in a real browser: gold from elsewhere names its source (the field shows
only for that format) and lands on the Gold page, whose table counts it as imported."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotate.members.services import add_member
from annotate.models import GoldImport
from annotate.projects.opening import open_labelling
from tests.conftest import FIXTURES, import_fixture, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_benchmarks_gold_uploads_with_its_source_and_is_counted(page, lead):
    project = import_fixture("halu/bundle.jsonl", "halu")
    add_member(project=project, username=lead.username, role="lead")
    open_labelling(project=project)
    login(page, lead)
    page.goto("/p/halu/upload/")
    source = page.get_by_label("Source of the gold")
    replace = page.get_by_label("Replace imported gold")
    expect(source).to_be_hidden()
    expect(replace).to_be_hidden()

    page.get_by_label("Gold from elsewhere", exact=False).check()
    expect(source).to_be_visible()
    expect(replace).to_be_visible()
    expect(page.get_by_label("Variant")).to_be_hidden()
    source.fill("halu-bench")
    page.get_by_label("File", exact=True).set_input_files(FIXTURES / "halu" / "gold.jsonl")
    page.get_by_role("button", name="Import bundle").click()

    expect(page).to_have_url("/p/halu/gold/")
    imported = page.locator("#gold-counts tr", has_text="Claims").locator("td").nth(3)
    expect(imported).to_have_text("67")
    assert GoldImport.objects.get().source == "halu-bench"
