"""A lead adjudicates from the keyboard in a real browser, as quickly as a reviewer labels:
the page opens on the first field to decide; a and b choose reviewer A's or B's value and move
on to the next field, o opens the other value, r the task's rationale, Escape leaves any text
box, Enter saves and opens the next disagreement, ? lists the keys; typing in a rationale
never triggers a key, arrow keys still move within a field's choices, and letter keys honour
the single-key-shortcuts preference. The screen fits a phone: the gold choice is never
off-screen."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotate.adjudication.queue import adjudication_queue
from annotate.gold.pairs import PENDING, pairs_for_project
from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Decision
from annotate.projects.opening import open_labelling
from tests.conftest import FIXTURES, PASSWORD, import_fixture, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=10_000)
# The claim (or the whole answer) a field row belongs to.
ITEM = "xpath=ancestor::div[contains(concat(' ', @class, ' '), ' adjudication-item ')]"


@pytest.fixture
def demo(lead):
    project = import_fixture("demo.jsonl", "demo")
    for name in ("alice", "bob"):
        add_member(
            project=project, username=name, role="reviewer", password=PASSWORD, reset_password=True
        )
    add_member(project=project, username=lead.username, role="lead")
    project = open_labelling(project=project)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        import_labels(lines=stream, project=project)
    return project


def open_first_disagreement(page, demo):
    number = adjudication_queue(demo)[0].task_number
    page.goto(f"/p/{demo.slug}/adjudicate/{number}/")
    expect(page.get_by_role("heading", name=f"Adjudicate · Task {number}")).to_be_visible()
    return number


def checked(row) -> str | None:
    return row.evaluate("r => r.querySelector('input[type=radio]:checked')?.value ?? null")


def focused_row_index(page) -> int:
    return page.evaluate(
        "() => [...document.querySelectorAll('tr.field-row')]"
        ".indexOf(document.activeElement.closest('tr.field-row'))"
    )


class Keys:
    """The page's keyboard, counting every key pressed (text typed into a box is not a key)."""

    def __init__(self, page):
        self.page, self.count = page, 0

    def press(self, *keys: str) -> None:
        for key in keys:
            self.page.keyboard.press(key)
            self.count += 1


def pending_fields(demo, number: int) -> list:
    from annotate.models import Answer

    answer = Answer.objects.get(project=demo, task_number=number)
    answer_pairs, claim_pairs = pairs_for_project(demo, answer_ids=[answer.pk])
    return [
        (pair, name)
        for pair in [*answer_pairs, *claim_pairs]
        for name, source in pair.source.items()
        if source == PENDING
    ]


def two_field_dispute(demo) -> int:
    """The task number of a disagreement with exactly two fields to decide (the demo has one)."""
    for item in adjudication_queue(demo):
        if len(pending_fields(demo, item.task_number)) == 2:
            return item.task_number
    raise AssertionError("the demo has no disagreement of two fields")


def test_a_dispute_of_two_fields_is_decided_and_saved_in_six_keys(page, demo, lead):
    """From page load: focus is on the first field to decide; a, b decide both; r, the
    rationale typed, Escape, Enter save and open the next disagreement: 5 keys."""
    login(page, lead)
    number = two_field_dispute(demo)
    page.goto(f"/p/{demo.slug}/adjudicate/{number}/")
    rows = page.locator("tr.field-row.undecided")
    expect(rows).to_have_count(2)
    expect(rows.first.locator("input[value=a]")).to_be_focused()  # no Tab needed
    keys = Keys(page)
    keys.press("a")
    expect(rows.nth(1).locator("input[value=a]")).to_be_focused()
    keys.press("b")
    keys.press("r")
    expect(page.locator("#task-rationale")).to_be_focused()
    page.keyboard.type("A quotes the passage.")  # text, not keys
    keys.press("Escape")  # out of the box: the next letters are keys again
    expect(page.locator("#task-rationale")).not_to_be_focused()
    assert page.evaluate("document.activeElement.closest('tr.field-row') !== null")
    keys.press("Enter")
    page.wait_for_url(lambda url: f"/adjudicate/{number}/" not in url)
    assert keys.count <= 6, keys.count
    saved = Decision.objects.filter(decided_by=lead, answer__task_number=number)
    assert saved.count() == 2
    assert {d.rationale for d in saved} == {"A quotes the passage."}
    assert pending_fields(demo, number) == []


def test_a_dispute_of_two_fields_needs_no_rationale_a_b_enter(page, demo, lead):
    """The rationale is optional (one per task, per-field ones too): a, b, Enter."""
    login(page, lead)
    number = two_field_dispute(demo)
    page.goto(f"/p/{demo.slug}/adjudicate/{number}/")
    keys = Keys(page)
    keys.press("a", "b", "Enter")
    page.wait_for_url(lambda url: f"/adjudicate/{number}/" not in url, timeout=5_000)
    assert keys.count == 3 and pending_fields(demo, number) == []


def test_escape_leaves_every_text_box_so_letters_are_keys_again(page, demo, lead):
    """The issue's "A quotes the passage.jjjjjjr": after Escape, j moves between fields
    instead of being typed into the rationale."""
    login(page, lead)
    open_first_disagreement(page, demo)
    box = page.locator("#task-rationale")
    page.keyboard.press("r")
    page.keyboard.type("A quotes the passage.")
    page.keyboard.press("Escape")
    before = focused_row_index(page)
    page.keyboard.press("j")
    expect(box).to_have_value("A quotes the passage.")
    assert focused_row_index(page) == before + 1
    # a claim's own rationale (⇧R), then Escape, back to its field
    page.keyboard.press("R")
    claim_box = page.locator(".rationale-field textarea:focus")
    expect(claim_box).to_have_count(1)
    page.keyboard.type("claim")
    page.keyboard.press("Escape")
    page.keyboard.press("k")
    expect(page.locator(".rationale-field textarea").first).to_have_value("claim")
    assert focused_row_index(page) == before
    # the "other" list too
    page.keyboard.press("o")
    expect(page.locator("tr.field-row select:focus")).to_have_count(1)
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.type") == "radio"


def test_with_single_key_shortcuts_off_letters_do_nothing_but_enter_and_escape_work(
    page, demo, lead
):
    """WCAG 2.1.4: the preference that turns letter keys off on the labelling screen holds
    here too (the template reads `shortcuts`; its view passes the preference)."""
    from annotate.labelling.preferences import set_preferences

    set_preferences(user=lead, single_key_shortcuts=False)
    login(page, lead)
    number = open_first_disagreement(page, demo)
    expect(page.locator("#adjudication[data-shortcuts=off]")).to_have_count(1)
    first = page.locator("tr.field-row.undecided").first
    page.keyboard.press("a")
    assert checked(first) is None
    expect(page.locator("#adjudication kbd:not(.always)").first).to_be_hidden()
    page.keyboard.press("Enter")  # nothing chosen: refused, and focus goes to the message
    expect(page.locator("#adjudication-error")).to_be_focused()
    assert f"/adjudicate/{number}/" in page.url


def test_keys_choose_a_or_b_and_move_field_to_field(page, demo, lead):
    page.set_viewport_size({"width": 1440, "height": 900})
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console",
        lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None,
    )
    login(page, lead)
    open_first_disagreement(page, demo)
    rows = page.locator("tr.field-row.undecided")
    assert rows.count() >= 1
    assert all(checked(rows.nth(i)) is None for i in range(rows.count()))  # nothing pre-chosen

    # ? lists the keys; Escape closes the list
    page.keyboard.press("?")
    expect(page.locator("#adjudication-keys")).to_be_visible()
    expect(page.locator("#adjudication-keys")).to_contain_text("reviewer A's")
    page.keyboard.press("Escape")
    expect(page.locator("#adjudication-keys")).to_be_hidden()

    # a: the first undecided field takes A's value and the focus moves to the next field to
    # decide (fields agreed already are passed over)
    first = rows.first
    all_rows = page.locator("tr.field-row")
    undecided = all_rows.evaluate_all(
        "rs => rs.flatMap((r, i) => r.classList.contains('undecided') ? [i] : [])"
    )
    assert len(undecided) >= 3
    start = undecided[0]
    expect(first.locator("input[value=a]")).to_be_focused()
    page.keyboard.press("a")
    assert checked(first) == "a"
    assert focused_row_index(page) == undecided[1]
    # b on the field that has focus now
    page.keyboard.press("b")
    assert checked(all_rows.nth(undecided[1])) == "b"
    assert focused_row_index(page) == undecided[2]
    # j and k step through every field, k back to the one just decided
    page.keyboard.press("k")
    assert focused_row_index(page) < undecided[2]

    # Arrow keys are the radio group's own: they move within the field, not between fields.
    first.locator("input[value=a]").focus()
    page.keyboard.press("ArrowRight")
    assert checked(first) == "b" and focused_row_index(page) == start

    # Typing in a rationale is text, never a key.
    box = page.locator("#task-rationale")
    box.click()
    box.press_sequentially("a bog jam")
    expect(box).to_have_value("a bog jam")
    assert checked(first) == "b"

    # o chooses "other" and puts the focus in its list, which offers "choose…" first.
    first.locator("input[value=b]").focus()
    page.keyboard.press("o")
    assert checked(first) == "other"
    select = first.locator("select")
    expect(select).to_be_focused()
    assert select.evaluate("s => s.options[0].text") == "choose…"
    assert select.input_value() == ""
    select.select_option(index=1)
    assert checked(first) == "other"
    page.keyboard.press("Tab")

    # r goes to the task's rationale; the claim's own is optional and folded
    first.locator("input[value=other]").focus()
    page.keyboard.press("r")
    expect(box).to_be_focused()
    expect(first.locator(ITEM).locator(".rationale-field textarea")).to_be_hidden()
    screenshot(page, "adjudication-1440")
    page.get_by_role("button", name="Save and next disagreement").click()
    expect(page.locator(".flash.success")).to_contain_text("saved")
    saved = Decision.objects.filter(decided_by=lead)
    assert saved.exists() and all(d.rationale == "a bog jam" for d in saved)
    assert errors == []


def test_at_phone_width_the_gold_choice_stays_on_screen(page, demo, lead):
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, lead)
    open_first_disagreement(page, demo)
    row = page.locator("tr.field-row.undecided").first
    choice = row.locator(".gold-choice")
    expect(choice).to_be_visible()
    box = choice.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    # the tab bar keeps one line and scrolls sideways
    nav = page.locator(".lead-nav")
    assert nav.evaluate("n => n.scrollWidth > n.clientWidth")
    heights = nav.locator(".lead-tab").evaluate_all("ts => new Set(ts.map(t => t.offsetTop)).size")
    assert heights == 1
    label = row.locator("td[data-label='Reviewer A']")
    assert "Reviewer A" in label.evaluate("td => getComputedStyle(td, '::before').content")
    screenshot(page, "adjudication-390")


def test_c_takes_the_third_reviewers_value_where_three_labelled(page, lead):
    """The demo's carol is the third reviewer of a2-deadline/baseline and alone calls its
    second claim's severity critical: the claim waits for a lead, whose screen has a column
    and a choice per reviewer; c takes hers, Enter saves."""
    from annotate.management.commands.load_demo import load
    from annotate.models import Answer

    demo = load()
    add_member(project=demo, username=lead.username, role="lead")
    number = Answer.objects.get(project=demo, answer_id="a2-deadline/baseline").task_number
    login(page, lead)
    page.goto(f"/p/{demo.slug}/adjudicate/{number}/")
    expect(page.get_by_role("columnheader", name="Reviewer C").first).to_be_visible()
    rows = page.locator("tr.field-row.undecided")
    expect(rows).to_have_count(1)
    expect(rows.first.locator("input[value=a]")).to_be_focused()
    expect(rows.first.locator("td[data-label='Reviewer C']")).to_contain_text("critical")
    page.keyboard.press("c")
    expect(rows.first.locator("input[value=c]")).to_be_checked()
    page.keyboard.press("Enter")
    page.wait_for_url(lambda url: f"/adjudicate/{number}/" not in url)
    decision = Decision.objects.get(decided_by=lead, answer__task_number=number)
    assert (decision.field, decision.value) == ("severity", "critical")
