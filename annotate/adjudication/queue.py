"""The adjudication queue: answers whose reviewers disagree on a field no lead has decided yet,
most serious first, from the pair summary (annotate.gold.summary); then the answers a lead
re-opened after the guidelines changed (annotate.adjudication.reaudit), until a lead saves
their adjudication again."""

from __future__ import annotations

from dataclasses import dataclass

from annotate.adjudication.reaudit import reopened_answers
from annotate.gold.summary import PairSummary, pair_summary
from annotate.models import Answer, Project


@dataclass(frozen=True, slots=True)
class AnswerDisagreement:
    """An answer in the adjudication queue, as the queue shows it: never its variant."""

    answer_pk: int
    task_number: int
    question: str
    score: int
    fields: list[str]
    # Re-opened for re-audit after a guidelines change (its gold stands until decided again).
    reaudit: bool = False


# The queue's slices, as the reports cut them (by the case's answerable and adversarial
# flags): adversarial is the flag, whatever the answerability, so an adversarial answerable
# case is in both.
QUEUE_SLICES = {
    "answerable": lambda answerable, adversarial: answerable,
    "unanswerable": lambda answerable, adversarial: not answerable,
    "adversarial": lambda answerable, adversarial: adversarial,
}


def adjudication_queue(
    project: Project,
    *,
    slice: str | None = None,
    field: str | None = None,
    summary: PairSummary | None = None,
) -> list[AnswerDisagreement]:
    """Answers whose reviewers disagree on a field no lead has decided yet, most serious
    first (ties by task number); only those of one slice, or disagreeing on one field, when
    asked. From `summary` (pair_summary, derived here when not given: a caller that keeps it
    serves every filter of the queue, and the gold page, from one derivation), then one query
    for the queue's answers, as values (model instances of a 10,000-answer project's 3,855
    disagreeing answers took 100 ms, again after every decision and submission)."""
    summary = summary if summary is not None else pair_summary(project)
    scores, fields = summary.scores, summary.fields
    # Re-opened answers with a disagreement still pending are in the queue for it already;
    # a field filter asks for disagreements on that field, which a re-audit is not.
    reopened = set() if field is not None else set(reopened_answers(project)) - set(scores)
    answers = Answer.objects.filter(pk__any=[*scores, *reopened]).values_list(
        "pk", "task_number", "case__question", "case__answerable", "case__adversarial"
    )
    keep = QUEUE_SLICES[slice] if slice else None
    queue = [
        AnswerDisagreement(
            pk, number, question, scores.get(pk, 0), sorted(fields.get(pk, ())), pk in reopened
        )
        for pk, number, question, answerable, adversarial in answers
        if (keep is None or keep(answerable, adversarial))
        and (field is None or field in fields[pk])
    ]
    # Disagreements first, most serious first; the re-audits after them.
    return sorted(queue, key=lambda d: (d.reaudit, -d.score, d.task_number or 0))
