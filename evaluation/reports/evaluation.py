"""The evaluation report (evaluate): the project's data read once from the database
(evaluation.reports.dataset.load, a fixed number of queries whatever the number of answers),
then scored by the pure functions of ``evaluation.metrics``, per variant and per slice.
``evaluate`` and ``compare`` (evaluation.reports.comparison) accept the data as ``data=`` so a
page that shows both reads the database once. Everything returned is plain JSON-able data
with a stable key order.

Definitions this module fixes (SPEC.md fixes the metrics themselves):

- **Slices.** ``all``, ``answerable``, ``unanswerable``, ``adversarial`` (the flag, whatever
  the answerability), ``dev`` and ``heldout`` (the case's split). Slices are never merged.
- **Decided.** A gold field counts only when its source is ``agreed``, ``adjudicated`` or
  ``imported`` (gold from elsewhere, one label per item: gold for every figure, as for
  exports and calibration); a field the reviewers disagree on and no lead has decided is
  ``pending`` and is counted apart, as are answers with neither two submitted label sets nor
  imported gold (``unlabelled``).
- **Label schema.** Only the fields the project labels are reported: with citations off there
  is no citation precision or coverage, with relevance off no relevance, and so on. The
  binary figures (faithfulness, unsupported answers, stage diagnosis) read support_binary,
  which is decided on its own (two reviewers who both say unsupported agree on it).
- **Not available.** A project without relevance judgments has no retrieval figures and one
  without evidence passages no stage diagnosis; both say so (``not_available``), never 0.
- **Retrieval.** Grades come from the case's judgments; a case with no positive grade is not
  eligible (counted, never scored 0). With repeated samples each case's score is the mean over
  its samples before the mean over cases. The ``in_prompt`` ranking keeps only the passages
  that reached the prompt, in their rank order. An eligible case whose answers recorded no
  ranking at all is counted as ``no_ranking`` rather than scored 0.
- **Evidence passages** of a case: the passages of its ``evidence`` entries (the case author's
  evidence contract), not every passage graded helpful.
- **Unsupported answer.** An answer with at least one claim whose decided support_binary is
  unsupported. It is unknown (``pending``) while it has an undecided claim and no decided
  unsupported one.
- **Failing answer** (stage diagnosis, answerable cases only): an unsupported answer, or an
  answer that abstained. A non-failing answer is ``ok`` when every claim's support is decided
  (an answer without claims that did not abstain is ``ok``), ``pending`` when a claim is
  still undecided, ``unlabelled`` when it has claims but no two submitted label sets.
- **Stage** of a failing answer: the first stage of the pipeline that broke, in this order:
  ``not_in_corpus`` (the case names evidence passages but none is in the corpus any more; a
  case that names none cannot be diagnosed and is counted as ``no_evidence``, apart from the
  failures), ``not_retrieved`` (no evidence passage within the top
  ``stage_k`` of the ranking, ``stage_k`` being the report's largest k; a passage that
  reached the prompt counts as retrieved), ``not_in_prompt`` (retrieved, but no evidence
  passage reached the prompt), ``generation`` (evidence in the prompt, yet a claim is
  gold-contradicted or insufficient), ``false_abstention`` (evidence in the prompt and the
  answer declined without an unsupported claim).
- **Comparison.** Cases are paired by ``case_id``; a case's value is the mean over its
  samples. Pass rules for the transitions are in ``PASS_RULES``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from annotate.models import Project
from annotate.schema import LabelSchema
from evaluation.metrics import (
    NDCG_GAIN,
    P95_METHOD,
    AbstentionRow,
    ClaimCitations,
    NotEligible,
    abstention_summary,
    citation_coverage,
    citation_precision,
    claim_faithfulness,
    cost_summary,
    failure_label_counts,
    generation_variance,
    latency_summary,
    mean_over_eligible,
    relevance_distribution,
    retrieval_scores_at,
)
from evaluation.reports.charts import bin_counts, latency_bins
from evaluation.reports.dataset import (
    DECIDED,
    SLICES,
    AnswerData,
    Dataset,
    by_case,
    check_ks,
    in_slice,
    load,
    mean,
    variant_names,
)

DEFAULT_KS = (1, 3, 5, 10)
STAGE_SLICES = ("answerable", "adversarial", "dev", "heldout")
RANKINGS = ("full", "in_prompt")
RETRIEVAL_METRICS = ("recall", "precision", "mrr", "ndcg")
# Pipeline order: the stage bar reads left to right like index → retrieval → prompt → generation.
STAGES = ("not_in_corpus", "not_retrieved", "not_in_prompt", "generation", "false_abstention")
STAGE_ROWS = (*STAGES, "no_evidence", "ok", "pending", "unlabelled")

FAILING = (
    "An answer of an answerable case fails when it abstained or when at least one of its "
    "claims has a decided (agreed or adjudicated) support label other than 'supported'."
)
STAGE_DEFINITIONS = {
    "not_in_corpus": "index: the case's evidence passages are no longer in the corpus",
    "not_retrieved": "retrieval: no evidence passage in the ranking's top k, none in the prompt",
    "not_in_prompt": "prompt: an evidence passage was retrieved but none reached the prompt",
    "generation": "generation: evidence in the prompt, yet a claim is contradicted/insufficient",
    "false_abstention": "generation: evidence in the prompt, yet the answer declined",
    "no_evidence": "not diagnosable: failing, but the case names no evidence passage",
    "ok": "not failing, every claim decided",
    "pending": "not failing so far, but a claim's support is still undecided",
    "unlabelled": "has claims but neither two submitted label sets nor imported gold yet",
}
# A binary project has no contradicted or insufficient claim, only unsupported ones.
BINARY_GENERATION_STAGE = "generation: evidence in the prompt, yet a claim is unsupported"


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def evaluate(
    project: Project,
    *,
    ks: Sequence[int] = DEFAULT_KS,
    variants: Iterable[str] | None = None,
    data: Dataset | None = None,
) -> dict:
    """Retrieval, generation, abstention, latency and stage diagnosis per variant and slice."""
    ks = check_ks(ks)
    data = data or load(project)
    names = variant_names(data, variants)
    stage_k = max(ks)
    schema = project.schema
    missing = data.not_available
    memo: dict = {}  # each case's retrieval, computed once for all the slices it is in
    report_variants = {}
    for name in names:
        meta = data.variants[name]
        answers = data.answers_of(name)
        samples = defaultdict(int)
        for answer in answers:
            samples[answer.case.case_id] += 1
        report_variants[name] = {
            "name": name,
            "description": meta.description,
            "model": meta.model,
            "settings": meta.settings,
            "answers": len(answers),
            "cases": len(samples),
            "repeated_samples": any(n > 1 for n in samples.values()),
            "retrieval": None
            if "retrieval" in missing
            else {s: _retrieval(in_slice(answers, s), ks, memo) for s in SLICES},
            "generation": {s: _generation(in_slice(answers, s), schema) for s in SLICES},
            "stages": None
            if "stages" in missing
            else {s: _stages(in_slice(answers, s), stage_k) for s in STAGE_SLICES},
            "diagnosis": []
            if "stages" in missing
            else [
                {
                    "answer_id": a.answer_id,
                    "case_id": a.case.case_id,
                    "sample": a.sample,
                    "stage": a.stage(stage_k),
                    "adversarial": a.case.adversarial,
                    "split": a.case.split,
                }
                for a in answers
                if a.case.answerable
            ],
        }
    latencies = {
        name: [a.elapsed_ms for a in data.answers_of(name) if a.elapsed_ms is not None]
        for name in names
    }
    edges = latency_bins([ms for values in latencies.values() for ms in values])
    return {
        "project": project.slug,
        "corpus_version": project.corpus_version,
        "label_schema": schema.as_dict(),
        "not_available": missing,
        "ks": list(ks),
        "slices": list(SLICES),
        "definitions": {
            "ndcg_gain": NDCG_GAIN,
            "p95": P95_METHOD,
            "decided": sorted(DECIDED),
            "failing": FAILING,
            "stage_order": list(STAGES),
            "stage_k": stage_k,
            "stages": (
                {**STAGE_DEFINITIONS, "generation": BINARY_GENERATION_STAGE}
                if schema.binary
                else STAGE_DEFINITIONS
            ),
            "evidence": "passages of the case's evidence entries",
            "not_eligible": "a case with no positive grade is counted apart, never scored 0",
        },
        "variants": report_variants,
        # Every variant's elapsed_ms counted on shared bins: the page's histograms, drawn
        # from the stored report without reading 10,000 answers again.
        "latency_histogram": {
            "edges": edges,
            "counts": {name: bin_counts(values, edges) for name, values in latencies.items()},
        },
    }


def per_case_retrieval(
    answers: Iterable[AnswerData], k: int, ranking: str = "full", *, memo: dict | None = None
) -> tuple[dict[str, dict[str, float]], int, int]:
    """Each eligible case's retrieval scores at k, averaged over its samples; and the number
    of cases that are not eligible and that recorded no ranking."""
    return per_case_retrieval_at(answers, (k,), ranking, memo=memo)[k]


def per_case_retrieval_at(
    answers: Iterable[AnswerData],
    ks: Sequence[int],
    ranking: str = "full",
    *,
    memo: dict | None = None,
) -> dict[int, tuple[dict[str, dict[str, float]], int, int]]:
    """``per_case_retrieval`` at every k in ``ks``, each case scored once for all of them.
    ``memo`` keeps each case's result for a later call over the same answers (the slices of
    one report share cases)."""
    ks = tuple(ks)
    scores: dict[int, dict[str, dict[str, float]]] = {k: {} for k in ks}
    not_eligible = no_ranking = 0  # the same at every k
    for case_id, case_answers in by_case(answers).items():
        key = (case_id, tuple(a.pk for a in case_answers), ranking, ks)
        outcome = memo.get(key) if memo is not None else None
        if outcome is None:
            outcome = _case_retrieval(case_answers, ks, ranking)
            if memo is not None:
                memo[key] = outcome
        if outcome == NOT_ELIGIBLE:
            not_eligible += 1
        elif outcome == NO_RANKING:
            no_ranking += 1
        else:
            for k in ks:
                scores[k][case_id] = outcome[k]
    return {k: (scores[k], not_eligible, no_ranking) for k in ks}


NOT_ELIGIBLE, NO_RANKING = "not eligible", "no ranking"


def _case_retrieval(case_answers: list[AnswerData], ks: Sequence[int], ranking: str):
    """NOT_ELIGIBLE, NO_RANKING, or each k's scores averaged over the case's samples."""
    grades = case_answers[0].case.grades
    ranked = [a for a in case_answers if a.ranking]
    try:
        # With no ranking at all, scoring an empty one still tells eligibility apart.
        per_sample = [retrieval_scores_at(a.ranked(ranking), grades, ks) for a in ranked] or [
            retrieval_scores_at([], grades, ks)
        ]
    except NotEligible:
        return NOT_ELIGIBLE
    if not ranked:
        return NO_RANKING
    if len(per_sample) == 1:  # one sample, the usual case: its scores are the means
        return {
            k: {
                "recall": s.recall,
                "precision": s.precision,
                "mrr": s.reciprocal_rank,
                "ndcg": s.ndcg,
            }
            for k, s in per_sample[0].items()
        }
    return {
        k: {
            "recall": mean([s[k].recall for s in per_sample]),
            "precision": mean([s[k].precision for s in per_sample]),
            "mrr": mean([s[k].reciprocal_rank for s in per_sample]),
            "ndcg": mean([s[k].ndcg for s in per_sample]),
        }
        for k in ks
    }


def _retrieval(answers: list[AnswerData], ks: Sequence[int], memo: dict | None = None) -> dict:
    block: dict[str, dict] = {}
    for ranking in RANKINGS:
        block[ranking] = {}
        by_k = per_case_retrieval_at(answers, ks, ranking, memo=memo)
        for k in ks:
            scores, not_eligible, no_ranking = by_k[k]
            row: dict[str, Any] = {
                name: mean_over_eligible(s[name] for s in scores.values()).mean
                for name in RETRIEVAL_METRICS
            }
            row.update(eligible=len(scores), not_eligible=not_eligible, no_ranking=no_ranking)
            block[ranking][str(k)] = row
    return block


def _generation(answers: list[AnswerData], schema: LabelSchema) -> dict:
    """Generation figures of some answers. A field outside the project's label schema has no
    figure at all (its key is absent), never a 0 or an empty rate."""
    labelled = [a for a in answers if a.labelled]
    claims = [c for a in labelled for c in a.claims]
    unlabelled_claims = sum(a.claim_count for a in answers if not a.labelled)

    faith = claim_faithfulness(
        c.faithfulness_label for c in claims if c.faithfulness_label is not None
    )
    decided_citations = [c for c in claims if c.citations is not None]
    precision = citation_precision(v for c in decided_citations for v in c.citations.values())
    # Without a needs-evidence field every claim needs evidence.
    asks_requires = schema.claim("requires_evidence")
    coverage_claims = [
        c
        for c in claims
        if c.citations is not None and (c.requires_evidence is not None or not asks_requires)
    ]
    coverage = citation_coverage(
        ClaimCitations(c.requires_evidence if asks_requires else True, tuple(c.citations.values()))
        for c in coverage_claims
    )
    relevance_values = [a.gold["relevance"] for a in labelled if "relevance" in a.gold]
    relevance = relevance_distribution(relevance_values)

    known = [a for a in answers if a.unsupported is not None]
    unknown = [a for a in answers if a.unsupported is None]
    abstention_rows = [a for a in answers if a.case.answerable or a.unsupported is not None]
    abstention = abstention_summary(
        AbstentionRow(a.case.answerable, a.abstained, bool(a.unsupported)) for a in abstention_rows
    )
    abstained_labelled = [a for a in labelled if a.abstained]
    gold_abstention = [a.gold["abstention"] for a in abstained_labelled if "abstention" in a.gold]
    failures_decided = [a.gold["failure_labels"] for a in labelled if "failure_labels" in a.gold]
    failures = failure_label_counts(failures_decided)
    unsupported = sum(bool(a.unsupported) for a in known)

    block = {
        "answers": len(answers),
        "labelled": len(labelled),
        "unlabelled": len(answers) - len(labelled),
        "faithfulness": {
            "n": faith.n,
            "supported": faith.supported,
            "contradicted": faith.contradicted,
            "insufficient": faith.insufficient,
            # decided unsupported, subtype not (yet) decided: every unsupported claim of a
            # binary project, and a three-way claim whose subtype still waits for a lead
            "unsupported": faith.unsupported,
            "rate": faith.rate,
            "pending": len(claims) - faith.n,
            "unlabelled": unlabelled_claims,
        },
        "citation_precision": {
            "links": precision.links,
            "supports": precision.supports,
            "does_not_support": precision.does_not_support,
            "not_found": precision.not_found,
            "rate": precision.rate,
            "pending": len(claims) - len(decided_citations),
        },
        "citation_coverage": {
            "requiring_evidence": coverage.requiring_evidence,
            "covered": coverage.covered,
            "not_requiring_evidence": coverage.not_requiring_evidence,
            "rate": coverage.rate,
            "pending": len(claims) - len(coverage_claims),
        },
        "relevance": {
            "n": relevance.n,
            "mean": relevance.mean,
            "counts": {str(v): n for v, n in relevance.counts.items()},
            "pending": len(labelled) - relevance.n,
        },
        "unsupported_answers": {
            "n": len(known),
            "unsupported": unsupported,
            "rate": unsupported / len(known) if known else None,
            # Unknown answers, apart: a dispute waiting for a lead is not an answer nobody
            # has labelled twice yet.
            "pending": sum(a.labelled for a in unknown),
            "unlabelled": sum(not a.labelled for a in unknown),
        },
        "abstention": {
            "unanswerable": abstention.unanswerable,
            "abstained": abstention.abstained,
            "unsupported": abstention.unsupported,
            "answered_supported": abstention.other,
            "abstention_rate": abstention.abstention_rate,
            "unsupported_rate": abstention.unsupported_rate,
            "pending": sum(1 for a in answers if not a.case.answerable) - abstention.unanswerable,
            "answerable": abstention.answerable,
            "false_abstentions": abstention.false_abstentions,
            "false_abstention_rate": abstention.false_abstention_rate,
            "gold": {
                "n": len(gold_abstention),
                "appropriate": gold_abstention.count("appropriate"),
                "unnecessary": gold_abstention.count("unnecessary"),
                "pending": len(abstained_labelled) - len(gold_abstention),
            },
        },
        "failure_labels": {
            "answers": failures.answers,
            "counts": dict(failures.counts),
            "pending": len(labelled) - failures.answers,
        },
        "latency": _asdict(latency_summary(a.elapsed_ms for a in answers)),
        "cost": _asdict(cost_summary(a.request_cost for a in answers)),
        "generation_variance": _variance(answers),
    }
    if not schema.claim("citations"):
        del block["citation_precision"], block["citation_coverage"]
    if not schema.answer("relevance"):
        del block["relevance"]
    if not schema.answer("abstention"):
        del block["abstention"]["gold"]
    if not schema.answer("failure_labels"):
        del block["failure_labels"]
    return block


def _variance(answers: list[AnswerData]) -> dict | None:
    """How often a case's outcome (abstained, unsupported) differs between its samples; None
    when no case of the variant has repeated samples."""
    grouped = by_case(answers)
    if not any(len(group) > 1 for group in grouped.values()):
        return None
    outcomes = {
        case_id: [(a.abstained, a.unsupported) for a in group if a.unsupported is not None]
        for case_id, group in grouped.items()
    }
    variance = generation_variance(outcomes)
    return {
        "outcome": "abstained, has an unsupported claim",
        "repeated": variance.repeated,
        "differing": variance.differing,
        "single_sample": variance.single_sample,
        "rate": variance.rate,
        "differing_case_ids": list(variance.differing_case_ids),
    }


def _asdict(result) -> dict:
    return {name: getattr(result, name) for name in result.__dataclass_fields__}


def _stages(answers: list[AnswerData], stage_k: int) -> dict:
    rows: dict[str, dict] = {
        stage: {"answers": 0, "cases": 0, "answer_ids": [], "case_ids": []} for stage in STAGE_ROWS
    }
    answerable = [a for a in answers if a.case.answerable]
    cases: dict[str, set[str]] = {stage: set() for stage in STAGE_ROWS}
    for answer in answerable:
        stage = answer.stage(stage_k)
        row = rows[stage]
        row["answers"] += 1
        row["answer_ids"].append(answer.answer_id)
        cases[stage].add(answer.case.case_id)
    for stage, row in rows.items():
        row["answer_ids"].sort()
        row["case_ids"] = sorted(cases[stage])
        row["cases"] = len(row["case_ids"])
    failing = sum(rows[s]["answers"] for s in STAGES)
    return {"answers": len(answerable), "failing": failing, "rows": rows}


# ---------------------------------------------------------------------------------------------
# Variant comparison
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Choosing a variant against limits set in advance
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Flat tables: the CSV downloads, the command's text output and the page's tables
# ---------------------------------------------------------------------------------------------
