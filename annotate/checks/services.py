"""Writes of gold checks: marking decided answers as checks (by id, every decided answer, or a
file of answer ids), unmarking them, and the project's check rate. Answers are named by their
bundle `answer_id`, as in every file and command. All or nothing: one answer that cannot be a
check refuses the whole request, with every problem and where it is."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence

from django.db import transaction

from annotate.checks.selectors import check_answer_pks, decided_answers
from annotate.common import computed
from annotate.common.errors import ServiceError
from annotate.models import Answer, GoldCheck, Project


class ChecksRefused(ServiceError):
    """Answers that cannot be (un)marked; `problems` are (where, message): the 0-based index
    in the request, or the file's 1-based line for an import."""

    def __init__(self, problems: list[tuple[int, str]], *, by_line: bool = False):
        self.problems = problems
        self.by_line = by_line
        super().__init__("; ".join(self.lines()))

    def lines(self) -> list[str]:
        """The problems as 'line N: message' (an import's) or 'answers.I: message' (the
        request's field path)."""
        if self.by_line:
            return [f"line {i}: {m}" for i, m in self.problems]
        return [f"answers.{i}: {m}" for i, m in self.problems]


NOT_DECIDED = (
    "not decided: a check needs gold on every field (two reviewers agreed, or a lead decided)"
)


def _resolve(
    project: Project, named: Sequence[tuple[int, str]], *, by_line: bool = False
) -> tuple[list, list]:
    """([(where, answer pk)], problems) of the (where, answer_id) pairs: each id must name an
    answer of the project, once."""
    ids = sorted({a for _, a in named})
    found = {}
    for start in range(0, len(ids), 500):  # SQLite caps the parameters of one query
        chunk = Answer.objects.filter(project=project, answer_id__in=ids[start : start + 500])
        found.update(chunk.values_list("answer_id", "pk"))
    resolved, problems, seen = [], [], {}
    for where, answer_id in named:
        if answer_id in seen:
            first = f"on line {seen[answer_id]}" if by_line else f"as answers.{seen[answer_id]}"
            problems.append((where, f"'{answer_id}' is named twice (first {first})"))
        elif answer_id not in found:
            problems.append((where, f"no answer '{answer_id}' in this project"))
        else:
            resolved.append((where, found[answer_id]))
        seen.setdefault(answer_id, where)
    return resolved, problems


def _mark(project: Project, lead, named, *, by_line: bool) -> int:
    project = Project.objects.select_for_update().get(pk=project.pk)
    resolved, problems = _resolve(project, named, by_line=by_line)
    decided = decided_answers(project)
    problems += [(where, NOT_DECIDED) for where, pk in resolved if pk not in decided]
    if problems:
        raise ChecksRefused(sorted(problems), by_line=by_line)
    new = sorted({pk for _, pk in resolved} - check_answer_pks(project))
    GoldCheck.objects.bulk_create(
        [GoldCheck(project=project, answer_id=pk, marked_by=lead) for pk in new]
    )
    if new:
        computed.touch(project)
    return len(new)


@transaction.atomic
def mark_checks(*, project: Project, lead, answer_ids: Sequence[str]) -> int:
    """Mark decided answers as checks. Returns how many were new (one already a check stays
    as it was). Refused, with every problem, when one is unknown, named twice or undecided."""
    if not answer_ids:
        raise ServiceError("Name at least one answer.")
    return _mark(project, lead, list(enumerate(answer_ids)), by_line=False)


@transaction.atomic
def mark_all_decided(*, project: Project, lead) -> int:
    """Mark every decided answer of the project that is not a check yet. Returns how many."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    new = sorted(decided_answers(project) - check_answer_pks(project))
    GoldCheck.objects.bulk_create(
        [GoldCheck(project=project, answer_id=pk, marked_by=lead) for pk in new]
    )
    if new:
        computed.touch(project)
    return len(new)


MAX_IMPORT_LINES = 100_000


@transaction.atomic
def import_checks(*, project: Project, lead, lines: Iterable[str | bytes]) -> int:
    """Mark the answers a file names, one answer id a line (a JSON object with `answer_id`
    also does; blank lines and lines starting with # are skipped). All or nothing: every
    problem is reported by its line, and nothing is marked when there is one."""
    named, problems = [], []
    for number, raw in enumerate(lines, start=1):
        if number > MAX_IMPORT_LINES:
            problems.append((number, f"a check file holds at most {MAX_IMPORT_LINES} lines"))
            break
        if isinstance(raw, bytes):
            try:
                raw = raw.decode("utf-8")
            except UnicodeDecodeError:
                problems.append((number, "not UTF-8 text"))
                continue
        text = raw.strip().lstrip("\ufeff")
        if not text or text.startswith("#"):
            continue
        if text.startswith("{"):
            try:
                value = json.loads(text).get("answer_id")
            except (ValueError, AttributeError):
                problems.append((number, "not a JSON object"))
                continue
            if not isinstance(value, str) or not value:
                problems.append((number, "the object has no answer_id"))
                continue
            text = value
        named.append((number, text))
    if not named and not problems:
        problems.append((1, "the file names no answer"))
    if problems:
        raise ChecksRefused(problems, by_line=True)
    return _mark(project, lead, named, by_line=True)


@transaction.atomic
def unmark_checks(*, project: Project, answer_ids: Sequence[str]) -> int:
    """Stop using answers as checks: the queue serves them no more. Label sets already made
    on them stay check label sets (never part of agreement or gold). Returns how many."""
    if not answer_ids:
        raise ServiceError("Name at least one answer.")
    project = Project.objects.select_for_update().get(pk=project.pk)
    resolved, problems = _resolve(project, list(enumerate(answer_ids)))
    marked = check_answer_pks(project)
    problems += [(where, "not a check") for where, pk in resolved if pk not in marked]
    if problems:
        raise ChecksRefused(sorted(problems))
    pks = sorted(pk for _, pk in resolved)
    removed = 0
    for start in range(0, len(pks), 500):
        chunk = pks[start : start + 500]
        removed += GoldCheck.objects.filter(project=project, answer_id__in=chunk).delete()[0]
    if removed:
        computed.touch(project)
    return removed


@transaction.atomic
def set_check_rate(*, project: Project, rate: float) -> Project:
    """The share of tasks the queue serves as checks: 0 (off) to 1."""
    if not isinstance(rate, int | float) or isinstance(rate, bool) or not math.isfinite(rate):
        raise ServiceError("The check rate is a number from 0 to 1.")
    if not 0 <= rate <= 1:
        raise ServiceError("The check rate is a number from 0 to 1 (0.1 serves one task in ten).")
    project = Project.objects.select_for_update().get(pk=project.pk)
    project.check_rate = float(rate)
    project.save(update_fields=["check_rate"])
    return project
