"""A lead adjudicates from the keyboard in a real browser: a and b choose reviewer A's or B's
value and move on to the next field, o opens the other value, ? lists the keys; typing in a
rationale never triggers a key, and arrow keys still move within a field's choices. The
screen fits a phone: the gold choice is never off-screen."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotate.adjudication.queue import adjudication_queue
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

    # a: the first undecided field takes A's value and the focus moves to the next field
    first = rows.first
    all_rows = page.locator("tr.field-row")
    start = all_rows.evaluate_all("(rs, el) => rs.indexOf(el)", first.element_handle())
    page.keyboard.press("a")
    assert checked(first) == "a"
    assert focused_row_index(page) == start + 1
    # b on the field that has focus now
    page.keyboard.press("b")
    assert checked(all_rows.nth(start + 1)) == "b"
    assert focused_row_index(page) == start + 2

    # Arrow keys are the radio group's own: they move within the field, not between fields.
    first.locator("input[value=a]").focus()
    page.keyboard.press("ArrowRight")
    assert checked(first) == "b" and focused_row_index(page) == start

    # Typing in a rationale is text, never a key.
    item = first.locator(ITEM)
    box = item.locator(".rationale-field textarea")
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

    # r goes to the rationale of the field's item
    first.locator("input[value=other]").focus()
    page.keyboard.press("r")
    expect(box).to_be_focused()
    screenshot(page, "adjudication-1440")
    page.get_by_role("button", name="Save and next disagreement").click()
    expect(page.locator(".flash.success")).to_contain_text("decision(s) saved")
    saved = Decision.objects.filter(decided_by=lead)
    assert saved.exists() and all(d.rationale == "a bog jam" for d in saved if d.claim_id)
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
