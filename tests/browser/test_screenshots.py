"""Screenshots of the main screens at a desktop width (1440) and a phone width (390), saved as
test artifacts (test-artifacts/*.png) for a person to look at: the labelling screen and the
reviewer's tasks; the adjudication screen and queue, gold, agreement, evaluation (and its
paired comparison), the judges list and a run's calibration, the members page, the Reviewers
page (quality and throughput per reviewer) and a docs page. Each shot also checks the one
layout rule a picture most often breaks: nothing wider than the window; at phone width no
table scrolls sideways either (its rows stack), but a confusion matrix."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotate.imports.label_import import import_labels
from annotate.management.commands.load_demo import GUIDELINES, GUIDELINES_V2
from annotate.members.services import add_member
from annotate.models import Project, Role
from annotate.projects.opening import open_labelling
from annotate.projects.services import update_guidelines
from evaluation.judges.runs import import_judge_run
from evaluation.models import JudgeRun
from tests.conftest import ARTIFACTS, FIXTURES, import_fixture, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

expect.set_options(timeout=10_000)
WIDTHS = {"desktop": (1440, 900), "phone": (390, 844)}


@pytest.fixture
def demo(reviewer_a, reviewer_b, lead, outsider) -> Project:
    project = import_fixture("demo.jsonl", "demo")
    for person in (reviewer_a, reviewer_b, outsider):
        add_member(project=project, username=person.username, role=Role.REVIEWER)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    update_guidelines(project=project, guidelines=GUIDELINES, author=lead)
    project = open_labelling(project=project)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        import_labels(lines=stream, project=project)
    # v2 after the labels: the labelling screen shows v2, the re-audit lists the v1 gold
    project = update_guidelines(project=project, guidelines=GUIDELINES_V2, author=lead)
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        import_judge_run(lines=stream, project=project, user=lead)
    return project


def no_horizontal_scroll(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    viewport = page.viewport_size["width"]
    assert width <= viewport, f"{page.url} is {width}px wide in a {viewport}px window"


@pytest.mark.parametrize("size", WIDTHS)
def test_screenshots_of_the_reviewer_screen(browser, live_server, demo, outsider, size):
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
        with page.expect_response(lambda r: "/claims/" in r.url and r.request.method == "POST"):
            page.keyboard.press("1")
        page.wait_for_function("() => !document.querySelector('.htmx-request')")
        screenshot(page, f"labelling-{width}")
        no_horizontal_scroll(page)
        # the reviewer's own list of tasks
        page.goto("/p/demo/tasks/")
        screenshot(page, f"my-tasks-{width}")
        no_horizontal_scroll(page)
        page.go_back()
        page.wait_for_selector("body.js")
        # The sticky task bar never covers the control that has focus (scroll-padding).
        bar = page.locator("#task-bar")
        for key, focused in (("q", "#quote"), ("n", "#claim-note"), ("N", "#answer-note")):
            page.locator(".question-text").click()
            page.keyboard.press(key)
            expect(page.locator(focused)).to_be_focused()
            page.wait_for_timeout(100)  # the scroll that focus causes
            control, cover = page.locator(focused).bounding_box(), bar.bounding_box()
            assert control["y"] + control["height"] <= cover["y"] + 1, (size, focused)
        page.keyboard.press("Escape")
        page.keyboard.press("p")
        page.wait_for_timeout(100)
        control = page.locator(".passage-text:focus").bounding_box()
        assert control["y"] + min(control["height"], 40) <= bar.bounding_box()["y"] + 1
        # the window as the reviewer sees it, a passage focused above the bar
        page.screenshot(path=str(ARTIFACTS / f"labelling-{width}-focus.png"))
    finally:
        context.close()


@pytest.mark.parametrize("size", WIDTHS)
def test_screenshots_of_the_lead_screens(browser, live_server, demo, lead, size):
    width, height = WIDTHS[size]
    context = browser.new_context(
        viewport={"width": width, "height": height}, base_url=live_server.url
    )
    run = JudgeRun.objects.get(project=demo)
    try:
        page = context.new_page()
        login(page, lead)
        page.goto("/p/demo/adjudicate/")
        page.locator("table a[href^='/p/demo/adjudicate/']").first.click()
        page.wait_for_url(re.compile(r"/p/demo/adjudicate/\d+/$"))
        shots = [
            ("adjudication", None),
            ("queue", "/p/demo/adjudicate/"),
            ("gold", "/p/demo/gold/"),
            ("agreement", "/p/demo/agreement/"),
            ("evaluation", "/p/demo/evaluation/?a=baseline&b=verifier"),
            ("evaluation-comparison", "/p/demo/evaluation/?a=baseline&b=verifier#comparison"),
            # the run's calibration first: the judges list then shows its headline figures
            ("calibration", f"/p/demo/judges/{run.pk}/"),
            ("judges", "/p/demo/judges/"),
            ("members", "/p/demo/members/"),
            ("reviewers", "/p/demo/reviewers/"),
            ("guidelines", "/p/demo/guidelines/"),
            ("reaudit", "/p/demo/guidelines/reaudit/"),
            ("docs", "/docs/bundle-format/"),
        ]
        for name, path in shots:
            if path:
                page.goto(path)
                page.wait_for_load_state("load")
            screenshot(page, f"{name}-{width}")
            no_horizontal_scroll(page)
            if size == "phone":
                no_table_scrolls_sideways(page)
        page.goto("/p/demo/judges/")
        expect(page.locator("table").first).to_contain_text("[")  # kappa's interval
    finally:
        context.close()


def no_table_scrolls_sideways(page) -> None:
    """At phone width a table stacks its rows (or wraps); only a matrix keeps its grid."""
    page.wait_for_load_state("load")
    wide = page.evaluate(
        """() => [...document.querySelectorAll('.table-wrap, table')]
            .filter(e => e.offsetParent && e.scrollWidth > e.clientWidth + 1)
            .filter(e => !e.querySelector('#confusion') && e.id !== 'confusion')
            .map(e => e.querySelector('caption')?.textContent?.trim() || e.className)"""
    )
    assert wide == [], f"{page.url}: {wide} scroll sideways"
