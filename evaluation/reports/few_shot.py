"""Few-shot examples for a judge prompt, drawn from the gold of the judge_dev split only
(few_shot_examples).
"""

from __future__ import annotations

from collections import defaultdict

from annotate.gold.imported import gold_in_chunks
from annotate.gold.pairs import ItemPair
from annotate.models import Answer, Citation, Project, RetrievedPassage
from annotate.schema import support_binary
from evaluation.reports.judge_gold import ProjectGold, load_gold


def few_shot_examples(project: Project, *, gold: ProjectGold | None = None) -> list[dict]:
    """Worked examples for writing a judge prompt: the gold claims of `judge_dev` cases only,
    never `judge_test` (those measure the judge, so it must not have seen them). Each carries
    what the reviewers saw: the question, the answer, and its passages (retrieved, then cited)."""
    gold = gold or load_gold(project)
    chosen = [
        c
        for c in gold.claims_in("judge_dev")
        if c.answer.split == "judge_dev" and gold.gold_support(c.pk) is not None
    ]
    answer_pks = sorted({c.answer.pk for c in chosen})
    answers = {
        a.pk: a
        for a in Answer.objects.filter(pk__in=answer_pks)
        .select_related("case")
        .only("pk", "text", "case__question")
    }
    passages: dict[int, dict[str, str]] = defaultdict(dict)
    for r in (
        RetrievedPassage.objects.filter(answer_id__in=answer_pks)
        .order_by("answer_id", "rank")
        .values_list("answer_id", "passage__passage_id", "passage__text")
    ):
        passages[r[0]].setdefault(r[1], r[2])
    for r in (
        Citation.objects.filter(claim__answer_id__in=answer_pks, passage__isnull=False)
        .order_by("claim__answer_id", "claim__ordinal", "ordinal")
        .values_list("claim__answer_id", "passage__passage_id", "passage__text")
    ):
        passages[r[0]].setdefault(r[1], r[2])

    # The quote and the rationale are in the whole pairs only (ProjectGold keeps less).
    chosen_pks = {claim.pk for claim in chosen}
    quotes, rationales = {}, {}
    for _, claim_pairs in gold_in_chunks(project, answer_pks):
        for pair in claim_pairs:
            if pair.claim_id in chosen_pks:
                quotes[pair.claim_id], rationales[pair.claim_id] = _quote_and_rationale(pair)
    examples = []
    for claim in chosen:
        pair = gold.claim_pairs[claim.pk]
        answer = answers[claim.answer.pk]
        examples.append(
            {
                "answer_id": claim.answer.answer_id,
                "claim_index": claim.ordinal,
                "split": "judge_dev",
                "question": answer.case.question,
                "answer": answer.text,
                "passages": [
                    {"passage_id": pid, "text": text}
                    for pid, text in passages[claim.answer.pk].items()
                ],
                "claim": claim.text,
                "label": pair.support,
                "label_binary": support_binary(pair.support),
                "evidence_ids": list(pair.evidence_ids),
                "quote": quotes[claim.pk] or "",
                "rationale": rationales[claim.pk],
                "gold_source": pair.source,
            }
        )
    return examples


def _quote_and_rationale(pair: ItemPair) -> tuple[str | None, str]:
    """A few-shot example's quote (the gold evidence's) and rationale: the lead's when the
    support was adjudicated, else the reviewers' notes (the imported label's note, for gold
    imported alone)."""
    evidence = pair.gold.get("evidence")
    quote = evidence.get("evidence_quote") if isinstance(evidence, dict) else ""
    if pair.source.get("support") == "adjudicated":
        return quote, pair.rationale.get("support", "")
    if not pair.paired:
        return quote, (pair.imported.labels.get("note") or "") if pair.imported else ""
    notes = [labels.get("note") or "" for _, labels in pair.sides]
    return quote, " / ".join(dict.fromkeys(n for n in notes if n))
