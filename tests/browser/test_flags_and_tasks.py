"""A reviewer's own work and their way to raise a problem (#34), in a real browser: "Flag…"
opens a dialog a keyboard fills (reason, words, send) without a label key firing, and the
flag lands in the lead's queue, where the lead resolves it; "Your tasks" searches and filters
as the reviewer types, without a reload. Screenshots of each at 1440 and 390 px."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotate.members.services import add_member
from annotate.models import Assignment, ClaimLabel, Flag, Project, Role
from tests.browser.test_accessibility import violations
from tests.conftest import labelled_demo, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=10_000)
WIDTHS = {"desktop": (1440, 900), "phone": (390, 844)}


@pytest.fixture
def demo(reviewer_a, reviewer_b, lead, outsider) -> Project:
    project = labelled_demo(leads=[lead.username])
    add_member(project=project, username=outsider.username, role=Role.REVIEWER)
    return project


@pytest.mark.parametrize("size", WIDTHS)
def test_a_reviewer_flags_a_task_by_keyboard_and_the_lead_resolves_it(
    browser, live_server, demo, outsider, lead, size
):
    width, height = WIDTHS[size]
    context = browser.new_context(
        viewport={"width": width, "height": height}, base_url=live_server.url
    )
    try:
        page = context.new_page()
        login(page, outsider)
        page.goto("/p/demo/")
        page.get_by_role("button", name="Next task").click()
        page.wait_for_url(re.compile(r"/p/demo/tasks/\d+/$"))
        page.wait_for_selector("body.js")
        number = int(re.search(r"/tasks/(\d+)/", page.url).group(1))
        link = page.locator("[data-open-flag]")
        expect(link).to_be_visible()
        link.focus()
        page.keyboard.press("Enter")
        dialog = page.locator("#flag-dialog")
        expect(dialog).to_be_visible()
        first = dialog.locator("input[name=reason]").first
        expect(first).to_be_focused()
        page.keyboard.press("ArrowDown")  # the radio group's own keys: the second reason
        expect(dialog.locator("input[value=wrong_passages]")).to_be_checked()
        page.keyboard.press("Tab")
        expect(dialog.locator("#flag-note")).to_be_focused()
        page.keyboard.type("1 j passage 2 is about another course")  # text, never label keys
        box = dialog.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width
        assert violations(page) == []
        screenshot(page, f"flag-dialog-{width}")
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")  # "Flag for the lead"
        expect(page.locator(".flash.success")).to_contain_text(f"Task {number} is flagged")
        assert not ClaimLabel.objects.filter(assignment__reviewer=outsider).exclude(support="")
        flag = Flag.objects.get()
        assert flag.reason == "wrong_passages"
        assert flag.note == "1 j passage 2 is about another course"
        # the lead's queue lists it; the lead resolves it
        context.clear_cookies()
        login(page, lead)
        page.goto("/p/demo/adjudicate/")
        flags = page.locator("#flags")
        expect(flags).to_contain_text("The passages are wrong or missing")
        expect(flags).to_contain_text("passage 2 is about another course")
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert violations(page) == []
        screenshot(page, f"queue-flags-{width}")
        flags.get_by_label(f"What you did about the flag on task {number}").fill("fixed p2")
        flags.get_by_role("button", name=f"Resolve the flag on task {number}").click()
        expect(page.locator(".flash.success")).to_contain_text(f"flag on task {number}")
        expect(page.locator("#flags")).to_contain_text("No open flag")
        flag.refresh_from_db()
        assert flag.resolved_by == lead and flag.resolution == "fixed p2"
    finally:
        context.close()


@pytest.mark.parametrize("size", WIDTHS)
def test_your_tasks_searches_and_filters_as_you_type(browser, live_server, demo, reviewer_a, size):
    width, height = WIDTHS[size]
    context = browser.new_context(
        viewport={"width": width, "height": height}, base_url=live_server.url
    )
    mine = Assignment.objects.filter(project=demo, reviewer=reviewer_a).select_related(
        "answer__case"
    )
    question = mine.order_by("answer__task_number")[0].answer.case.question
    word = max(re.findall(r"[A-Za-z]{4,}", question), key=len)
    expected = sum(word.lower() in a.answer.case.question.lower() for a in mine)
    try:
        page = context.new_page()
        login(page, reviewer_a)
        page.goto("/p/demo/tasks/")
        rows = page.locator("#my-tasks tbody tr")
        expect(rows).to_have_count(mine.count())
        expect(page.locator("#my-tasks")).to_contain_text(question[:40])
        page.evaluate("window.notReloaded = true")
        page.get_by_label("Search the questions").fill(word)  # htmx, as the reviewer types
        expect(rows).to_have_count(expected)
        assert page.evaluate("window.notReloaded === true")
        assert f"q={word}" in page.url  # the address keeps the search
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert violations(page) == []
        screenshot(page, f"my-tasks-search-{width}")
        page.get_by_label("Status").select_option("in_progress")
        expect(page.locator("#my-tasks")).to_contain_text("None of your tasks matches")
        assert violations(page) == []
    finally:
        context.close()
