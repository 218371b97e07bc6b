"""Single sign-on in Chromium, through a real OpenID Connect provider's sign-in page
(oidc-provider-mock over HTTP, tests/oidc_provider.py): a person lands on the projects the
mapping of their groups gives them, with those roles; with password login off the login page
has no password form and signing in through the provider still works; logging out at the
provider passes the Content-Security-Policy. Chromium reports no CSP violation throughout,
and axe no serious one on either login page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotate.members.services import add_member
from annotate.models import Role
from tests.browser.test_accessibility import violations as accessibility_violations
from tests.conftest import PASSWORD, import_fixture, screenshot
from tests.oidc_provider import PROVIDER_NAME, passwords_off

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

expect.set_options(timeout=10_000)


@pytest.fixture
def projects(db):
    """demo and small are the mapping's; stages is not. lena leads all three, by hand."""
    made = {
        slug: import_fixture(name, slug)
        for slug, name in {
            "demo": "demo.jsonl",
            "small": "small.jsonl",
            "stages": "stages.jsonl",
        }.items()
    }
    for project in made.values():
        add_member(project=project, username="lena", role=Role.LEAD, password=PASSWORD)
    return made


@pytest.fixture
def violations(page) -> list[str]:
    found: list[str] = []

    def on_console(message):
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            found.append(f"{page.url}: {message.text}")

    page.on("console", on_console)
    return found


def sign_in_at_the_provider(page, provider: str, sub: str) -> None:
    page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}").click()
    page.wait_for_url(re.compile(re.escape(f"{provider}/oauth2/authorize?")))
    page.get_by_role("button", name=sub, exact=True).click()


def projects_listed(page) -> list[tuple[str, str]]:
    expect(page.get_by_role("heading", name="Your projects")).to_be_visible()
    rows = page.locator("table tbody tr")
    return [
        (row.locator("th").inner_text(), row.locator(".badge[class*=role-]").inner_text())
        for row in rows.all()
    ]


def test_a_reviewer_signs_in_and_lands_on_the_projects_their_group_maps_to(
    page, live_server, sso, projects, violations
):
    page.goto("/login/")
    expect(page.locator("input[name=password]")).to_be_visible()  # both ways, by default
    screenshot(page, "login-single-sign-on-and-password")
    assert accessibility_violations(page) == []
    sign_in_at_the_provider(page, sso, "rita")
    page.wait_for_url(f"{live_server.url}/")
    assert projects_listed(page) == [("Course notes v1", "Reviewer"), ("Small sample", "Reviewer")]
    assert violations == []


def test_a_lead_s_groups_give_the_higher_role_where_two_apply(
    page, live_server, sso, projects, violations
):
    page.goto("/login/?next=/p/demo/")
    sign_in_at_the_provider(page, sso, "leo")  # eval-leads and eval-reviewers
    page.wait_for_url(f"{live_server.url}/p/demo/setup/")  # the page asked for: a lead's
    page.goto("/")
    assert projects_listed(page) == [("Course notes v1", "Lead"), ("Small sample", "Reviewer")]
    assert violations == []


def test_with_password_login_off_the_form_is_gone_and_the_provider_signs_in(
    page, live_server, settings, sso, projects, violations
):
    passwords_off(settings)
    settings.CLAIMDESK_OIDC_PROVIDER_LOGOUT = True
    settings.OIDC_STORE_ID_TOKEN = True
    page.goto("/login/")
    expect(page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}")).to_be_visible()
    expect(page.locator("input[type=password]")).to_have_count(0)
    expect(page.locator("main form")).to_have_count(0)
    expect(page.get_by_text("Forgot your password?")).to_have_count(0)
    screenshot(page, "login-single-sign-on-only")
    assert accessibility_violations(page) == []
    page.goto("/admin/login/")
    page.wait_for_url(re.compile(r"/login/\?next=/admin/$"))
    expect(page.locator("input[type=password]")).to_have_count(0)

    page.goto("/login/")
    sign_in_at_the_provider(page, sso, "rita")
    page.wait_for_url(f"{live_server.url}/")
    assert projects_listed(page) == [("Course notes v1", "Reviewer"), ("Small sample", "Reviewer")]

    # Logging out ends the session here, then at the provider, which comes back to the login
    # page: the logout form's redirect to it is within form-action.
    page.locator("summary", has_text="rita").click()
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(re.escape(f"{sso}/oauth2/end_session?")))
    page.get_by_role("button", name="End session").click()
    page.wait_for_url(f"{live_server.url}/login/")
    page.goto("/")
    page.wait_for_url(re.compile(r"/login/\?next=/$"))
    assert violations == []
