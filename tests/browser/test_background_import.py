"""A big bundle on the New project page, imported by a real worker: the lead watches the
progress bar move, reloads mid-way and still sees it, and lands on the set-up page; a broken
bundle of the same size lists every problem by line and writes nothing."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from annotate.models import Answer, Membership, Project, Role
from jobs.models import Job
from tests.conftest import login, may_create_projects, screenshot
from tests.workers import write_bundle

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]
ANSWERS = 5000
JOB_URL = re.compile(r"/jobs/[0-9a-f-]{36}/$")


@pytest.fixture
def lead(lead):
    """A lead who may create projects (annotate.projects.access)."""
    may_create_projects(lead)
    return lead


def upload(page, slug: str, path) -> None:
    page.goto("/projects/new/")
    page.get_by_label("Slug").fill(slug)
    page.get_by_label("File", exact=True).set_input_files(path)
    page.get_by_role("button", name="Create project").click()


def progress_value(page) -> float | None:
    """The progress bar's value now, in one step (htmx may swap it, or the page navigate to
    set-up, at any moment)."""
    try:
        value = page.evaluate(
            "() => document.querySelector('progress[data-job-progress]')?.getAttribute('value')"
        )
    except PlaywrightError:  # the page was navigating
        return None
    return float(value) if value is not None else None


def test_a_lead_watches_a_big_import_survives_a_reload_and_lands_on_set_up(
    page, database_tasks, workers, lead, tmp_path
):
    bundle = write_bundle(tmp_path / "big.jsonl", ANSWERS)
    worker = workers()
    login(page, lead)
    upload(page, "big", bundle)

    expect(page).to_have_url(JOB_URL, timeout=60_000)
    job_url = page.url
    try:
        expect(page.locator("[data-job-status=running]")).to_be_visible(timeout=60_000)
    except AssertionError as exc:
        job = Job.objects.get()
        raise AssertionError(f"{job.status} {job.stage}\n{worker.output()}") from exc
    seen: set[float] = set()
    reloaded = False
    while "/setup/" not in page.url:
        value = progress_value(page)
        if value is not None:
            seen.add(value)
            if not reloaded and len(seen) >= 2:
                screenshot(page, "import-progress")
                page.reload()
                reloaded = True
                if page.url != job_url:
                    # It finished while the page reloaded: the job page sends a finished
                    # import on to its project's set-up, as it does below.
                    assert Job.objects.get().status == Job.Status.SUCCEEDED, page.url
                    break
                if Job.objects.get().status == Job.Status.RUNNING:
                    expect(page.locator("progress[data-job-progress]")).to_be_visible()
        page.wait_for_timeout(200)
    assert reloaded, f"the import finished before a reload: progress seen {sorted(seen)}"
    assert len(seen) >= 2, f"the progress bar did not move: {sorted(seen)}"

    expect(page).to_have_url("/p/big/setup/")
    expect(page.locator(".flash.success")).to_contain_text("Project created")
    project = Project.objects.get(slug="big")
    assert Membership.objects.get(project=project, user=lead).role == Role.LEAD
    assert Answer.objects.filter(project=project).count() == ANSWERS


def test_a_broken_big_bundle_shows_every_error_by_line_and_writes_nothing(
    page, database_tasks, workers, lead, tmp_path
):
    bundle = write_bundle(tmp_path / "broken.jsonl", ANSWERS, broken_every=50)
    workers()
    login(page, lead)
    upload(page, "broken", bundle)

    expect(page).to_have_url(JOB_URL, timeout=60_000)
    expect(page.locator("[data-job-status=failed]")).to_be_visible(timeout=90_000)
    errors = page.locator("#bundle-errors li")
    expect(errors).to_have_count(ANSWERS // 50)
    texts = errors.all_inner_texts()
    assert all(re.match(r"line \d+: ", text) and "no-such-case" in text for text in texts)
    expect(page.locator("#bundle-errors")).to_contain_text("Nothing was written")
    screenshot(page, "import-refused")
    page.reload()
    expect(page.locator("#bundle-errors li")).to_have_count(ANSWERS // 50)
    assert not Project.objects.filter(slug="broken").exists()
    page.get_by_role("link", name="Upload a corrected file").click()
    expect(page.get_by_label("Slug")).to_have_value("broken")
