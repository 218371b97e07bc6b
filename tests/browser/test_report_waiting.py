"""A lead opens a large project's agreement report before any was stored: the page waits in
place (no reload every few seconds, which would move a screen reader's or keyboard user's
place back to the top), and shows the report once, by itself, when the worker has stored it.
Without scripts it offers a link to reload (tests/browser/test_live_regions.py)."""

from __future__ import annotations

import pytest
from django_tasks_db.models import DBTaskResult
from playwright.sync_api import expect

from annotate.management.commands.load_demo import load as load_demo
from annotate.members.services import add_member
from annotate.models import Project, Role
from annotate.tasks import refresh_report
from tests.browser.test_accessibility import violations
from tests.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def demo(lead) -> Project:
    project = load_demo()
    add_member(project=project, username=lead.username, role=Role.LEAD)
    return project


def test_the_waiting_page_stays_put_and_shows_the_report_when_it_is_stored(
    page, demo, lead, database_tasks, settings
):
    login(page, lead)
    page.goto(f"/p/{demo.slug}/agreement/")
    expect(page.get_by_role("heading", name="Being computed")).to_be_visible()
    assert violations(page) == []  # axe: a timed refresh is a critical one (meta-refresh)
    page.get_by_role("link", name="Agreement").first.focus()
    page.evaluate("() => { window.stillTheSamePage = true }")
    polls = []
    page.on("request", lambda r: polls.append(r) if r.headers.get("hx-request") else None)
    page.wait_for_timeout(7_000)  # two polls and more: a meta refresh would have reloaded twice
    assert len(polls) >= 2
    assert page.evaluate("() => window.stillTheSamePage === true")
    assert page.evaluate("() => document.activeElement.textContent.trim()") == "Agreement"

    for task in DBTaskResult.objects.all():  # the worker's part
        refresh_report.call(*task.args_kwargs["args"])
    expect(page.locator('[data-report-freshness="current"]')).to_be_visible(timeout=10_000)
    expect(page.locator("table.agreement").first).to_contain_text("Support")
    assert page.evaluate("() => window.stillTheSamePage === undefined")  # reloaded, once
