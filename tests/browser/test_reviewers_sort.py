"""The Reviewers page in a real browser: a column header sorts the table through htmx (the
table alone is swapped, the address follows), and choosing a field redraws the kappa and
accuracy columns for it."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from tests.api import build_demo
from tests.conftest import PASSWORD, login
from tests.evaluation import reviewers_world as world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_headers_sort_and_the_field_choice_redraws_through_htmx(page, reviewer_a, reviewer_b, lead):
    carol = get_user_model().objects.create_user(username="carol", password=PASSWORD)
    demo = build_demo([reviewer_a, reviewer_b], lead)
    world.build(demo, alice=reviewer_a, carol=carol, lead=lead)
    login(page, lead)
    page.goto("/p/demo/reviewers/")
    rows = page.locator("#reviewers-table tbody tr[data-reviewer]")
    expect(rows).to_have_count(3)
    expect(rows.first).to_have_attribute("data-reviewer", "alice")
    marker = page.evaluate("() => (window.__notReloaded = true)")
    assert marker
    page.locator("a[data-sort=per_day]").click()
    expect(page).to_have_url(re.compile(r"sort=-per_day"))
    # carol works 3 a day, alice 2, bob's label sets carry no time (last)
    expect(rows.nth(0)).to_have_attribute("data-reviewer", "carol")
    expect(rows.nth(2)).to_have_attribute("data-reviewer", "bob")
    page.locator("a[data-sort=per_day]").click()
    expect(page).to_have_url(re.compile(r"sort=per_day"))
    expect(rows.nth(0)).to_have_attribute("data-reviewer", "alice")
    expect(rows.nth(2)).to_have_attribute("data-reviewer", "bob")
    page.select_option("#reviewers-field", "severity")
    expect(page.locator("#reviewers-table")).to_contain_text("Kappa matrix · Severity")
    expect(page).to_have_url(re.compile(r"field=severity"))
    # all of it without a page load: htmx swapped the table
    assert page.evaluate("() => window.__notReloaded === true")
