"""One answer as a judge run and gold see it, claim by claim (answer_detail)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from annotate.gold.imported import gold_for_project
from annotate.gold.pairs import ItemPair
from annotate.gold.splits import judge_split
from annotate.models import Answer, Claim
from annotate.schema import BINARY, UNSUPPORTED, support_binary
from evaluation.models import JudgeRun, Verdict
from evaluation.reports.judge_gold import OK


@dataclass
class ClaimRow:
    claim: Claim
    pair: ItemPair | None
    verdict: Verdict | None

    @property
    def gold(self) -> str | None:
        """The decided support; while only support_binary is decided (both reviewers said
        unsupported, in different words), that."""
        if not self.pair:
            return None
        value = self.pair.gold.get("support")
        if support_binary(value) is not None:
            return value
        binary = self.pair.gold.get("support_binary")
        return binary if binary in BINARY else None

    @property
    def agrees(self) -> bool | None:
        """Whether the verdict matches gold, on the finer scale both of them have."""
        if self.gold is None or self.verdict is None or self.verdict.status != OK:
            return None
        if UNSUPPORTED in (self.gold, self.verdict.label):
            return support_binary(self.verdict.label) == support_binary(self.gold)
        return self.verdict.label == self.gold


@dataclass
class AnswerDetail:
    answer: Answer
    split: str
    claims: list[ClaimRow]
    answer_pair: ItemPair | None
    answer_verdict: Verdict | None
    passages: list[tuple[int | None, Any]]  # (rank or None when only cited, passage)


def answer_detail(*, run: JudgeRun, answer: Answer) -> AnswerDetail:
    """An answer's claims with gold and this run's verdicts, and the passages shown with it.
    `answer` must already be scoped to the run's project by the caller."""
    answer_pairs, claim_pairs = gold_for_project(run.project, answer_ids=[answer.pk])
    by_claim = {p.claim_id: p for p in claim_pairs}
    verdicts = list(Verdict.objects.filter(run=run, answer=answer))
    claim_verdicts = {v.claim_id: v for v in verdicts if v.claim_id is not None}
    claims = list(answer.claims.prefetch_related("citations__passage"))
    passages: list[tuple[int | None, Any]] = []
    seen: set[str] = set()
    for r in answer.retrieved.select_related("passage"):
        passages.append((r.rank, r.passage))
        seen.add(r.passage.passage_id)
    for claim in claims:
        for citation in claim.citations.all():
            if citation.passage is not None and citation.passage.passage_id not in seen:
                passages.append((None, citation.passage))
                seen.add(citation.passage.passage_id)
    return AnswerDetail(
        answer=answer,
        split=judge_split(answer.case.case_id),
        claims=[ClaimRow(c, by_claim.get(c.pk), claim_verdicts.get(c.pk)) for c in claims],
        answer_pair=answer_pairs[0] if answer_pairs else None,
        answer_verdict=next((v for v in verdicts if v.claim_id is None), None),
        passages=passages,
    )
