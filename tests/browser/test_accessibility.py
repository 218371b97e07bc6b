"""axe-core (through axe-playwright-python) on every page a reviewer and a lead can reach:
no serious or critical violation anywhere. Pages with a state worth checking are checked in
it (the labelling screen with a claim labelled, the shortcuts and flag dialogs open, the queue
empty, a submitted task, Your tasks searched, the adjudication queue with a reviewer's flag)."""

from __future__ import annotations

import re

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import expect

from annotate.checks.selectors import decided_answers
from annotate.checks.services import mark_checks
from annotate.imports.label_import import import_labels
from annotate.labelling.services import flag_task
from annotate.members.services import add_member
from annotate.models import Answer, Assignment, Project, Role, WebhookDelivery
from annotate.projects.opening import open_labelling
from annotate.projects.services import update_guidelines
from annotate.webhooks.services import EVENTS, register_endpoint
from evaluation.judges.runs import import_judge_run
from evaluation.models import JudgeRun
from tests.conftest import FIXTURES, import_fixture, login, may_create_projects

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=10_000)
SERIOUS = {"serious", "critical"}
AXE = Axe()


@pytest.fixture
def demo(reviewer_a, reviewer_b, lead, outsider) -> Project:
    project = import_fixture("demo.jsonl", "demo")
    for person in (reviewer_a, reviewer_b, outsider):
        add_member(project=project, username=person.username, role=Role.REVIEWER)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    project = update_guidelines(project=project, guidelines="Label what the passages permit.")
    project = open_labelling(project=project)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        import_labels(lines=stream, project=project)
    # A second version after the labels: the re-audit page has gold to list.
    project = update_guidelines(
        project=project, guidelines="Label what the passages permit. Dates must match."
    )
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        import_judge_run(lines=stream, project=project, user=lead)
    return project


def violations(page) -> list[str]:
    """Serious and critical violations, one line per rule with the first elements. Measured
    with transitions off (prefers-reduced-motion): a colour caught between two states is no
    colour anybody reads."""
    page.emulate_media(reduced_motion="reduce")
    found = AXE.run(page).response["violations"]
    return [
        f"{page.url} [{v['impact']}] {v['id']}: {v['help']} -- "
        + "; ".join(" ".join(n["target"]) for n in v["nodes"][:5])
        + (f" (+{len(v['nodes']) - 5} more)" if len(v["nodes"]) > 5 else "")
        for v in found
        if v["impact"] in SERIOUS
    ]


def check(page, path: str | None, problems: list[str]) -> None:
    if path is not None:
        response = page.goto(path)
        assert response is not None and response.status < 400, (path, response and response.status)
        page.wait_for_load_state("load")
    if path == "/api/docs/":
        # Swagger UI draws itself after load; check it drawn, and with operations open.
        page.wait_for_selector(".opblock-tag-section")
        problems += violations(page)
        page.locator(".opblock-summary-control").first.click()
        page.wait_for_selector(".opblock-body")
        page.locator(".opblock-summary-control").nth(3).click()
    problems += violations(page)


def test_a_reviewer_s_pages_have_no_serious_accessibility_violation(page, demo, outsider):
    problems: list[str] = []
    check(page, "/login/", problems)
    login(page, outsider)
    for path in ("/", "/p/demo/", "/account/preferences/", "/account/token/", "/api/docs/"):
        check(page, path, problems)
    page.goto("/p/demo/")
    page.get_by_role("button", name="Next task").click()
    page.wait_for_url(re.compile(r"/p/demo/tasks/\d+/$"))
    page.wait_for_selector("body.js")
    check(page, None, problems)  # a fresh task
    with page.expect_response(lambda r: "/claims/" in r.url and r.request.method == "POST"):
        page.keyboard.press("1")
    page.wait_for_function("() => document.body.dataset.saving === '0'")
    check(page, None, problems)  # a labelled claim, incomplete
    page.keyboard.press("?")
    check(page, None, problems)  # the shortcuts dialog
    page.keyboard.press("Escape")
    page.locator("[data-open-flag]").click()
    expect(page.locator("#flag-dialog")).to_be_visible()
    check(page, None, problems)  # the "flag for the lead" dialog
    page.keyboard.press("Escape")
    check(page, "/p/demo/tasks/", problems)  # my tasks (the one in progress)
    # a submitted task, read-only, and the list of submitted tasks
    done = Assignment.objects.filter(reviewer__username="alice").select_related("answer").first()
    page.context.clear_cookies()
    login(page, done.reviewer)
    check(page, f"/p/demo/tasks/{done.answer.task_number}/", problems)
    check(page, "/p/demo/tasks/", problems)
    check(page, "/p/demo/tasks/?q=exam&status=submitted", problems)  # searched and filtered
    check(page, "/p/demo/tasks/?q=zyzzyva", problems)  # nothing found
    check(page, f"/p/demo/tasks/{done.answer.task_number}/flag/", problems)  # the flag page
    for doc in ("bundle-format", "gold-export", "judge-runs", "ragas", "api"):
        check(page, f"/docs/{doc}/", problems)
    # at phone width: the task, and the docs whose code blocks then scroll sideways
    page.set_viewport_size({"width": 390, "height": 844})
    check(page, f"/p/demo/tasks/{done.answer.task_number}/", problems)
    for doc in ("bundle-format", "api"):
        check(page, f"/docs/{doc}/", problems)
    page.set_viewport_size({"width": 1280, "height": 800})
    # the queue empty: alice has labelled every answer she can
    Answer.objects.filter(project=demo).exclude(assignments__reviewer=done.reviewer).update(
        task_number=None
    )
    check(page, "/p/demo/done/", problems)
    assert problems == [], "\n".join(problems)


def test_a_lead_s_pages_have_no_serious_accessibility_violation(page, demo, lead):
    problems: list[str] = []
    may_create_projects(lead)  # the New project page is among them
    flagged = Assignment.objects.filter(project=demo).first()
    flag_task(assignment=flagged, reason="other", note="The answer stops mid-sentence.")
    login(page, lead)
    run = JudgeRun.objects.get(project=demo)
    answer = Answer.objects.filter(project=demo).exclude(claims=None).first()
    judged = run.verdicts.exclude(answer=None).values_list("answer_id", flat=True).first()
    hook = register_endpoint(
        project=demo, url="https://hooks.example.org/x", events=EVENTS, by=lead
    )
    WebhookDelivery.objects.create(  # a failed one in the log (nothing is sent from here)
        endpoint=hook,
        event="task.submitted",
        message_id="msg_1",
        payload={},
        status="failed",
        attempts=6,
        status_code=500,
        error="The receiver answered 500.",
    )
    # Gold checks on two decided answers: the Gold page's list, a check's adjudication screen.
    decided = Answer.objects.filter(pk__in=decided_answers(demo)).order_by("answer_id")
    checked = list(decided[:2])
    mark_checks(project=demo, lead=lead, answer_ids=[a.answer_id for a in checked])
    paths = [
        "/",
        "/projects/new/",
        f"/p/demo/adjudicate/{checked[0].task_number}/",
        "/p/demo/setup/",
        "/p/demo/members/",
        "/p/demo/guidelines/",
        "/p/demo/guidelines/reaudit/",
        "/p/demo/upload/",
        "/p/demo/claims/",
        f"/p/demo/claims/{answer.pk}/",
        "/p/demo/agreement/",
        "/p/demo/agreement/?guideline_version=1",
        "/p/demo/reviewers/",
        "/p/demo/adjudicate/",
        "/p/demo/gold/",
        "/p/demo/evaluation/?a=baseline&b=verifier",
        "/p/demo/judges/",
        "/p/demo/webhooks/",
        f"/p/demo/webhooks/{hook.pk}/",
        f"/p/demo/judges/{run.pk}/",
        f"/p/demo/judges/{run.pk}/?by=slice",  # the strata table
        f"/p/demo/judges/{run.pk}/answers/{judged}/",
        f"/p/demo/judges/compare/?a={run.pk}&b={run.pk}",
        "/account/token/",
        "/account/preferences/",
        "/api/docs/",
    ]
    for path in paths:
        check(page, path, problems)
    page.goto("/p/demo/adjudicate/")
    page.locator("table a[href^='/p/demo/adjudicate/']").first.click()
    page.wait_for_url(re.compile(r"/p/demo/adjudicate/\d+/$"))
    check(page, None, problems)  # the adjudication screen, focus on its first field
    page.keyboard.press("a")
    page.keyboard.press("R")  # a claim's own rationale, unfolded
    page.keyboard.press("Escape")
    page.keyboard.press("?")
    check(page, None, problems)  # its keys
    page.keyboard.press("Escape")
    page.reload()
    page.keyboard.press("Enter")  # nothing chosen: refused, with the message focused
    page.wait_for_selector("#adjudication-error:focus")
    check(page, None, problems)
    # the evaluation report's paired comparison, its tab chosen by the address
    check(page, "/p/demo/evaluation/?a=baseline&b=verifier#comparison", problems)
    page.set_viewport_size({"width": 390, "height": 844})
    for path in ("/p/demo/adjudicate/", "/p/demo/judges/", "/p/demo/evaluation/", "/p/demo/gold/"):
        check(page, path, problems)
    assert problems == [], "\n".join(problems)


def test_the_pages_of_three_reviewers_have_no_serious_accessibility_violation(page, lead):
    """The demo as `make run` loads it: carol is the third reviewer of 12 answers, so the
    agreement page carries its every-label-set tables and a task's adjudication screen a
    column and a choice per reviewer; she labelled gold checks and everyone worked in the app,
    so the Reviewers page shows every figure, a drift flag and its warning."""
    from annotate.management.commands.load_demo import load

    demo = load()
    add_member(project=demo, username=lead.username, role=Role.LEAD)
    number = Answer.objects.get(project=demo, answer_id="a2-deadline/baseline").task_number
    login(page, lead)
    problems: list[str] = []
    for path in ("/p/demo/reviewers/", "/p/demo/agreement/", f"/p/demo/adjudicate/{number}/"):
        check(page, path, problems)
    expect(page.get_by_role("columnheader", name="Reviewer C").first).to_be_visible()
    assert problems == [], "\n".join(problems)
