"""The lead reads the calibration of the demo judge run in a real browser: the headline
numbers, the confusion matrix, the corrected estimates, the bias checks and the disagreements,
switches the gold split (htmx, and by plain GET), and follows a disagreement to its answer."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotate.management.commands.load_demo import load as load_demo
from annotate.members.services import add_member
from annotate.models import Project, Role
from evaluation.judges.runs import import_judge_run
from evaluation.models import JudgeRun
from tests.conftest import FIXTURES, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=10_000)


@pytest.fixture
def demo(lead) -> tuple[Project, JudgeRun]:
    project = load_demo()
    add_member(project=project, username=lead.username, role=Role.LEAD)
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        run = import_judge_run(lines=stream, project=project, user=lead).run
    return project, run


def test_lead_reads_the_calibration_of_the_demo_judge(page, demo, lead):
    project, run = demo
    login(page, lead)
    page.goto(f"/p/{project.slug}/judges/")
    page.get_by_role("link", name="strict-judge-v2").click()
    page.wait_for_url(f"**/judges/{run.pk}/")

    headline = page.locator("#headline")
    expect(headline).to_contain_text("Scored (n)")
    expect(headline).to_contain_text("2 malformed · 1 timed out")
    expect(headline).to_contain_text("Human–human kappa (ceiling)")
    expect(page.locator("#confusion caption")).to_have_text("Confusion: rows gold, columns judge")
    expect(page.locator("#corrected")).to_contain_text("Rogan–Gladen")
    expect(page.locator("#bias-variant")).to_contain_text("verifier")
    expect(page.locator("#failures")).to_contain_text("malformed")
    expect(page.locator("#failures")).to_contain_text("quote not found")
    assert page.locator("#disagreements tbody tr").count() == 6
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(page, "calibration")

    # htmx swaps the report for another split and keeps the URL shareable
    page.select_option("#id_split", "all")
    page.wait_for_url("**split=all**")
    expect(page.locator("#headline")).to_contain_text("Gold claims in split")
    assert page.locator("#disagreements tbody tr").count() > 6

    first = page.locator("#disagreements tbody tr a").first
    claim = page.locator("#disagreements tbody tr td:nth-child(2)").first.inner_text()
    first.click()
    page.wait_for_url("**/answers/**")
    expect(page.get_by_text(claim, exact=True)).to_be_visible()
    expect(page.locator("body")).not_to_contain_text("baseline")  # the variant stays hidden


def test_the_split_switch_works_without_javascript(browser, live_server, demo, lead):
    project, run = demo
    context = browser.new_context(java_script_enabled=False, base_url=live_server.url)
    page = context.new_page()
    try:
        login(page, lead)
        page.goto(f"/p/{project.slug}/judges/{run.pk}/")
        page.select_option("#id_split", "judge_dev")
        page.get_by_role("button", name="Show").click()
        page.wait_for_url("**split=judge_dev**")
        expect(page.locator("h2", has_text="Judge versus gold on")).to_contain_text("judge_dev")
    finally:
        context.close()


def test_lead_checks_the_gate_and_plans_a_sample_with_the_page_s_forms(page, demo, lead):
    """The gate's and the planner's forms are plain GET forms: the verdict and the plan come
    back on the same page, each form keeping the other's choice."""
    project, run = demo
    with open(FIXTURES / "demo_judge_run_v2.jsonl", "rb") as stream:
        import_judge_run(lines=stream, project=project, user=lead)
    login(page, lead)
    page.goto(f"/p/{project.slug}/judges/{run.pk}/")
    expect(page.locator("#plan-uniform")).to_be_visible()  # the default plan, ±0.05
    page.fill("#id_min_kappa", "0.3")
    page.select_option("#id_baseline", "strict-judge-v3")
    page.locator("#gate-form button").click()
    page.wait_for_url("**min_kappa=0.3**")
    verdict = page.locator("#gate-verdict")
    expect(verdict).to_contain_text("kappa ≥ 0.3 at the 95% lower end")
    expect(verdict).to_contain_text("strict-judge-v3 (McNemar p =")
    expect(page.locator("#gate-mcnemar")).to_be_visible()
    page.fill("#id_plan", "0.1")
    page.locator("#plan-form button").click()
    page.wait_for_url("**plan=0.1**")
    expect(page.locator("#plan-basis")).to_contain_text("±0.1")
    expect(page.locator("#gate-verdict")).to_be_visible()  # the gate kept
    expect(page.locator("#plan-chart svg")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
