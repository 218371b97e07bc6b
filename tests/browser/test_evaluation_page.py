"""The lead reads the evaluation report of the demo project in a real browser, with JavaScript
off as well as on: every section is there, the charts are accessible images, the limits form
works by plain GET, and the page fits 1280 px without horizontal scrolling."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotate.management.commands.load_demo import load as load_demo
from annotate.members.services import add_member
from annotate.models import Project, Role
from tests.conftest import login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
TIMEOUT_MS = 10_000
expect.set_options(timeout=TIMEOUT_MS)

SECTIONS = ("Retrieval", "Generation", "Abstention", "Stage diagnosis", "Variants", "Latency")


@pytest.fixture
def demo(lead) -> Project:
    project = load_demo()
    add_member(project=project, username=lead.username, role=Role.LEAD)
    return project


def test_lead_reads_the_demo_report_and_sets_limits(page, demo, lead):
    login(page, lead)
    expect(page.locator(".user-menu summary")).to_contain_text(lead.username)
    page.goto(f"/p/{demo.slug}/evaluation/")
    # The sections are tabs: one shown at a time, each a click (or an arrow key) away.
    tabs = page.get_by_role("tablist", name="Report sections").get_by_role("tab")
    expect(tabs).to_have_count(len(SECTIONS))
    for i, title in enumerate(SECTIONS):
        tabs.nth(i).click()
        expect(page.get_by_role("heading", name=title, exact=True, level=2)).to_be_visible()
        assert page.locator(".report-section:visible").count() == 1
    expect(page.get_by_text("exponential gain")).to_be_visible()
    charts = page.locator("svg[role=img]")
    assert charts.count() >= 15
    names = page.evaluate(
        "() => [...document.querySelectorAll('svg[role=img]')]"
        ".map(svg => svg.querySelector(':scope > title')?.textContent || '')"
    )
    assert all(names) and any(name.startswith("Stage diagnosis") for name in names)
    no_sideways = "document.documentElement.scrollWidth <= window.innerWidth"
    assert page.evaluate(no_sideways)
    screenshot(page, "evaluation-report")

    page.get_by_role("tab", name="Variants").click()
    page.fill("input[name=latency_budget]", "1500")
    page.fill("input[name=unsupported_limit]", "0.3")
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url("**latency_budget=1500**#variants")
    expect(page.get_by_role("tab", name="Variants")).to_have_attribute("aria-selected", "true")
    expect(page.get_by_text("Meets the limits:")).to_be_visible()
    variants = page.locator("#table-variants tbody tr")
    expect(variants).to_have_count(2)


def test_report_shows_its_data_without_javascript(browser, live_server, demo, lead):
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1280, "height": 800}, base_url=live_server.url
    )
    page = context.new_page()
    try:
        login(page, lead)
        page.goto(f"/p/{demo.slug}/evaluation/")
        expect(page.locator("#table-retrieval table").first).to_be_visible()
        expect(page.locator("#table-stages")).to_contain_text("not_retrieved")
    finally:
        context.close()


def test_a_table_filter_keeps_the_keyboard_focus_through_its_swap(page, demo, lead):
    """Each filter form sits inside the table htmx replaces: htmx puts focus back only on an
    element with the same id, so every select (and pager link) has one; without it, each
    arrow key on a select swapped the table and dropped focus to the page."""
    login(page, lead)
    page.goto(f"/p/{demo.slug}/evaluation/")
    page.get_by_role("tab", name="Stage diagnosis").click()
    select = page.locator("#table-diagnosis-dv")
    select.focus()
    with page.expect_response(
        lambda r: "/evaluation/" in r.url and r.request.headers.get("hx-request")
    ):
        select.select_option(index=1)
    page.wait_for_function("() => document.activeElement && document.activeElement.id")
    assert page.evaluate("() => document.activeElement.id") == "table-diagnosis-dv"


def test_the_paired_comparison_is_a_skip_link_away_and_tabs_move_by_arrow_keys(page, demo, lead):
    """#34: the report was 10,645 px tall with the comparison far down. Now its sections are
    tabs, the page a section tall, and the comparison the second skip link: Tab, Tab, Enter
    from page load."""
    login(page, lead)
    page.goto(f"/p/{demo.slug}/evaluation/?a=baseline&b=verifier")
    retrieval_height = page.evaluate("document.documentElement.scrollHeight")
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to the paired comparison")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#comparison")).to_be_focused()
    expect(page.locator("#comparison")).to_contain_text("Paired comparison: baseline → verifier")
    expect(page.get_by_role("tab", name="Variants")).to_have_attribute("aria-selected", "true")
    assert page.locator(".report-section:visible").count() == 1
    # every section is shorter than the old page: one tab at a time
    assert retrieval_height < 6000, retrieval_height
    # the tabs: arrow keys, Home and End, as any tab list
    page.get_by_role("tab", name="Variants").focus()
    page.keyboard.press("ArrowRight")
    expect(page.get_by_role("tab", name="Latency")).to_be_focused()
    expect(page.get_by_role("heading", name="Latency", level=2)).to_be_visible()
    page.keyboard.press("Home")
    expect(page.get_by_role("tab", name="Retrieval")).to_have_attribute("aria-selected", "true")
    assert page.url.endswith("#retrieval")
