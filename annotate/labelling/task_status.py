"""What the labelling screen says about a task's completeness: per claim, which fields are
wrong and which a submission still needs ("claim 2: quote missing"), and the first field a
keyboard user is sent to when they press Enter too early.

Built from the label services' own checks over what the screen has already loaded, so it
costs no query; the page, a draft save's reply and a refused submission all use it."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field

from django.utils.safestring import SafeString, mark_safe

from annotate.labelling.services import LabelErrors, check_answer_label, check_row_label

# How a missing field is named in the status ("claim 2: quote missing").
FIELD_NAMES = {
    "support": "support",
    "severity": "severity",
    "evidence_ids": "evidence passage",
    "evidence_quote": "quote",
    "citations": "citation verdict",
    "relevance": "relevance",
    "abstention": "abstention",
    "failure_labels": "failure labels",
}
SHOWN_ITEMS = 2  # the status names this many unfinished items, then counts the rest


@dataclass
class Item:
    """One unfinished item: a claim (ordinal) or the whole answer (None)."""

    ordinal: int | None
    fields: list[str]

    @property
    def name(self) -> str:
        return "whole answer" if self.ordinal is None else f"claim {self.ordinal + 1}"

    @property
    def text(self) -> str:
        names = ", ".join(dict.fromkeys(FIELD_NAMES.get(f, f) for f in self.fields))
        return f"{self.name}: {names} missing"


@dataclass
class AnswerState:
    """The whole-answer label's checks: `problems` keyed like the form's error slots
    ('answer.relevance'), `missing` what a submission still needs, by field name."""

    problems: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    @property
    def fields(self) -> list[str]:
        return list(dict.fromkeys([*(k.split(".", 1)[1] for k in self.problems), *self.missing]))

    @property
    def json(self) -> SafeString:
        data = {
            "problems": {k.split(".", 1)[1]: v for k, v in self.problems.items()},
            "missing": self.missing,
        }
        return _attribute_json(data)


@dataclass
class TaskStatus:
    items: list[Item] = field(default_factory=list)
    answer: AnswerState = field(default_factory=AnswerState)

    @property
    def complete(self) -> bool:
        return not self.items

    @property
    def shown(self) -> list[Item]:
        return self.items[:SHOWN_ITEMS]

    @property
    def more(self) -> int:
        return max(0, len(self.items) - SHOWN_ITEMS)

    @property
    def summary(self) -> str:
        """'claim 2: quote missing; whole answer: relevance missing' (and 'N more').
        static/labelling.js words it the same way after each save."""
        text = "; ".join(item.text for item in self.shown)
        return f"{text}; {self.more} more" if self.more else text


def check_claim(row, shown, schema, errors: LabelErrors | None = None) -> None:
    """Set the row's `problems` (what is wrong now), `missing` (what a submission still
    needs) and `state_json`. `errors`: a refused submission's, shown as problems."""
    now, needed = LabelErrors(), LabelErrors()
    if row.label is not None:
        check_row_label(row, shown, schema=schema, complete=False, errors=now)
        check_row_label(row, shown, schema=schema, complete=True, errors=needed)
    else:
        needed.add(f"claim.{row.claim.ordinal}.support", "Choose a support label.")
    prefix = f"claim.{row.claim.ordinal}."
    row.problems = {k.removeprefix(prefix): v for k, v in now.fields.items()}
    row.missing = {
        k.removeprefix(prefix): v for k, v in needed.fields.items() if k not in now.fields
    }
    if errors is not None:
        for key, message in errors.fields.items():
            if key.startswith(prefix):
                row.problems[key.removeprefix(prefix)] = message
                row.missing.pop(key.removeprefix(prefix), None)
    row.state_json = state_json(row)


def check_answer(assignment, errors: LabelErrors | None = None) -> AnswerState:
    schema = assignment.project.schema
    now, needed = LabelErrors(), LabelErrors()
    check_answer_label(assignment, schema=schema, complete=False, errors=now)
    check_answer_label(assignment, schema=schema, complete=True, errors=needed)
    problems = dict(now.fields)
    if errors is not None:
        problems.update({k: v for k, v in errors.fields.items() if k.startswith("answer.")})
    missing = {k.split(".", 1)[1]: v for k, v in needed.fields.items() if k not in problems}
    return AnswerState(problems, missing)


def of(screen, errors: LabelErrors | None = None) -> TaskStatus:
    """Check every claim of the screen and the answer; no query. `errors` are a refused
    submission's, shown instead of the draft checks."""
    schema = screen.assignment.project.schema
    status = TaskStatus()
    for row in screen.claims:
        check_claim(row, screen.shown, schema, errors)
        fields = list(dict.fromkeys([*row.problems, *row.missing]))
        if fields:
            status.items.append(Item(row.claim.ordinal, fields))
    status.answer = check_answer(screen.assignment, errors)
    if status.answer.fields:
        status.items.append(Item(None, status.answer.fields))
    return status


def state_json(row) -> SafeString:
    """The claim's label as the page's script reads it (data-label on the claim): its values,
    version, problems and what is missing. The reviewer's own draft only. Escaped for an
    attribute in single quotes, braces included, so no '{{' or '}}' of a JSON object reads as
    template syntax in the page's source."""
    label = row.label
    data = {
        "v": row.version,
        "support": label.support if label else "",
        "severity": label.severity if label else "",
        "requires_evidence": label.requires_evidence if label else True,
        "evidence_ids": label.evidence_ids if label else [],
        "evidence_quote": label.evidence_quote if label else "",
        "citations": label.citations if label else {},
        "note": label.note if label else "",
        "cited": [[c.cited_id, c.passage_id is not None] for c in row.citations],
        "problems": row.problems,
        "missing": row.missing,
    }
    return _attribute_json(data)


def _attribute_json(data) -> SafeString:
    """JSON for an attribute in single quotes: &, <, > and ' escaped, double quotes not. A
    JSON object is mostly double quotes, and as &quot; each took six bytes: 11 KB of a
    60-claim page."""
    text = html.escape(json.dumps(data, separators=(",", ":"), ensure_ascii=False), quote=False)
    return mark_safe(text.replace("'", "&#x27;").replace("{", "&#123;").replace("}", "&#125;"))
