"""Evaluation reports: the project's data read once from the database, then scored by the pure
functions of ``evaluation.metrics``, per variant and per slice.

``load(project)`` runs a fixed number of queries (twelve, whatever the number of answers);
``evaluate`` and ``compare`` accept its result as ``data=`` so a page that shows both reads
the database once. Everything returned is plain JSON-able data with a stable key order.

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

import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from annotate.common import collector
from annotate.gold.imported import gold_in_chunks
from annotate.gold.pairs import ADJUDICATED, AGREED, IMPORTED
from annotate.models import (
    Answer,
    Case,
    Citation,
    Claim,
    Evidence,
    Judgment,
    Project,
    RetrievedPassage,
    Variant,
)
from annotate.schema import LabelSchema
from evaluation.charts import bin_counts, latency_bins
from evaluation.metrics import (
    FAILURE_LABELS,
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
    paired_bootstrap_diff,
    paired_transitions,
    reciprocal_rank_fusion,
    relevance_distribution,
    retrieval_scores_at,
)

DEFAULT_KS = (1, 3, 5, 10)
DEFAULT_COMPARE_K = 5  # the page's comparison of its first two variants, unless asked
SLICES = ("all", "answerable", "unanswerable", "adversarial", "dev", "heldout")
# The agreement report's slices (evaluation.agreement_report): named here, where reading them
# loads no statistics library (the API's filters need the names, not the report).
AGREEMENT_SLICES = SLICES[:4]
STAGE_SLICES = ("answerable", "adversarial", "dev", "heldout")
RANKINGS = ("full", "in_prompt")
RETRIEVAL_METRICS = ("recall", "precision", "mrr", "ndcg")
# Pipeline order: the stage bar reads left to right like index → retrieval → prompt → generation.
STAGES = ("not_in_corpus", "not_retrieved", "not_in_prompt", "generation", "false_abstention")
STAGE_ROWS = (*STAGES, "no_evidence", "ok", "pending", "unlabelled")
DECIDED = frozenset({AGREED, ADJUDICATED, IMPORTED})
SUPPORTED = "supported"

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
COMPARE_METRICS = ("recall", "reciprocal_rank", "ndcg", "faithfulness", "unsupported", "abstention")
PASS_RULES = {
    "recall": "pass: every relevant passage in the top k (recall@k = 1); higher is better",
    "reciprocal_rank": "pass: a relevant passage at rank 1 (RR@k = 1); higher is better",
    "ndcg": "pass: ideal order within the top k (nDCG@k = 1); higher is better",
    "faithfulness": "pass: every decided claim supported; higher is better",
    "unsupported": "pass: no unsupported claim; value = unsupported share, lower is better",
    "abstention": "pass: abstained exactly when the case is unanswerable; higher is better",
}


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


@dataclass
class CaseData:
    pk: int
    case_id: str
    answerable: bool
    adversarial: bool
    split: str
    evidence: frozenset[str] = frozenset()
    grades: dict[str, int] = field(default_factory=dict)
    # Evidence the case names whose passage is gone from the corpus (only a deleted passage
    # does that: import refuses an unknown one).
    evidence_lost: bool = False

    def in_slice(self, name: str) -> bool:
        return SLICE_TESTS[name](self)


SLICE_TESTS: dict[str, Callable[[CaseData], bool]] = {
    "all": lambda c: True,
    "answerable": lambda c: c.answerable,
    "unanswerable": lambda c: not c.answerable,
    "adversarial": lambda c: c.adversarial,
    "dev": lambda c: c.split == Case.Split.DEV,
    "heldout": lambda c: c.split == Case.Split.HELDOUT,
}


@dataclass
class ClaimGold:
    """One claim's gold fields; a field is None while it is not decided (or not labelled)."""

    support: str | None  # on the project's scale
    support_binary: str | None  # supported / unsupported, decided on its own
    requires_evidence: bool | None
    citations: dict[str, str] | None

    @property
    def faithfulness_label(self) -> str | None:
        """The finest decided label: the subtype when decided, else supported/unsupported."""
        if self.support in ("supported", "contradicted", "insufficient_evidence"):
            return self.support
        return self.support_binary


@dataclass
class AnswerData:
    pk: int
    answer_id: str
    case: CaseData
    variant: str
    sample: int
    abstained: bool
    elapsed_ms: float | None
    request_cost: float | None
    ranking: list[str] = field(default_factory=list)
    prompt: list[str] = field(default_factory=list)
    claim_count: int = 0
    labelled: bool = False
    claims: list[ClaimGold] = field(default_factory=list)
    gold: dict[str, Any] = field(default_factory=dict)  # decided answer-level fields only

    def ranked(self, ranking: str) -> list[str]:
        return self.ranking if ranking == "full" else self.prompt

    @property
    def decided_supports(self) -> list[str]:
        """The claims' decided support_binary values."""
        return [c.support_binary for c in self.claims if c.support_binary is not None]

    @property
    def undecided_claims(self) -> int:
        """Claims without a decided support_binary (pending or never labelled)."""
        return self.claim_count - len(self.decided_supports)

    @property
    def unsupported(self) -> bool | None:
        """Has a decided unsupported claim (True), all claims decided supported (False), or
        unknown (None)."""
        if any(s != SUPPORTED for s in self.decided_supports):
            return True
        return False if self.undecided_claims == 0 else None

    @property
    def faithfulness(self) -> float | None:
        decided = self.decided_supports
        return sum(s == SUPPORTED for s in decided) / len(decided) if decided else None

    def stage(self, stage_k: int) -> str | None:
        """The diagnosis row of an answer of an answerable case (None otherwise): for a
        failing answer the first stage that broke, else ok / pending / unlabelled."""
        if not self.case.answerable:
            return None
        unsupported = self.unsupported
        if unsupported or self.abstained:
            return self._broken_stage(bool(unsupported), stage_k)
        if unsupported is False:
            return "ok"
        return "pending" if self.labelled else "unlabelled"

    def _broken_stage(self, unsupported: bool, stage_k: int) -> str:
        evidence = self.case.evidence
        if not evidence:
            return "not_in_corpus" if self.case.evidence_lost else "no_evidence"
        in_prompt = evidence.intersection(self.prompt)
        if not in_prompt and not evidence.intersection(self.ranking[:stage_k]):
            return "not_retrieved"
        if not in_prompt:
            return "not_in_prompt"
        return "generation" if unsupported else "false_abstention"


@dataclass
class VariantData:
    pk: int
    name: str
    description: str
    model: str
    settings: dict


@dataclass
class Dataset:
    project: Project
    variants: dict[str, VariantData]
    cases: dict[int, CaseData]
    answers: list[AnswerData]

    @property
    def not_available(self) -> dict[str, str]:
        """Sections that cannot be computed from this project's data, with the reason."""
        out = {}
        if not any(case.grades for case in self.cases.values()):
            out["retrieval"] = "not available: no relevance judgments in this project"
        if not any(case.evidence or case.evidence_lost for case in self.cases.values()):
            out["stages"] = "not available: no evidence passages in this project"
        return out

    def answers_of(self, variant: str) -> list[AnswerData]:
        return [a for a in self.answers if a.variant == variant]


@collector.paused()
def load(project: Project) -> Dataset:
    """Read everything the reports need: eight queries, and three for every
    annotate.gold.imported.PAIR_CHUNK answers (their label pairs)."""
    variants = {
        row["name"]: VariantData(**{**row, "settings": _sorted(row["settings"])})
        for row in Variant.objects.filter(project=project)
        .order_by("name")
        .values("pk", "name", "description", "model", "settings")
    }
    by_pk = {v.pk: v.name for v in variants.values()}
    cases, named = {}, set()
    for row in Case.objects.filter(project=project).values(
        "pk", "case_id", "answerable", "adversarial", "split", "evidence_named"
    ):
        if row.pop("evidence_named"):
            named.add(row["pk"])
        cases[row["pk"]] = CaseData(**row)
    evidence: dict[int, set[str]] = defaultdict(set)
    for case_pk, passage_id in Evidence.objects.filter(case__project=project).values_list(
        "case_id", "passage__passage_id"
    ):
        evidence[case_pk].add(passage_id)

    for case_pk, passage_id, grade in Judgment.objects.filter(case__project=project).values_list(
        "case_id", "passage__passage_id", "grade"
    ):
        cases[case_pk].grades[passage_id] = grade
    for case_pk, ids in evidence.items():
        cases[case_pk].evidence = frozenset(ids)
    for case_pk in named - evidence.keys():
        # The bundle named evidence, but its rows went with a deleted passage.
        cases[case_pk].evidence_lost = True

    answers = {
        row["pk"]: AnswerData(
            pk=row["pk"],
            answer_id=row["answer_id"],
            case=cases[row["case_id"]],
            variant=by_pk[row["variant_id"]],
            sample=row["sample"],
            abstained=row["abstained"],
            elapsed_ms=row["elapsed_ms"],
            request_cost=row["request_cost"],
        )
        for row in Answer.objects.filter(project=project)
        .order_by("answer_id")
        .values(
            "pk",
            "answer_id",
            "case_id",
            "variant_id",
            "sample",
            "abstained",
            "elapsed_ms",
            "request_cost",
        )
    }
    for answer_pk, passage_id, in_prompt in (
        RetrievedPassage.objects.filter(answer__project=project)
        .order_by("answer_id", "rank")
        .values_list("answer_id", "passage__passage_id", "in_prompt")
    ):
        answer = answers[answer_pk]
        answer.ranking.append(passage_id)
        if in_prompt:
            answer.prompt.append(passage_id)
    claim_answer: dict[int, int] = {}
    for claim_pk, answer_pk in Claim.objects.filter(answer__project=project).values_list(
        "pk", "answer_id"
    ):
        claim_answer[claim_pk] = answer_pk
        answers[answer_pk].claim_count += 1
    unresolved: dict[int, set[str]] = defaultdict(set)
    for claim_pk, cited_id in Citation.objects.filter(
        claim__answer__project=project, passage__isnull=True
    ).values_list("claim_id", "cited_id"):
        unresolved[claim_pk].add(cited_id)

    # Each chunk of pairs is folded into its answers' gold before the next is derived.
    for answer_pairs, claim_pairs in gold_in_chunks(project, list(answers)):
        for pair in answer_pairs:
            answer = answers[pair.answer_id]
            answer.labelled = True
            answer.gold = {
                name: pair.gold[name] for name, src in pair.source.items() if src in DECIDED
            }
        for pair in claim_pairs:
            decided = {name: pair.gold[name] for name, src in pair.source.items() if src in DECIDED}
            citations = decided.get("citations")
            if citations is not None:
                # An id that resolves to no passage never supports, whatever a label says.
                citations = {
                    **citations,
                    **dict.fromkeys(unresolved[pair.claim_id], "citation_not_found"),
                }
            answers[claim_answer[pair.claim_id]].claims.append(
                ClaimGold(
                    support=decided.get("support"),
                    support_binary=decided.get("support_binary"),
                    requires_evidence=decided.get("requires_evidence"),
                    citations=citations,
                )
            )
    return Dataset(project=project, variants=variants, cases=cases, answers=list(answers.values()))


def _sorted(settings: Any) -> dict:
    """Settings with sorted keys: PostgreSQL's jsonb reorders keys, SQLite keeps them, and the
    report must read the same on both."""
    return dict(sorted(settings.items())) if isinstance(settings, dict) else {"value": settings}


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
    ks = _check_ks(ks)
    data = data or load(project)
    names = _variant_names(data, variants)
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
            else {s: _retrieval(_in_slice(answers, s), ks, memo) for s in SLICES},
            "generation": {s: _generation(_in_slice(answers, s), schema) for s in SLICES},
            "stages": None
            if "stages" in missing
            else {s: _stages(_in_slice(answers, s), stage_k) for s in STAGE_SLICES},
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


def _check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    ks = tuple(sorted(set(ks)))
    if not ks or any(not isinstance(k, int) or k < 1 for k in ks):
        raise ValueError(f"every k must be a positive integer, got {ks}")
    return ks


def _variant_names(data: Dataset, variants: Iterable[str] | None) -> list[str]:
    if variants is None:
        return list(data.variants)
    names = list(variants)
    unknown = sorted(set(names) - set(data.variants))
    if unknown:
        raise ValueError(f"unknown variant(s): {', '.join(unknown)}")
    return names


def _in_slice(answers: list[AnswerData], name: str) -> list[AnswerData]:
    return [a for a in answers if a.case.in_slice(name)]


def _by_case(answers: Iterable[AnswerData]) -> dict[str, list[AnswerData]]:
    grouped: dict[str, list[AnswerData]] = defaultdict(list)
    for answer in answers:
        grouped[answer.case.case_id].append(answer)
    return grouped


def _mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)


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
    for case_id, case_answers in _by_case(answers).items():
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
            "recall": _mean([s[k].recall for s in per_sample]),
            "precision": _mean([s[k].precision for s in per_sample]),
            "mrr": _mean([s[k].reciprocal_rank for s in per_sample]),
            "ndcg": _mean([s[k].ndcg for s in per_sample]),
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
    grouped = _by_case(answers)
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


def compare(
    project: Project,
    a: str,
    b: str,
    *,
    k: int = 5,
    seed: int = 0,
    n_boot: int = 2000,
    data: Dataset | None = None,
) -> dict:
    """Variant ``a`` (before) against ``b`` (after), cases paired by case_id: transitions and
    a paired bootstrap difference per metric, latency added, and the retrieval of both
    rankings fused by reciprocal rank fusion as a what-if row."""
    _check_ks([k])
    data = data or load(project)
    _variant_names(data, [a, b])
    answers_a, answers_b = data.answers_of(a), data.answers_of(b)
    values_a, values_b = _case_values(answers_a, k), _case_values(answers_b, k)
    metrics = {}
    for metric in COMPARE_METRICS:
        before, after = values_a[metric], values_b[metric]
        passes = _pass_rule(metric)
        transitions = paired_transitions(
            {c: passes(v) for c, v in before.items()}, {c: passes(v) for c, v in after.items()}
        )
        diff = paired_bootstrap_diff(before, after, n_boot=n_boot, seed=seed)
        paired = sorted(before.keys() & after.keys())
        metrics[metric] = {
            "pass_rule": PASS_RULES[metric],
            "transitions": {
                "fixed": list(transitions.fixed),
                "broken": list(transitions.broken),
                "unchanged_pass": list(transitions.unchanged_pass),
                "unchanged_fail": list(transitions.unchanged_fail),
                "only_a": list(transitions.only_before),
                "only_b": list(transitions.only_after),
            },
            "counts": {
                "paired": transitions.paired,
                "fixed": len(transitions.fixed),
                "broken": len(transitions.broken),
                "unchanged_pass": len(transitions.unchanged_pass),
                "unchanged_fail": len(transitions.unchanged_fail),
                "only_a": len(transitions.only_before),
                "only_b": len(transitions.only_after),
            },
            "mean_a": _mean([before[c] for c in paired]) if paired else None,
            "mean_b": _mean([after[c] for c in paired]) if paired else None,
            "diff": _diff(diff),
        }
    latency = paired_bootstrap_diff(
        values_a["latency"], values_b["latency"], n_boot=n_boot, seed=seed
    )
    settings_a, settings_b = data.variants[a].settings, data.variants[b].settings
    return {
        "a": a,
        "b": b,
        "k": k,
        "seed": seed,
        "settings": {"a": settings_a, "b": settings_b},
        "settings_changed": sorted(
            key
            for key in settings_a.keys() | settings_b.keys()
            if settings_a.get(key) != settings_b.get(key)
        ),
        "metrics": metrics,
        "latency_added_ms": _diff(latency),
        "fusion": _fusion(answers_a, answers_b, a, b, k),
    }


def _pass_rule(metric: str) -> Callable[[float], bool]:
    if metric == "unsupported":
        return lambda value: value == 0
    return lambda value: math.isclose(value, 1.0)


def _case_values(answers: list[AnswerData], k: int) -> dict[str, dict[str, float]]:
    """Per case, the mean over samples of each compared metric (cases where a metric is
    undefined are left out of that metric)."""
    retrieval, _, _ = per_case_retrieval(answers, k)
    grouped = _by_case(answers)

    def mean_of(get: Callable[[AnswerData], float | None]) -> dict[str, float]:
        out = {}
        for case_id, group in grouped.items():
            values = [v for v in map(get, group) if v is not None]
            if values:
                out[case_id] = _mean(values)
        return out

    return {
        "recall": {c: s["recall"] for c, s in retrieval.items()},
        "reciprocal_rank": {c: s["mrr"] for c, s in retrieval.items()},
        "ndcg": {c: s["ndcg"] for c, s in retrieval.items()},
        "faithfulness": mean_of(lambda a: a.faithfulness),
        "unsupported": mean_of(lambda a: None if a.unsupported is None else float(a.unsupported)),
        "abstention": mean_of(lambda a: float(a.abstained != a.case.answerable)),
        "latency": mean_of(lambda a: a.elapsed_ms),
    }


def _diff(diff) -> dict:
    return {
        "n": diff.n,
        "unpaired": diff.unpaired,
        "mean_diff": diff.mean_diff,
        "ci95": list(diff.ci95) if diff.ci95 is not None else None,
        "n_boot": diff.n_boot,
        "seed": diff.seed,
    }


def _fusion(answers_a, answers_b, a: str, b: str, k: int) -> dict:
    """Retrieval at k (full ranking) of a, of b, and of their rankings fused per case and per
    sample number both have; cases where only one variant recorded a ranking are left out of
    the fused row."""
    fused: list[AnswerData] = []
    by_a = {(x.case.case_id, x.sample): x for x in answers_a if x.ranking}
    for other in answers_b:
        mine = by_a.get((other.case.case_id, other.sample))
        if mine is None or not other.ranking:
            continue
        ranking = reciprocal_rank_fusion([mine.ranking, other.ranking])
        fused.append(
            AnswerData(
                pk=0,
                answer_id=f"{mine.answer_id}+{other.answer_id}",
                case=mine.case,
                variant="fuse",
                sample=mine.sample,
                abstained=False,
                elapsed_ms=None,
                request_cost=None,
                ranking=ranking,
            )
        )
    rows = {}
    for name, answers in ((a, answers_a), (b, answers_b), (f"fuse({a}, {b})", fused)):
        scores, not_eligible, no_ranking = per_case_retrieval(answers, k)
        row: dict[str, Any] = {
            metric: mean_over_eligible(s[metric] for s in scores.values()).mean
            for metric in RETRIEVAL_METRICS
        }
        row.update(eligible=len(scores), not_eligible=not_eligible, no_ranking=no_ranking)
        rows[name] = row
    return {"k": k, "method": "reciprocal rank fusion, offset 60", "rows": rows}


# ---------------------------------------------------------------------------------------------
# Choosing a variant against limits set in advance
# ---------------------------------------------------------------------------------------------


def variant_limits(
    report: dict,
    *,
    latency_budget_ms: float | None = None,
    unsupported_limit: float | None = None,
) -> list[dict]:
    """Per variant, whether its mean latency is within the budget and its share of unsupported
    answers (slice all, decided answers) within the limit. A limit not set is not checked
    (None); a variant without the data to check is marked None (unknown), never as meeting."""
    rows = []
    for name, variant in report["variants"].items():
        generation = variant["generation"]["all"]
        latency = generation["latency"]
        unsupported = generation["unsupported_answers"]
        meets_latency = _within(latency["mean"], latency_budget_ms)
        meets_unsupported = _within(unsupported["rate"], unsupported_limit)
        checks = [
            m
            for m, limit in (
                (meets_latency, latency_budget_ms),
                (meets_unsupported, unsupported_limit),
            )
            if limit is not None
        ]
        if not checks:
            meets = None
        elif all(checks):
            meets = True
        elif any(check is False for check in checks):
            meets = False
        else:
            meets = None
        rows.append(
            {
                "variant": name,
                "latency_mean_ms": latency["mean"],
                "latency_n": latency["n"],
                "unsupported_rate": unsupported["rate"],
                "unsupported": unsupported["unsupported"],
                "unsupported_n": unsupported["n"],
                "meets_latency": meets_latency,
                "meets_unsupported": meets_unsupported,
                "meets_both": meets,
            }
        )
    return rows


def _within(value: float | None, limit: float | None) -> bool | None:
    if limit is None or value is None:
        return None
    return value <= limit


# ---------------------------------------------------------------------------------------------
# Flat tables: the CSV downloads, the command's text output and the page's tables
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    kind: str = "text"  # text, int, rate, float, ms, bool, json, ci, ids, answer_id(s)
    shown: str = "both"  # "csv": the download only; "people": the page and the command only

    @property
    def in_csv(self) -> bool:
        return self.shown != "people"

    @property
    def for_people(self) -> bool:
        return self.shown != "csv"


@dataclass
class Table:
    """Rows are dicts keyed by column key; ``group_by`` names a column whose value splits the
    table for people (one block per slice), while the CSV keeps it as a column."""

    name: str
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    group_by: str | None = None

    def csv_rows(self) -> Iterable[list[Any]]:
        columns = [c for c in self.columns if c.in_csv]
        yield [c.key for c in columns]
        for row in self.rows:
            yield [csv_value(row.get(c.key)) for c in columns]

    def groups(self) -> list[tuple[str | None, list[Column], list[list[Any]]]]:
        """(group value, columns, rows as value lists) for people."""
        columns = [c for c in self.columns if c.for_people and c.key != self.group_by]
        grouped: dict[str | None, list[list[Any]]] = {}
        for row in self.rows:
            key = row[self.group_by] if self.group_by else None
            grouped.setdefault(key, []).append([row.get(c.key) for c in columns])
        return [(key, columns, rows) for key, rows in grouped.items()] or [(None, columns, [])]


def _c(spec: str) -> list[Column]:
    """Columns from 'key:kind:Label' lines; a trailing '|csv' or '|people' limits where the
    column appears."""
    columns = []
    for line in spec.strip().splitlines():
        line, _, shown = line.strip().partition("|")
        key, kind, label = line.split(":", 2)
        columns.append(Column(key, label, kind, shown or "both"))
    return columns


RETRIEVAL_COLUMNS = """
    recall:rate:Recall@k
    precision:rate:Precision@k
    mrr:rate:MRR@k
    ndcg:rate:nDCG@k
    eligible:int:Eligible (n)
    not_eligible:int:Not eligible
    no_ranking:int:No ranking
"""


def report_tables(report: dict) -> dict[str, Table]:
    """Every table of the report, flat, from ``evaluate``'s result."""
    variants = report["variants"]
    per_slice = [(s, name, v) for s in SLICES for name, v in variants.items()]
    binary = report["label_schema"]["support"] == "binary"
    tables: dict[str, Table] = {}

    tables["retrieval"] = Table(
        "retrieval",
        "Retrieval (means over eligible cases)",
        _c("slice:text:Slice\nvariant:text:Variant\nranking:text:Ranking\nk:int:k")
        + _c(RETRIEVAL_COLUMNS),
        [
            {"slice": s, "variant": name, "ranking": ranking.replace("_", "-"), "k": int(k), **r}
            for s, name, v in per_slice
            if v["retrieval"] is not None
            for ranking in RANKINGS
            for k, r in v["retrieval"][s][ranking].items()
        ],
        group_by="slice",
    )

    rows = []
    for s, name, v in per_slice:
        g = v["generation"][s]
        f, p, c = g["faithfulness"], g.get("citation_precision"), g.get("citation_coverage")
        r, u, var = g.get("relevance"), g["unsupported_answers"], g["generation_variance"]
        common = {"slice": s, "variant": name}
        if binary:  # supported or unsupported: there is no subtype to decide
            subtypes = [f"unsupported {f['unsupported']}"]
        else:
            subtypes = [f"contradicted {f['contradicted']}", f"insufficient {f['insufficient']}"]
            if f["unsupported"] or not (f["contradicted"] or f["insufficient"]):
                subtypes.append(f"unsupported, subtype undecided {f['unsupported']}")
        rows.append(
            {
                **common,
                "metric": "faithfulness",
                "value": f["rate"],
                "count": f["supported"],
                "n": f["n"],
                "pending": f["pending"],
                "unlabelled": f["unlabelled"],
                "detail": ", ".join(subtypes),
            }
        )
        optional = [
            {
                **common,
                "metric": "citation precision",
                "value": p["rate"],
                "count": p["supports"],
                "n": p["links"],
                "pending": p["pending"],
                "detail": f"does not support {p['does_not_support']}, not found {p['not_found']}",
            }
            if p is not None
            else None,
            {
                **common,
                "metric": "citation coverage",
                "value": c["rate"],
                "count": c["covered"],
                "n": c["requiring_evidence"],
                "pending": c["pending"],
                "detail": f"not requiring evidence {c['not_requiring_evidence']}",
            }
            if c is not None
            else None,
            {
                **common,
                "metric": "relevance (mean 0-2)",
                "value": r["mean"],
                "n": r["n"],
                "pending": r["pending"],
                "unlabelled": g["unlabelled"],
                "detail": " · ".join(f"{k}: {n}" for k, n in r["counts"].items()),
            }
            if r is not None
            else None,
        ]
        rows += [row for row in optional if row is not None]
        rows += [
            {
                **common,
                "metric": "unsupported answers",
                "value": u["rate"],
                "count": u["unsupported"],
                "n": u["n"],
                "pending": u["pending"],
                "unlabelled": u["unlabelled"],
                "detail": "answers with a claim decided unsupported",
            },
        ]
        if var is not None:
            rows.append(
                {
                    **common,
                    "metric": "generation variance",
                    "value": var["rate"],
                    "count": var["differing"],
                    "n": var["repeated"],
                    "detail": f"cases whose samples differ; single-sample cases "
                    f"{var['single_sample']}",
                }
            )
    tables["generation"] = Table(
        "generation",
        "Generation (gold labels: agreed or adjudicated only)",
        _c("""
            slice:text:Slice
            variant:text:Variant
            metric:text:Metric
            value:rate:Value
            count:int:Count
            n:int:n
            pending:int:Pending
            unlabelled:int:Unlabelled
            detail:text:Detail
        """),
        rows,
        group_by="slice",
    )

    tables["abstention"] = Table(
        "abstention",
        "Abstention",
        _c("""
            slice:text:Slice
            variant:text:Variant
            unanswerable:int:Unanswerable n
            abstained:int:Abstained
            abstention_rate:rate:share
            unsupported:int:Unsupported
            unsupported_rate:rate:share
            answered_supported:int:Answered ok
            pending:int:Pending
            answerable:int:Answerable n
            false_abstentions:int:False abst.
            false_abstention_rate:rate:share
            gold_appropriate:int:Gold appropriate
            gold_unnecessary:int:Gold unnecessary
        """),
        [
            {
                "slice": s,
                "variant": name,
                **{k: val for k, val in ab.items() if k != "gold"},
                "gold_appropriate": ab["gold"]["appropriate"] if "gold" in ab else None,
                "gold_unnecessary": ab["gold"]["unnecessary"] if "gold" in ab else None,
            }
            for s, name, v in per_slice
            for ab in [v["generation"][s]["abstention"]]
        ],
        group_by="slice",
    )

    tables["failure_labels"] = Table(
        "failure_labels",
        "Failure labels (answers carrying each label)",
        _c("slice:text:Slice\nvariant:text:Variant\nanswers:int:Answers (n)")
        + [Column(label, label, "int") for label in FAILURE_LABELS]
        + [Column("pending", "Pending", "int")],
        [
            {"slice": s, "variant": name, **fl["counts"], **fl}
            for s, name, v in per_slice
            if "failure_labels" in v["generation"][s]
            for fl in [v["generation"][s]["failure_labels"]]
        ],
        group_by="slice",
    )

    tables["stages"] = Table(
        "stages",
        "Stage diagnosis (answers of answerable cases)",
        _c("""
            slice:text:Slice
            variant:text:Variant
            stage:text:Stage
            answers:int:Answers
            n:int:of n
            cases:int:Cases
            case_ids:ids:Case ids
            answer_ids:answer_ids:Answer ids
        """),
        [
            {"slice": s, "variant": name, "stage": stage, "n": block["answers"], **row}
            for s in STAGE_SLICES
            for name, v in variants.items()
            if v["stages"] is not None
            for block in [v["stages"][s]]
            for stage, row in block["rows"].items()
        ],
        group_by="slice",
    )

    tables["diagnosis"] = Table(
        "diagnosis",
        "Diagnosis per answer",
        _c("""
            variant:text:Variant
            answer_id:answer_id:Answer
            case_id:text:Case
            sample:int:Sample
            stage:text:Stage
            adversarial:bool:Adversarial
            split:text:Split
        """),
        [{"variant": name, **d} for name, v in variants.items() for d in v["diagnosis"]],
    )

    tables["latency"] = Table(
        "latency",
        f"Latency and cost (p95: {P95_METHOD})",
        _c("""
            slice:text:Slice
            variant:text:Variant
            n:int:n
            missing:int:Missing
            mean:ms:Mean (ms)
            p95:ms:p95 (ms)
            cost_n:int:Cost n
            cost_total:float:Cost total
            cost_mean:float:Cost mean
        """),
        [
            {
                "slice": s,
                "variant": name,
                **g["latency"],
                "cost_n": g["cost"]["n"],
                "cost_total": g["cost"]["total"],
                "cost_mean": g["cost"]["mean"],
            }
            for s, name, v in per_slice
            for g in [v["generation"][s]]
        ],
        group_by="slice",
    )
    return tables


def limits_table(report: dict, limits: list[dict]) -> Table:
    """The variants with their settings and whether they meet the limits the lead set."""
    variants = report["variants"]
    return Table(
        "variants",
        "Variants, their settings and the limits",
        _c("""
            variant:text:Variant
            model:text:Model
            settings:json:Settings
            answers:int:Answers
            latency_mean_ms:ms:Mean ms
            latency_n:int:n
            unsupported_rate:rate:Unsupported
            unsupported:int:count
            unsupported_n:int:of n
            meets_latency:bool:Budget
            meets_unsupported:bool:Limit
            meets_both:bool:Meets
        """),
        [
            {
                **row,
                "model": variants[row["variant"]]["model"],
                "settings": variants[row["variant"]]["settings"],
                "answers": variants[row["variant"]]["answers"],
            }
            for row in limits
        ],
    )


def comparison_tables(comparison: dict) -> dict[str, Table]:
    """The paired comparison, its case-by-case transitions and the fusion what-if."""
    a, b, k = comparison["a"], comparison["b"], comparison["k"]
    rows, transitions = [], []
    for metric, m in comparison["metrics"].items():
        ci = m["diff"]["ci95"] or [None, None]
        rows.append(
            {
                "metric": metric,
                "pass_rule": m["pass_rule"],
                **m["counts"],
                "mean_a": m["mean_a"],
                "mean_b": m["mean_b"],
                "mean_diff": m["diff"]["mean_diff"],
                "ci95": m["diff"]["ci95"],
                "ci_low": ci[0],
                "ci_high": ci[1],
            }
        )
        transitions += [
            {"metric": metric, "transition": kind, "cases": len(ids), "case_ids": ids}
            for kind, ids in m["transitions"].items()
        ]
    latency = comparison["latency_added_ms"]
    ci = latency["ci95"] or [None, None]
    rows.append(
        {
            "metric": "latency_ms",
            "pass_rule": "latency added: mean paired difference (b − a), in ms",
            "paired": latency["n"],
            "mean_diff": latency["mean_diff"],
            "ci95": latency["ci95"],
            "ci_low": ci[0],
            "ci_high": ci[1],
        }
    )
    return {
        "comparison": Table(
            "comparison",
            f"a = {a} → b = {b}, cases paired by case id (k = {k}; 95% bootstrap interval, "
            f"seed {comparison['seed']})",
            _c("""
                metric:text:Metric
                pass_rule:text:Pass rule|csv
                paired:int:Paired n
                fixed:int:Fixed
                broken:int:Broken
                unchanged_pass:int:Same pass
                unchanged_fail:int:Same fail
                only_a:int:Only a
                only_b:int:Only b
                mean_a:rate:Mean a
                mean_b:rate:Mean b
                mean_diff:diff:b − a
                ci95:ci:95% CI|people
                ci_low:diff:CI low|csv
                ci_high:diff:CI high|csv
            """),
            rows,
        ),
        "fusion": Table(
            "fusion",
            f"What if: both rankings fused by reciprocal rank fusion (full ranking, k = {k})",
            _c("ranking:text:Ranking") + _c(RETRIEVAL_COLUMNS),
            [{"ranking": name, **r} for name, r in comparison["fusion"]["rows"].items()],
        ),
        "transitions": Table(
            "transitions",
            f"Transitions {a} → {b}, case by case",
            _c("""
                metric:text:Metric
                transition:text:Transition
                cases:int:Cases
                case_ids:ids:Case ids
            """),
            transitions,
        ),
    }


def csv_value(value: Any) -> Any:
    """A cell for CSV: lists joined by ';', mappings as JSON, None empty, floats unrounded."""
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ";".join(map(str, value))
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return value


def text_value(value: Any, kind: str) -> str:
    """A cell for people: rates to 3 decimals, milliseconds whole, None as '—'."""
    if value is None:
        return "—"
    if kind == "bool":
        return "yes" if value else "no"
    if kind in ("ids", "answer_ids"):
        return ", ".join(value) if value else "—"
    if kind == "json":  # as the bundle wrote them: reranker=null, verifier=false
        shown = (
            f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
            for k, v in value.items()
        )
        return ", ".join(shown) if value else "—"
    if kind == "ci":
        return f"[{text_value(value[0], 'diff')}, {text_value(value[1], 'diff')}]"
    if kind == "rate":
        return f"{value:.3f}"
    if kind == "ms":
        return f"{value:.0f}"
    if kind == "diff":  # differences and intervals: three decimals like the rates beside them
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    if kind == "float":  # costs and the like: small values keep their digits
        return f"{value:.4g}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)
