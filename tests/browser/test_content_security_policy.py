"""The Content-Security-Policy holds on every main page, in a real browser: a reviewer and a
lead walk through their pages (and the API docs) and Chromium reports no violation -- no
inline script, handler or style, no eval, nothing from another origin. Autosave, which used
an htmx filter expression (evaluated, so forbidden), still saves while typing."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Assignment, Project, Role
from annotate.projects.opening import open_labelling
from evaluation.judges.runs import import_judge_run
from evaluation.models import JudgeRun
from tests.conftest import FIXTURES, import_fixture, login, may_create_projects

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

expect.set_options(timeout=10_000)


@pytest.fixture
def demo(reviewer_a, reviewer_b, lead, outsider) -> Project:
    project = import_fixture("demo.jsonl", "demo")
    for person, role in ((reviewer_a, Role.REVIEWER), (reviewer_b, Role.REVIEWER)):
        add_member(project=project, username=person.username, role=role)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    add_member(project=project, username=outsider.username, role=Role.REVIEWER)
    project = open_labelling(project=project)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        import_labels(lines=stream, project=project)
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        import_judge_run(lines=stream, project=project, user=lead)
    return project


@pytest.fixture
def violations(page) -> list[str]:
    """Every CSP violation Chromium reports, from the console and from script errors."""
    found: list[str] = []

    def on_console(message):
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            found.append(f"{page.url}: {message.text}")

    page.on("console", on_console)
    page.on("pageerror", lambda error: found.append(f"{page.url}: {error}"))
    return found


def visit(page, path: str) -> None:
    response = page.goto(path)
    assert response is not None and response.status < 400, (path, response and response.status)
    assert "default-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_load_state("load")


def test_a_reviewer_s_pages_raise_no_csp_violation(page, demo, outsider, violations):
    # outsider is a plain reviewer here: alice and bob have labelled everything already.
    login(page, outsider)
    for path in ("/", "/p/demo/", "/p/demo/tasks/", "/account/token/"):
        visit(page, path)
    page.goto("/p/demo/")
    page.get_by_role("button", name="Next task").click()
    page.wait_for_url(re.compile(r"/p/demo/tasks/\d+/$"))
    page.wait_for_selector("#labelling")
    # Typing a note saves a draft without leaving the field (the autosave event).
    note = page.locator("#answer-note")
    with page.expect_response(lambda r: r.url.endswith("/answer/") and r.request.method == "POST"):
        note.press_sequentially("typed, not changed")
    assignment = Assignment.objects.get(reviewer=outsider, status=Assignment.Status.IN_PROGRESS)
    assert assignment.note == "typed, not changed"
    page.keyboard.press("Escape")
    page.keyboard.press("?")  # the shortcuts dialog
    assert violations == []


def test_a_lead_s_pages_raise_no_csp_violation(page, demo, lead, violations):
    may_create_projects(lead)
    login(page, lead)
    run = JudgeRun.objects.get(project=demo)
    paths = [
        "/",
        "/p/demo/setup/",
        "/p/demo/upload/",
        "/p/demo/members/",
        "/p/demo/guidelines/",
        "/p/demo/guidelines/reaudit/",
        "/p/demo/claims/",
        "/p/demo/agreement/",
        "/p/demo/reviewers/",
        "/p/demo/adjudicate/",
        "/p/demo/evaluation/?a=baseline&b=verifier",
        "/p/demo/judges/",
        f"/p/demo/judges/{run.pk}/",
        "/projects/new/",
        "/account/token/",
        "/docs/bundle-format/",
        f"/p/demo/claims/{demo.answers.order_by('pk').first().pk}/",
    ]
    for path in paths:
        visit(page, path)
    page.goto("/p/demo/adjudicate/")
    first = page.locator("a[href^='/p/demo/adjudicate/']").first
    if first.count():
        first.click()
        page.wait_for_load_state("load")
    assert violations == []


def test_the_api_docs_work_under_the_policy(page, demo, lead, violations):
    login(page, lead)
    visit(page, "/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("claimdesk API")
    expect(page.locator(".opblock-tag-section").first).to_be_visible()
    assert violations == []


def test_the_login_page_raises_no_csp_violation(page, db, violations):
    visit(page, "/login/")
    assert violations == []
