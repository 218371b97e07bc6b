"""The reviewer's day in a real browser (Debian's Chromium through Playwright): take a task,
label it by keyboard and mouse, quote a passage by selecting its text, reload and find the draft
intact, submit, get the next task; a second reviewer then labels the same answer blind.

Waits are explicit (responses, selectors, the database); nothing sleeps."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from annotate.members.services import add_member
from annotate.models import Assignment, ClaimLabel, Project, Role
from annotate.projects.opening import open_labelling
from tests.conftest import import_fixture, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TIMEOUT_MS = 10_000
expect.set_options(timeout=TIMEOUT_MS)

CLAIM_NOTE = "alice-private-claim-note-7f3"
ANSWER_NOTE = "alice-private-answer-note-9c1"
BLINDED = ("baseline", "verifier", "/baseline", "/verifier")


@pytest.fixture
def demo(reviewer_a, reviewer_b) -> Project:
    project = import_fixture("demo.jsonl", "demo")
    project.overlap = 2
    project.save(update_fields=["overlap"])
    for person in (reviewer_a, reviewer_b):
        add_member(project=project, username=person.username, role=Role.REVIEWER)
    return open_labelling(project=project)


def sign_in(page, user) -> None:
    login(page, user)
    # login() waits for a URL that /login/ itself matches: wait for the signed-in header.
    expect(page.locator(".user-menu summary")).to_contain_text(user.username)


def take_next_task(page, project) -> int:
    page.goto(f"/p/{project.slug}/")
    page.get_by_role("button", name="Next task").click()
    page.wait_for_url(re.compile(rf"/p/{project.slug}/tasks/\d+/$"))
    page.wait_for_selector("#labelling")
    return int(re.search(r"/tasks/(\d+)/$", page.url).group(1))


def in_progress(user, project) -> Assignment:
    return Assignment.objects.select_related("answer").get(
        project=project, reviewer=user, status=Assignment.Status.IN_PROGRESS
    )


def is_save(number: int, what: str):
    """Predicate for the htmx POST saving a claim (what='claims/<i>') or the answer."""
    suffix = f"/tasks/{number}/{what}/"
    return lambda r: r.url.endswith(suffix) and r.request.method == "POST"


def settle(page) -> None:
    """No draft save waiting or in flight (the page's script keeps one per claim)."""
    page.wait_for_function("() => document.body.dataset.saving === '0'", timeout=TIMEOUT_MS)


def wait_for_db(check, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for the database: {what}")
        time.sleep(0.05)


def drag_select(page, passage_id: str, start: int, end: int) -> None:
    """Select characters [start, end) of a passage's text with the mouse (down, move, up)."""
    passage = page.locator(f'.passage[data-passage="{passage_id}"] .passage-text')
    passage.scroll_into_view_if_needed()
    box = page.evaluate(
        """([pid, start, end]) => {
            const node = document.querySelector(
                `.passage[data-passage="${CSS.escape(pid)}"] .passage-text`).firstChild;
            const range = document.createRange();
            range.setStart(node, start); range.setEnd(node, start + 1);
            const a = range.getBoundingClientRect();
            range.setStart(node, end - 1); range.setEnd(node, end);
            const b = range.getBoundingClientRect();
            return {x1: a.left + 1, y1: a.top + a.height / 2,
                    x2: b.right - 1, y2: b.top + b.height / 2};
        }""",
        [passage_id, start, end],
    )
    page.mouse.move(box["x1"], box["y1"])
    page.mouse.down()
    page.mouse.move((box["x1"] + box["x2"]) / 2, (box["y1"] + box["y2"]) / 2, steps=5)
    page.mouse.move(box["x2"], box["y2"], steps=5)
    page.mouse.up()


def assert_blinded(html: str) -> None:
    for word in BLINDED:
        assert word not in html, f"{word!r} appears on the labelling page"


def claim_state(page, ordinal: int) -> dict:
    return page.evaluate(
        "(i) => JSON.parse(document.getElementById('claim-span-' + i).dataset.label)", ordinal
    )


def test_reviewer_labels_reloads_submits_and_a_second_reviewer_labels_blind(
    browser, live_server, page, demo, reviewer_a, reviewer_b, shared_queue_start
):
    # --- alice takes the next task from the project page --------------------------------
    sign_in(page, reviewer_a)
    number = take_next_task(page, demo)
    assignment = in_progress(reviewer_a, demo)
    answer = assignment.answer
    assert answer.task_number == number
    claims = list(answer.claims.order_by("ordinal").prefetch_related("citations__passage"))
    assert claims, "the demo task should have claims"
    first = claims[0]
    passage = answer.retrieved.select_related("passage").order_by("rank").first().passage
    assert_blinded(page.content())

    form = page.locator("#claim-form")
    expect(form).to_be_visible()
    expect(page.locator(f"#claim-span-{first.ordinal}")).to_have_class(re.compile(r"\bselected\b"))

    # --- claim 1 by keyboard: 1/2/3, s, e, j/k -------------------------------------------
    page.keyboard.press("1")
    expect(form.locator('input[name=support][value="supported"]')).to_be_checked()
    expect(form.locator('input[name=severity][value="none"]')).to_be_checked()
    page.keyboard.press("2")
    expect(form.locator('input[name=support][value="contradicted"]')).to_be_checked()
    page.keyboard.press("s")
    expect(form.locator('input[name=severity][value="minor"]')).to_be_checked()
    page.keyboard.press("s")
    expect(form.locator('input[name=severity][value="major"]')).to_be_checked()
    needs = form.locator("input[name=requires_evidence]")
    expect(needs).to_be_checked()
    page.keyboard.press("e")
    expect(needs).not_to_be_checked()
    page.keyboard.press("e")
    expect(needs).to_be_checked()
    if len(claims) > 1:
        page.keyboard.press("j")
        expect(form).to_have_attribute("data-claim", str(claims[1].ordinal))
        expect(form.locator("input[name=support]:checked")).to_have_count(0)
        page.keyboard.press("k")
        expect(form).to_have_attribute("data-claim", str(first.ordinal))
        # the editor shows claim 1's draft again, from this page's own memory of it
        expect(form.locator('input[name=severity][value="major"]')).to_be_checked()

    # --- the mouse: click the claim, then select a quote inside a passage ----------------
    page.locator(f"#claim-span-{first.ordinal}").click()
    words = passage.text.split(" ")
    quote = " ".join(words[: min(6, len(words))])
    settle(page)
    with page.expect_response(is_save(number, f"claims/{first.ordinal}")) as saved:
        drag_select(page, passage.passage_id, 0, len(quote))
    assert saved.value.ok
    quote_input = form.locator("#quote")
    expect(quote_input).to_have_value(quote)
    evidence_box = page.locator(
        f'.passage[data-passage="{passage.passage_id}"] input[name=evidence_ids]'
    )
    expect(evidence_box).to_be_checked()
    expect(page.locator(f'.passage[data-passage="{passage.passage_id}"] mark')).to_have_text(quote)
    for citation in first.citations.all():
        if citation.passage is not None:
            page.locator(
                f'input[name="citation:{citation.cited_id}"][value="does_not_support"]'
            ).check()
    settle(page)
    page.locator("#claim-note").press_sequentially(CLAIM_NOTE)
    with page.expect_response(is_save(number, f"claims/{first.ordinal}")):
        page.keyboard.press("Escape")  # leaves the field, which saves at once
    settle(page)
    wait_for_db(
        lambda: ClaimLabel.objects.filter(
            assignment=assignment,
            claim=first,
            support="contradicted",
            severity="major",
            evidence_quote=quote,
            note=CLAIM_NOTE,
        ).exists(),
        "claim 1's draft",
    )
    expect(page.locator(f"#claim-span-{first.ordinal} .label-mark.contradicted")).to_be_visible()

    # --- reload mid-way: the draft is intact ---------------------------------------------
    page.reload()
    page.wait_for_selector("body.js")
    page.locator(f"#claim-span-{first.ordinal}").click()
    expect(form.locator('input[name=support][value="contradicted"]')).to_be_checked()
    expect(form.locator('input[name=severity][value="major"]')).to_be_checked()
    expect(form.locator("input[name=requires_evidence]")).to_be_checked()
    expect(evidence_box).to_be_checked()
    expect(quote_input).to_have_value(quote)
    expect(page.locator("#claim-note")).to_have_value(CLAIM_NOTE)
    expect(page.locator("#submit-button")).to_have_attribute("aria-disabled", "true")

    # --- finish every other claim and the whole answer -----------------------------------
    for claim in claims[1:]:
        page.locator(f"#claim-span-{claim.ordinal}").click()
        expect(form).to_have_attribute("data-claim", str(claim.ordinal))
        page.keyboard.press("3")
        page.keyboard.press("s")
        expect(form.locator('input[name=support][value="insufficient_evidence"]')).to_be_checked()
        for citation in claim.citations.all():
            if citation.passage is not None:
                page.locator(
                    f'input[name="citation:{citation.cited_id}"][value="supports"]'
                ).check()
    answer_form = page.locator("#answer-form")
    answer_form.locator('input[name=relevance][value="2"]').check()
    if answer.abstained:
        answer_form.locator('input[name=abstention][value="appropriate"]').check()
    answer_form.locator('input[name=failure_labels][value="unsupported_claim"]').check()
    settle(page)
    with page.expect_response(is_save(number, "answer")):
        page.locator("#answer-note").press_sequentially(ANSWER_NOTE)  # saves after a pause
    page.keyboard.press("Escape")
    settle(page)
    wait_for_db(
        lambda: Assignment.objects.filter(pk=assignment.pk, relevance=2, note=ANSWER_NOTE).exists(),
        "the whole-answer draft",
    )
    submit = page.locator("#submit-button")
    expect(submit).not_to_have_attribute("aria-disabled", "true")
    expect(page.locator("#task-status")).to_contain_text("ready to submit")
    page.locator(f"#claim-span-{first.ordinal}").click()  # the claim with the quote
    page.locator("#answer-text").scroll_into_view_if_needed()
    screenshot(page, "labelling-screen")
    assert_blinded(page.content())

    # --- Enter submits and the next task follows, with a way back -------------------------
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(rf"/p/{demo.slug}/tasks/(?!{number}/)\d+/$"))
    # said once, by the notice with its Undo (a flash beside it said it a second time)
    expect(page.locator(".notice")).to_contain_text(f"Task {number} submitted")
    expect(page.get_by_text(f"Task {number} submitted")).to_have_count(1)
    expect(page.get_by_role("button", name="Undo")).to_be_visible()
    expect(page.get_by_role("link", name="Previous task")).to_have_attribute(
        "href", f"/p/{demo.slug}/tasks/{number}/"
    )
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED
    assert in_progress(reviewer_a, demo).answer_id != answer.pk

    # --- bob, in his own browser context, labels the same answer blind -------------------
    assert not Assignment.objects.filter(project=demo, answer__task_number__lt=number).exists(), (
        "alice's task should be the first in the queue"
    )
    context = browser.new_context(viewport={"width": 1280, "height": 800}, base_url=live_server.url)
    try:
        bob = context.new_page()
        bob.set_default_timeout(TIMEOUT_MS)
        sign_in(bob, reviewer_b)
        assert take_next_task(bob, demo) == number
        assert in_progress(reviewer_b, demo).answer_id == answer.pk
        html = bob.content()
        assert_blinded(html)
        for secret in (CLAIM_NOTE, ANSWER_NOTE, reviewer_a.username):
            assert secret not in html
        assert bob.locator("#labelling input[type=radio]:checked").count() == 0
        assert bob.locator("input[name=evidence_ids]:checked").count() == 0
        assert bob.locator("input[name=failure_labels]:checked").count() == 0
        assert bob.locator(".label-mark").count() == 0
        for claim in claims:
            assert claim_state(bob, claim.ordinal)["evidence_quote"] == ""
            assert claim_state(bob, claim.ordinal)["note"] == ""
        expect(bob.locator("#answer-note")).to_have_value("")
        expect(bob.locator("#submit-button")).to_have_attribute("aria-disabled", "true")
        # Bob's first keystroke lands in his own draft, not alice's.
        with bob.expect_response(is_save(number, f"claims/{first.ordinal}")):
            bob.locator(f"#claim-span-{first.ordinal}").click()
            bob.keyboard.press("1")
        settle(bob)
        wait_for_db(
            lambda: ClaimLabel.objects.filter(
                assignment__reviewer=reviewer_b, claim=first, support="supported"
            ).exists(),
            "bob's draft",
        )
        assert ClaimLabel.objects.get(assignment=assignment, claim=first).support == "contradicted"
    finally:
        context.close()


def test_question_mark_opens_the_shortcuts_and_enter_goes_to_what_is_missing(
    page, demo, reviewer_a
):
    sign_in(page, reviewer_a)
    number = take_next_task(page, demo)
    dialog = page.locator("#shortcuts")
    expect(dialog).to_be_hidden()
    page.keyboard.press("?")
    expect(dialog).to_be_visible()
    for words in ("severity none", "passage", "citation supports", "relevance", "failure labels"):
        expect(dialog).to_contain_text(words)
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    page.get_by_role("button", name="? shortcuts").click()
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_be_hidden()
    # Focus is back on the "? shortcuts" button: Enter there presses it, never submits.
    page.keyboard.press("Enter")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    page.locator(".question-text").click()  # focus leaves the controls for the page

    submit = page.locator("#submit-button")
    expect(submit).to_have_attribute("aria-disabled", "true")
    expect(page.locator("#task-status")).to_contain_text("claim 1: support missing")
    # Enter on an incomplete task goes to the first thing missing and says what it is.
    page.keyboard.press("Enter")
    expect(page.locator("#claim-form input[name=support]").first).to_be_focused()
    expect(page.locator("#announcer")).to_contain_text("Claim 1: support missing")
    with page.expect_response(is_save(number, "claims/0")):
        page.keyboard.press("3")
    settle(page)
    expect(page.locator("#claim-span-0 .label-mark.insufficient")).to_be_visible()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(rf"/tasks/{number}/$"))
    assert in_progress(reviewer_a, demo).answer.task_number == number


def test_a_note_typed_without_leaving_the_field_survives_a_reload(page, demo, reviewer_a):
    sign_in(page, reviewer_a)
    number = take_next_task(page, demo)
    with page.expect_response(is_save(number, "claims/0")):
        page.locator("#claim-note").press_sequentially("typed, never blurred")  # a pause saves
    settle(page)
    page.reload()
    expect(page.locator("#claim-note")).to_have_value("typed, never blurred")
