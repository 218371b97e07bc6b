"""Pages that change by themselves speak through a region that stays (#34): the job page's
status panel is replaced on every poll, but what a screen reader hears comes from one polite
region whose text changes once per change of state, never once per poll; when the import
fails, focus goes to its list of problems. The report-waiting page never reloads itself with
a meta refresh, with scripts or without."""

from __future__ import annotations

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from playwright.sync_api import expect

from annotate.management.commands.load_demo import load as load_demo
from annotate.members.services import add_member
from annotate.models import Project, Role
from annotate.tasks import refresh_report
from jobs.models import Job
from tests.browser.test_accessibility import violations
from tests.conftest import login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=10_000)

# Every text the region takes, and whether it is still the element the page opened with.
WATCH = """() => {
    window.region = document.getElementById('job-announcer');
    window.said = [];
    new MutationObserver(() => window.said.push(window.region.textContent))
        .observe(window.region, {childList: true, characterData: true, subtree: true});
}"""


@pytest.fixture
def demo(lead) -> Project:
    project = load_demo()
    add_member(project=project, username=lead.username, role=Role.LEAD)
    return project


def polled(response) -> bool:
    return "/jobs/" in response.url and bool(response.request.headers.get("hx-request"))


def polls(page, count: int) -> None:
    for _ in range(count):
        with page.expect_response(polled):
            pass


def test_the_job_page_says_each_change_once_and_focuses_the_problems(page, demo, lead):
    job = Job.objects.create(
        kind=Job.Kind.LABEL_IMPORT,
        project=demo,
        project_slug=demo.slug,
        created_by=lead,
        file_name="labels.jsonl",
    )
    login(page, lead)
    page.goto(f"/jobs/{job.pk}/")
    expect(page.get_by_role("heading", name="Waiting for a worker")).to_be_visible()
    assert page.locator("#job-status").get_attribute("aria-live") is None  # replaced: not live
    expect(page.locator("#job-announcer")).to_have_attribute("aria-live", "polite")
    expect(page.get_by_role("link", name="Upload", exact=True).first).to_be_visible()
    page.evaluate(WATCH)
    polls(page, 2)  # nothing changed: nothing said
    assert page.evaluate("window.said") == []

    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.RUNNING,
        stage="reading",
        lines_total=100,
        lines_read=10,
        started_at=now,
        heartbeat_at=now,
    )
    expect(page.get_by_role("heading", name="Importing…")).to_be_visible()
    for read in (20, 30):  # counts move on every poll: not said each time
        Job.objects.filter(pk=job.pk).update(lines_read=read, heartbeat_at=timezone.now())
        polls(page, 1)
    polls(page, 1)
    said = page.evaluate("window.said.filter(Boolean)")
    assert len(said) == 1 and said[0].startswith("Importing…"), said

    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.FAILED,
        errors=[[3, "unknown answer 'x'", "label"], [7, "unknown answer 'y'", "label"]],
        failure="The file was not imported.",
        finished_at=timezone.now(),
    )
    expect(page.get_by_role("heading", name="Not imported")).to_be_visible()
    expect(page.locator("#bundle-errors")).to_be_focused()  # not <body>
    said = page.evaluate("window.said.filter(Boolean)")
    assert len(said) == 2 and said[1].startswith("Not imported"), said
    assert page.evaluate("window.region === document.getElementById('job-announcer')")
    assert violations(page) == []


def test_the_waiting_page_has_no_meta_refresh_and_a_polite_status(
    browser, live_server, demo, lead, settings, database_tasks
):
    for scripts in (True, False):
        context = browser.new_context(java_script_enabled=scripts, base_url=live_server.url)
        page = context.new_page()
        try:
            login(page, lead)
            page.goto(f"/p/{demo.slug}/agreement/")
            expect(page.get_by_role("heading", name="Being computed")).to_be_visible()
            assert 'http-equiv="refresh"' not in page.content()
            expect(page.locator("[role=status][aria-live=polite]").first).to_contain_text(
                "A worker is computing this report"
            )
            if not scripts:  # a link to reload, since the page never does it alone
                for task in DBTaskResult.objects.all():
                    refresh_report.call(*task.args_kwargs["args"])
                page.get_by_role("link", name="Reload this page").click()
                expect(page.locator('[data-report-freshness="current"]')).to_be_visible()
        finally:
            context.close()
