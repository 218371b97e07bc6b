"""A lead's set-up forms in a real browser: after htmx swaps in a refused form or a panel with
a message, keyboard focus and the viewport follow it instead of falling back to <body>."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotate.members.services import allow_adding_anyone
from annotate.models import Answer
from tests.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_refused_member_form_puts_focus_on_the_field_in_error(page, team, lead, reviewer_a):
    allow_adding_anyone(user=lead)  # the password field is for new accounts
    login(page, lead)
    page.goto(f"/p/{team.slug}/members/")
    page.fill("input[name=username]", "newcomer")
    page.fill("input[name=password]", "password")
    page.get_by_role("button", name="Add member").click()
    password = page.locator("input[name=password]")
    expect(page.locator(".has-error")).to_contain_text("too common")
    expect(password).to_be_focused()


def test_a_boundary_edit_brings_its_message_into_view_and_focus(page, team, lead):
    answer = Answer.objects.get(project=team, answer_id="a2-deadline/baseline")
    login(page, lead)
    page.goto(f"/p/{team.slug}/claims/{answer.pk}/")
    split = page.get_by_role("button", name="Split").first
    split.scroll_into_view_if_needed()
    page.mouse.wheel(0, 2000)  # as far from the top, where the message appears, as it goes
    split.click()
    flash = page.locator("#claim-editor .flash").first
    expect(flash).to_be_visible()
    expect(flash).to_be_focused()
    expect(flash).to_be_in_viewport()
