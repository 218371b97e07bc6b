"""The lead edits claim boundaries by selecting text in a real browser: a caret inside a
claim splits it, a selection over two claims merges them, a selection inside one becomes its
span, and a selection over text no claim covers becomes a claim -- with the offsets the
server uses (code points), without typing a number."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotate.models import Answer, Claim
from tests.conftest import login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
expect.set_options(timeout=10_000)

TEXT = (
    "Assignment 2 is due on 14 March [notes-17]. Late work is accepted within 48 hours with "
    "a penalty [notes-17][notes-99]."
)
SELECT = """([start, end]) => {
  const root = document.getElementById("boundary-text");
  const at = (offset) => {
    const w = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    let count = 0, n;
    while ((n = w.nextNode())) {
      const length = Array.from(n.data).length;
      if (offset <= count + length) return [n, offset - count];
      count += length;
    }
  };
  const range = document.createRange();
  range.setStart(...at(start));
  range.setEnd(...at(end));
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
}"""


def spans(answer) -> list[tuple[int, int]]:
    return list(Claim.objects.filter(answer=answer).order_by("ordinal").values_list("start", "end"))


def test_select_to_split_merge_adjust_and_add(page, team, lead):
    answer = Answer.objects.get(project=team, answer_id="a2-deadline/verifier")
    assert answer.text == TEXT
    login(page, lead)
    page.goto(f"/p/{team.slug}/claims/{answer.pk}/")
    tools = page.locator("#span-tools")
    expect(tools).to_be_visible()
    first, second = spans(answer)

    # A caret inside "due" splits claim 1 before that word.
    due = TEXT.index("due") + 1
    page.evaluate(SELECT, [due, due])
    split = tools.get_by_role("button", name="Split claim 1 here")
    expect(split).to_be_visible()
    split.click()
    expect(page.locator(".flash.success")).to_contain_text("Claim split in two.")
    assert spans(answer)[:2] == [(0, TEXT.index("due") - 1), (TEXT.index("due"), first[1])]

    # A selection over claims 1 and 2 merges them.
    page.evaluate(SELECT, [3, TEXT.index("due") + 2])
    merge = tools.get_by_role("button", name="Merge claims 1 and 2")
    expect(merge).to_be_visible()
    merge.click()
    expect(page.locator(".flash.success")).to_contain_text("Claims merged.")
    assert spans(answer) == [first, second]

    # A selection inside claim 2 becomes its span (surrounding spaces trimmed).
    late = TEXT.index("Late work")
    hours = TEXT.index("48 hours") + len("48 hours")
    page.evaluate(SELECT, [late - 1, hours])
    adjust = tools.get_by_role("button", name="Make this claim 2's span")
    expect(adjust).to_be_visible()
    expect(page.locator("#span-selection")).to_contain_text(f"Selected {late}–{hours}")
    adjust.click()
    expect(page.locator(".flash.success")).to_contain_text("Span adjusted.")
    assert spans(answer)[1] == (late, hours)

    # Text no claim covers now ("with a penalty …") becomes a claim of its own.
    rest = TEXT.index("with a penalty")
    page.evaluate(SELECT, [rest, len(TEXT)])
    add = tools.get_by_role("button", name="Add as a claim")
    expect(add).to_be_visible()
    add.click()
    expect(page.locator(".flash.success")).to_contain_text("Claim added.")
    assert spans(answer)[2] == (rest, len(TEXT))
    screenshot(page, "boundary-editor")


def test_the_offsets_form_still_works_without_javascript(browser, live_server, team, lead):
    context = browser.new_context(java_script_enabled=False, base_url=live_server.url)
    page = context.new_page()
    try:
        answer = Answer.objects.get(project=team, answer_id="a2-deadline/verifier")
        login(page, lead)
        page.goto(f"/p/{team.slug}/claims/{answer.pk}/")
        expect(page.locator("#span-tools")).to_be_hidden()
        claim = Claim.objects.filter(answer=answer).order_by("ordinal").first()
        page.fill(f"#start-{claim.pk}", "0")
        page.fill(f"#end-{claim.pk}", "12")
        page.locator(f"#adjust-form-{claim.pk} button").click()
        expect(page.locator(".flash.success")).to_contain_text("Span adjusted.")
        assert spans(answer)[0] == (0, 12)
    finally:
        context.close()
