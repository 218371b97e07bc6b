"""The lead's pages in a real browser at desktop and phone widths: the tab bar sits in the
same place with the same width on every lead page and keeps one line on a phone (scrolling
sideways); the report pages fit a phone without sideways scrolling of the page itself. Saves
screenshots of each page at 1440 and 390 px (test-artifacts/)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotate.adjudication.queue import adjudication_queue
from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Project, Role
from annotate.projects.opening import open_labelling
from evaluation.judges.runs import import_judge_run
from tests.conftest import FIXTURES, PASSWORD, import_fixture, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=10_000)


@pytest.fixture
def demo(lead) -> tuple[Project, int]:
    project = import_fixture("demo.jsonl", "demo")
    for name in ("alice", "bob"):
        add_member(project=project, username=name, role=Role.REVIEWER, password=PASSWORD)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    project = open_labelling(project=project)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        import_labels(lines=stream, project=project)
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        run = import_judge_run(lines=stream, project=project, user=lead).run
    return project, run.pk


def lead_pages(project, run_pk) -> dict[str, str]:
    number = adjudication_queue(project)[0].task_number
    slug = project.slug
    return {
        "setup": f"/p/{slug}/setup/",
        "upload": f"/p/{slug}/upload/",
        "agreement": f"/p/{slug}/agreement/",
        "reviewers": f"/p/{slug}/reviewers/",
        "adjudication-queue": f"/p/{slug}/adjudicate/",
        "adjudication": f"/p/{slug}/adjudicate/{number}/",
        "gold": f"/p/{slug}/gold/",
        "evaluation": f"/p/{slug}/evaluation/?a=baseline&b=verifier",
        "judge-run": f"/p/{slug}/judges/{run_pk}/",
    }


def nav_box(page) -> tuple[float, float, float]:
    box = page.locator(".lead-nav").bounding_box()
    return round(box["x"]), round(box["y"]), round(box["width"])


def test_the_tab_bar_stays_put_on_every_lead_page(page, demo, lead):
    project, run_pk = demo
    page.set_viewport_size({"width": 1440, "height": 900})
    login(page, lead)
    boxes = {}
    for name, path in lead_pages(project, run_pk).items():
        page.goto(path)
        boxes[name] = nav_box(page)
        tabs = page.locator(".lead-tab")
        tops = tabs.evaluate_all("ts => new Set(ts.map(t => t.offsetTop)).size")
        assert tops == 1, f"the tab bar wraps on {name}"
        expect(page.locator(".lead-tab[aria-current=page]")).to_have_count(1)
    assert len(set(boxes.values())) == 1, boxes


@pytest.mark.parametrize("width", [1440, 390])
def test_report_pages_at_desktop_and_phone_width(page, demo, lead, width):
    project, run_pk = demo
    page.set_viewport_size({"width": width, "height": 900 if width > 500 else 844})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console",
        lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None,
    )
    login(page, lead)
    pages = lead_pages(project, run_pk)
    for name in (
        "agreement",
        "reviewers",
        "evaluation",
        "judge-run",
        "adjudication",
        "adjudication-queue",
    ):
        page.goto(pages[name])
        page.wait_for_load_state("load")
        if width < 500:
            # the page itself never scrolls sideways; wide tables and charts scroll in their frame
            overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 1, f"{name} is {overflow}px too wide at {width}px"
            nav = page.locator(".lead-nav")
            assert nav.evaluate("n => n.scrollWidth > n.clientWidth")
        screenshot(page, f"{name}-{width}")
    page.goto("/docs/judge-runs/")
    expect(page.locator("article.doc table").first).to_be_visible()
    screenshot(page, f"docs-{width}")
    assert errors == []
