"""A Django `{# #}` comment ends on its line: one that runs on is page text. In the head of
base.html it once opened a <style> element that swallowed every page's body."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def unclosed_comments(text: str) -> list[int]:
    """Line numbers where a `{#` opens and its line has no `#}` after it."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        at = line.find("{#")
        while at != -1:
            end = line.find("#}", at + 2)
            if end == -1:
                found.append(number)
                break
            at = line.find("{#", end + 2)
    return found


def test_no_template_comment_runs_past_its_line():
    templates = sorted((ROOT / "templates").rglob("*.html"))
    assert templates
    broken = {
        str(path.relative_to(ROOT)): lines
        for path in templates
        if (lines := unclosed_comments(path.read_text(encoding="utf-8")))
    }
    assert not broken


def test_the_check_finds_a_comment_that_runs_on():
    assert unclosed_comments("{# one #}\n{# two\nlines #}\n{# a #} {# b") == [2, 4]
