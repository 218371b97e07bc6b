"""The lead reads the demo judge's corrected share by stratum in a real browser: the Strata
selector swaps its section in place (htmx) and keeps the URL shareable, and without scripts
the same form is a plain GET."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.test_calibration_page import demo  # noqa: F401 (the fixture)
from tests.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=10_000)


def test_the_strata_selector_swaps_its_section_and_the_headline_stays(page, demo, lead):  # noqa: F811
    project, run = demo
    login(page, lead)
    page.goto(f"/p/{project.slug}/judges/{run.pk}/")
    expect(page.locator("#ppi-plus-plus")).to_contain_text("headline")
    expect(page.locator("#no-strata")).to_be_visible()

    page.select_option("#id_by", "slice")
    page.wait_for_url("**by=slice**")
    expect(page.locator("#strata tbody tr[data-stratum]")).to_have_count(3)
    expect(page.locator("#stratified")).to_contain_text("stratified")
    page.select_option("#id_by", "variant")
    page.wait_for_url("**by=variant**")
    expect(page.locator('#strata tr[data-stratum="verifier"]')).to_be_visible()
    expect(page.locator("#ppi-plus-plus")).to_contain_text("headline")  # nothing else moved
    # Another split keeps the strata chosen.
    page.select_option("#id_split", "all")
    page.wait_for_url("**split=all**")
    assert "by=variant" in page.url
    expect(page.locator('#strata tr[data-stratum="verifier"]')).to_be_visible()


def test_the_strata_selector_works_without_javascript(browser, live_server, demo, lead):  # noqa: F811
    project, run = demo
    context = browser.new_context(java_script_enabled=False, base_url=live_server.url)
    page = context.new_page()
    try:
        login(page, lead)
        page.goto(f"/p/{project.slug}/judges/{run.pk}/?split=all")
        page.select_option("#id_by", "variant")
        page.get_by_role("button", name="Stratify").click()
        page.wait_for_url("**by=variant**")
        assert "split=all" in page.url  # the split chosen stays
        expect(page.locator('#strata tr[data-stratum="baseline"]')).to_be_visible()
    finally:
        context.close()
