"""A reviewer's working day (#34), in a real browser and by keyboard: a sentence quoted with
one key, exactly; a submit undone with one key; long passages folded and unfolded from the
keyboard; key hints shown only where the keys work; Skip… that leaves Submit in view; a
submitted task that says so."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotate.labelling.preferences import set_preferences
from annotate.members.services import add_member
from annotate.models import Assignment, ClaimLabel, Passage, Project, Role
from annotate.projects.opening import open_labelling
from tests.browser.test_keyboard_only import Keys, open_task, submitted, task_of
from tests.browser.test_reviewer_flow import sign_in
from tests.conftest import ARTIFACTS, import_fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=10_000)

FIRST = "Assignment 2 is due on 14 March."
SECOND = "Late submissions are accepted within 48 hours with a penalty."


@pytest.fixture
def demo(reviewer_a) -> Project:
    project = import_fixture("demo.jsonl", "demo")
    add_member(project=project, username=reviewer_a.username, role=Role.REVIEWER)
    return open_labelling(project=project)


def saved(page) -> None:
    page.wait_for_function("() => document.body.dataset.saving === '0'")


def test_the_sentence_key_quotes_the_sentence_at_the_caret_exactly(page, demo, reviewer_a):
    sign_in(page, reviewer_a)
    task = task_of(demo, reviewer_a, "a2-deadline/verifier")  # claim 1 cites notes-17
    open_task(page, task)
    keys = Keys(page)
    keys.press("claim 1", "1")
    keys.press("quote 1", ".")  # from the claim: its cited passage, first sentence
    expect(page.locator("#quote")).to_have_value(FIRST)
    expect(page.locator(".passage[data-passage='notes-17'] .passage-text")).to_be_focused()
    keys.press("quote 1", ".")  # again: the next sentence
    expect(page.locator("#quote")).to_have_value(SECOND)
    saved(page)
    label = ClaimLabel.objects.get(assignment=task, claim__ordinal=0)
    assert label.evidence_quote == SECOND and label.evidence_ids == ["notes-17"]
    assert keys.counts["quote 1"] == 2
    # the caret anywhere inside a sentence quotes that whole sentence
    caret = "at => getSelection().collapse(document.activeElement.firstChild, at)"
    page.evaluate(caret, len(FIRST) + 10)  # "Late submi|ssions"
    page.keyboard.press(".")
    expect(page.locator("#quote")).to_have_value(SECOND)
    page.evaluate(caret, 5)  # "Assig|nment"
    page.keyboard.press(".")
    expect(page.locator("#quote")).to_have_value(FIRST)
    saved(page)
    label.refresh_from_db()
    assert label.evidence_quote == FIRST  # the server found it in the passage
    # the key is listed under ?
    page.keyboard.press("Escape")
    page.keyboard.press("?")
    expect(page.locator("#shortcuts")).to_contain_text("quote the sentence at the caret")


def test_a_submit_is_undone_by_keyboard_alone(page, demo, reviewer_a):
    sign_in(page, reviewer_a)
    task = task_of(demo, reviewer_a, "a2-weight/baseline")  # one claim, citing notes-18
    open_task(page, task)
    keys = Keys(page)
    keys.press("label", "1")
    keys.press("label", ".")  # the passage's one sentence, quoted
    keys.press("label", "c")
    keys.press("label", "r")
    keys.press("submit", "Enter")
    submitted(page, task)
    expect(page.locator(".notice")).to_contain_text("submitted")
    expect(page.locator(".notice kbd")).to_have_text("⌫")
    keys.press("undo", "Backspace")
    page.wait_for_url(re.compile(rf"/tasks/{task.answer.task_number}/$"))
    task.refresh_from_db()
    assert task.status == Assignment.Status.IN_PROGRESS
    assert keys.counts["undo"] == 1 and keys.counts["label"] == 4
    expect(page.locator(".flash")).to_contain_text("open again")


def test_z_undoes_too_and_not_when_shortcuts_are_off(page, demo, reviewer_a):
    set_preferences(user=reviewer_a, single_key_shortcuts=False)
    sign_in(page, reviewer_a)
    task = task_of(demo, reviewer_a, "a2-weight/baseline")
    open_task(page, task)
    # letter hints are hidden with their keys off; Enter's stays
    expect(page.locator("#labelling kbd:not(.always)").first).to_be_hidden()
    expect(page.locator("#submit-button kbd")).to_be_visible()
    page.locator("input[name=support][value=supported]").check()
    page.locator("input[name=evidence_ids][value='notes-18']").check()
    page.locator("#quote").fill("Assignment 2 contributes 20% of the course grade.")
    page.locator("input[name='citation:notes-18'][value=supports]").check()
    page.locator("input[name=relevance][value='2']").check()
    saved(page)
    page.locator("#content").focus()
    page.keyboard.press("Enter")
    submitted(page, task)
    page.keyboard.press("z")  # a letter: off
    page.wait_for_timeout(300)
    task.refresh_from_db()
    assert task.status == Assignment.Status.SUBMITTED
    page.keyboard.press("Backspace")  # not a character key: always on
    page.wait_for_url(re.compile(rf"/tasks/{task.answer.task_number}/$"))
    task.refresh_from_db()
    assert task.status == Assignment.Status.IN_PROGRESS


LONG = " ".join(
    f"Sentence {i} of a long passage about the grading of Assignment 2." for i in range(1, 13)
)


def test_a_long_passage_folds_and_unfolds_by_keyboard(page, demo, reviewer_a):
    Passage.objects.filter(project=demo, passage_id="notes-18").update(text=LONG)
    sign_in(page, reviewer_a)
    task = task_of(demo, reviewer_a, "a2-weight/baseline")
    open_task(page, task)
    passage = page.locator(".passage[data-passage='notes-18']")
    button = passage.get_by_role("button", name="Fold passage notes-18")
    expect(button).to_have_attribute("aria-expanded", "true")
    full = passage.locator(".passage-text").bounding_box()["height"]
    # short passages have no fold
    expect(page.locator(".passage[data-passage='notes-17'] .passage-fold")).to_have_count(0)
    page.keyboard.press("p")  # the claim's cited passage
    expect(passage.locator(".passage-text")).to_be_focused()
    page.keyboard.press("v")
    expect(passage).to_have_class(re.compile(r"\bfolded\b"))
    expect(passage.get_by_role("button", name="Show all passage notes-18")).to_have_attribute(
        "aria-expanded", "false"
    )
    folded = passage.locator(".passage-text").bounding_box()["height"]
    assert folded < full / 2, (folded, full)
    page.keyboard.press("v")
    expect(passage).not_to_have_class(re.compile(r"\bfolded\b"))
    # the button works from the keyboard too
    page.keyboard.press("v")
    passage.locator(".passage-fold").focus()
    page.keyboard.press("Enter")
    expect(passage).not_to_have_class(re.compile(r"\bfolded\b"))
    # quoting from a folded passage shows it whole
    page.keyboard.press("Enter")
    expect(passage).to_have_class(re.compile(r"\bfolded\b"))
    passage.locator(".passage-text").focus()
    page.keyboard.press(".")
    expect(page.locator("#quote")).to_have_value(
        "Sentence 1 of a long passage about the grading of Assignment 2."
    )
    expect(passage).not_to_have_class(re.compile(r"\bfolded\b"))
    page.keyboard.press("?")
    expect(page.locator("#shortcuts")).to_contain_text("fold · unfold the current passage")


def test_a_submitted_task_says_so_and_shows_no_key_hints(page, demo, reviewer_a):
    sign_in(page, reviewer_a)
    task = task_of(demo, reviewer_a, "a2-weight/baseline")
    open_task(page, task)
    for key in ("1", ".", "c", "r", "Enter"):
        page.keyboard.press(key)
    submitted(page, task)
    open_task(page, task)
    status = page.locator("#task-status")
    expect(status).to_contain_text("submitted")
    expect(status).not_to_contain_text("ready to submit")
    expect(page.locator("#labelling kbd").first).to_be_hidden()
    # the chosen chip reads white on its colour, not grey on green
    page.emulate_media(reduced_motion="reduce")
    chip = page.locator("input[name=support]:checked + span")
    assert chip.evaluate("s => getComputedStyle(s).color") == "rgb(255, 255, 255)"


@pytest.mark.parametrize("width,height", [(1440, 900), (390, 844)])
def test_opening_skip_leaves_submit_in_view(page, demo, reviewer_a, width, height):
    page.set_viewport_size({"width": width, "height": height})
    sign_in(page, reviewer_a)
    task = task_of(demo, reviewer_a, "a2-weight/baseline")
    open_task(page, task)
    submit = page.locator("#submit-button")
    before = submit.bounding_box()
    page.locator("details.skip > summary").click()
    expect(page.get_by_label("Why skip this task?")).to_be_visible()
    after = submit.bounding_box()
    page.screenshot(path=str(ARTIFACTS / f"labelling-skip-{width}.png"))
    assert all(abs(after[k] - before[k]) < 1 for k in before), (before, after)
    assert after["y"] >= 0 and after["y"] + after["height"] <= height
    reason = page.get_by_label("Why skip this task?").bounding_box()
    assert reason["x"] >= 0 and reason["x"] + reason["width"] <= width
    assert reason["y"] >= 0


def test_on_a_touch_screen_no_key_hints_are_shown(browser, live_server, demo, reviewer_a):
    context = browser.new_context(
        viewport={"width": 390, "height": 844},
        has_touch=True,
        is_mobile=True,
        base_url=live_server.url,
    )
    try:
        page = context.new_page()
        sign_in(page, reviewer_a)
        task = task_of(demo, reviewer_a, "a2-weight/baseline")
        open_task(page, task)
        assert page.evaluate("matchMedia('(hover: none) and (pointer: coarse)').matches")
        hints = page.locator("#labelling kbd")
        assert hints.count() > 5
        assert hints.evaluate_all("ks => ks.every(k => getComputedStyle(k).display === 'none')")
        expect(page.locator("[data-open-shortcuts]")).to_be_hidden()
    finally:
        context.close()


@pytest.mark.parametrize("width,height", [(1440, 900), (390, 844)])
def test_a_choice_group_s_key_hint_stays_beside_its_word(page, demo, reviewer_a, width, height):
    """The relevance chips wrapped with the `r` hint under the word "Relevance"."""
    page.set_viewport_size({"width": width, "height": height})
    sign_in(page, reviewer_a)
    open_task(page, task_of(demo, reviewer_a, "a2-weight/baseline"))
    legends = page.locator(".choice-group > legend:has(kbd)")
    assert legends.count() >= 1
    for i in range(legends.count()):
        legend = legends.nth(i)
        first, hint = legend.bounding_box(), legend.locator("kbd").first.bounding_box()
        assert hint["y"] - first["y"] < 8, (legend.inner_text(), first, hint)
        assert hint["x"] > first["x"] + 10  # after the word, on its line
