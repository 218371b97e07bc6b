"""Reads of gold checks.

`check_results(project)` is what reviewer accuracy and drift consume. Its shape:

    {reviewer_pk: ReviewerChecks(
        reviewer_id=7, username="alice",
        checks=[                                  # in submission order (submitted_at, pk)
            CheckResult(
                assignment_id=..., answer_pk=..., answer_id="a2-deadline/baseline",
                task_number=17, submitted_at=datetime,
                fields={                           # field -> the items compared on it
                    "support": [ItemResult(claim_index=0, label="supported",
                                           gold="supported", correct=True), ...],
                    "support_binary": [...], "severity": [...], "requires_evidence": [...],
                    "citations": [...],            # claim fields: one item per claim
                    "relevance": [ItemResult(claim_index=None, ...)],   # answer fields: one
                    "abstention": [...], "failure_labels": [...],
                }),
            ...]),
     ...}

Only submitted check label sets count (one in progress, skipped or abandoned does not), and
only the fields of the project's label schema. A field is compared where its gold is decided
(agreed or adjudicated) and not null: a pending field (a lead re-opened a decision), or
abstention on an answer that did not decline (gold empty), is left out, so `fields[name]` may
be empty. `evidence` is not compared: reviewers pick different but equally valid passages
(the agreement report measures their overlap instead). Values are compared as gold compares
two reviewers (annotate.gold.pairs.comparable): failure labels as sets, citations as maps.
`CheckResult.correct` is True when every compared item of every field is (None when nothing
was compared); `errors` counts the items that are not.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from annotate.common import computed
from annotate.gold.pairs import (
    ADJUDICATED,
    AGREED,
    answer_fields,
    claim_fields,
    claim_label_values,
    claim_values,
    comparable,
    pairs_for_project,
)
from annotate.gold.selectors import pair_summary
from annotate.gold.summary import doubly_labelled
from annotate.models import Answer, Assignment, ClaimLabel, GoldCheck, Project
from annotate.report_kinds import DECIDED_ANSWERS

# Fields a check compares (see the module's docstring for evidence).
NOT_COMPARED = frozenset({"evidence"})
DECIDED_SOURCES = frozenset({AGREED, ADJUDICATED})


def checks_of(project: Project):
    """The project's checks, oldest mark first, each with its answer (task number, answer id)
    and who marked it: one query."""
    return (
        GoldCheck.objects.filter(project=project)
        .select_related("answer", "marked_by")
        .order_by("marked_at", "pk")
    )


def is_check(project: Project, answer: Answer) -> bool:
    return GoldCheck.objects.filter(project=project, answer=answer).exists()


def check_answer_pks(project: Project) -> set[int]:
    return set(GoldCheck.objects.filter(project=project).values_list("answer_id", flat=True))


def decided_answers(project: Project, reports: computed.Reports | None = None) -> frozenset[int]:
    """The pks of the project's decided answers: two reviewers labelled them and no field of
    the answer or its claims waits for a lead (every gold value agreed or adjudicated): the
    answers with two label sets, less those the adjudication queue holds (the pair summary,
    annotate.gold.selectors). Kept per project revision, as the summary is."""
    reports = reports if reports is not None else computed.reports_of(project)

    def compute() -> frozenset[int]:
        summary = pair_summary(project, reports)
        labelled = doubly_labelled(project).values_list("answer_id", flat=True)
        return frozenset(set(labelled) - set(summary.fields))

    return reports.get(DECIDED_ANSWERS, "", compute)


def decided_unmarked(
    project: Project, *, limit: int, marked: set[int], reports=None
) -> tuple[list[Answer], int]:
    """(up to `limit` decided answers not among `marked` (the checks' answers), by task
    number; how many there are). One query when there are some, none otherwise."""
    pks = decided_answers(project, reports) - marked
    if not pks:
        return [], 0
    answers = list(
        Answer.objects.filter(pk__in=sorted(pks)[:5000])
        .select_related("case")
        .only("pk", "answer_id", "task_number", "case__question")
        .order_by("task_number", "pk")[:limit]
    )
    return answers, len(pks)


@dataclass(frozen=True, slots=True)
class ItemResult:
    claim_index: int | None  # the claim's 0-based index, None for the answer
    label: Any  # the reviewer's value
    gold: Any
    correct: bool


@dataclass(slots=True)
class CheckResult:
    assignment_id: int
    answer_pk: int
    answer_id: str
    task_number: int | None
    submitted_at: datetime
    fields: dict[str, list[ItemResult]] = field(default_factory=dict)

    @property
    def errors(self) -> int:
        return sum(not item.correct for items in self.fields.values() for item in items)

    @property
    def compared(self) -> int:
        return sum(len(items) for items in self.fields.values())

    @property
    def correct(self) -> bool | None:
        return None if not self.compared else self.errors == 0


@dataclass(slots=True)
class ReviewerChecks:
    reviewer_id: int
    username: str
    checks: list[CheckResult] = field(default_factory=list)


ANSWER_COLUMNS = ("relevance", "abstention", "failure_labels", "note")


def check_results(project: Project) -> dict[int, ReviewerChecks]:
    """Every reviewer's submitted check label sets compared with the checks' gold, in
    submission order (the module's docstring has the shape). Queries: the check label sets,
    their claim labels, and the checked answers' pairs (three)."""
    schema = project.schema
    rows = list(
        Assignment.objects.filter(
            project=project, is_check=True, status=Assignment.Status.SUBMITTED
        )
        .order_by("submitted_at", "pk")
        .values(
            "pk",
            "answer_id",
            "reviewer_id",
            "reviewer__username",
            "submitted_at",
            "answer__answer_id",
            "answer__task_number",
            *ANSWER_COLUMNS,
        )
    )
    out: dict[int, ReviewerChecks] = {}
    if not rows:
        return out
    claim_labels: dict[int, dict[int, dict]] = defaultdict(dict)
    labels = (
        ClaimLabel.objects.filter(assignment_id__in=[row["pk"] for row in rows])
        .values_list(*claim_label_values())
        .order_by("claim_id")
    )
    for row in labels:
        claim_labels[row[0]][row[2]] = claim_values(row)
    answer_pairs, claim_pairs = pairs_for_project(
        project, answer_ids=sorted({row["answer_id"] for row in rows})
    )
    gold_answer = {pair.answer_id: pair for pair in answer_pairs}
    gold_claims: dict[int, list] = defaultdict(list)
    for pair in claim_pairs:
        gold_claims[pair.answer_id].append(pair)
    claim_names = [n for n in claim_fields(schema) if n not in NOT_COMPARED]
    answer_names = [n for n in answer_fields(schema) if n not in NOT_COMPARED]
    for row in rows:
        result = CheckResult(
            assignment_id=row["pk"],
            answer_pk=row["answer_id"],
            answer_id=row["answer__answer_id"],
            task_number=row["answer__task_number"],
            submitted_at=row["submitted_at"],
            fields={name: [] for name in (*claim_names, *answer_names)},
        )
        mine = claim_labels[row["pk"]]
        for pair in gold_claims[row["answer_id"]]:
            values = mine.get(pair.ordinal)
            if values is None:
                continue
            for name in claim_names:
                item = _compare(name, values, pair, pair.ordinal)
                if item is not None:
                    result.fields[name].append(item)
        pair = gold_answer.get(row["answer_id"])
        if pair is not None:
            values = {k: row[k] for k in ANSWER_COLUMNS}
            for name in answer_names:
                item = _compare(name, values, pair, None)
                if item is not None:
                    result.fields[name].append(item)
        reviewer = out.setdefault(
            row["reviewer_id"],
            ReviewerChecks(reviewer_id=row["reviewer_id"], username=row["reviewer__username"]),
        )
        reviewer.checks.append(result)
    return out


def _compare(name: str, values: dict, pair, claim_index: int | None) -> ItemResult | None:
    """One field of one item: the reviewer's value against gold, or None where gold is not
    decided or is null."""
    if pair.source.get(name) not in DECIDED_SOURCES:
        return None
    gold = pair.gold.get(name)
    if gold is None or gold == "":  # "": no abstention verdict (the answer did not decline)
        return None
    label = values.get(name)
    return ItemResult(
        claim_index=claim_index,
        label=label,
        gold=gold,
        correct=comparable(name, values) == comparable(name, {name: gold}),
    )
