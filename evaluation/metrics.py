"""Evaluation metrics as pure functions: retrieval, generation and paired comparison.

No Django import here: every function takes plain values (ids, grades, label strings, small
dataclasses) so reports, commands and tests share one definition. The definitions are the
ones fixed in SPEC.md ("Evaluation metrics"). Two conventions hold throughout:

- every result carries the counts beside its rate;
- a rate whose denominator is 0 is ``None`` (undefined), never 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

# "unsupported" is a claim decided unsupported without a subtype (a binary project, or two
# reviewers who agree it is unsupported while its subtype waits for a lead).
SUPPORT_LABELS = ("supported", "contradicted", "insufficient_evidence", "unsupported")
CITATION_VERDICTS = ("supports", "does_not_support", "citation_not_found")
RELEVANCE_VALUES = (0, 1, 2)
FAILURE_LABELS = ("missing_evidence", "unsupported_claim", "wrong_citation", "false_abstention")

# Stated in every retrieval report, because linear gain gives different nDCG values.
NDCG_GAIN = "exponential (2^grade - 1), discount log2(rank + 1)"
# How p95 is computed; reports quote it so two tools' p95s are comparable.
P95_METHOD = "numpy.percentile(q=95, method='linear')"


def _rate(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


# ---------------------------------------------------------------------------------------------
# Retrieval
# ---------------------------------------------------------------------------------------------


class NotEligible(ValueError):
    """The case has no passage with a positive grade: it is counted apart, never scored 0."""


@dataclass(frozen=True)
class RetrievalScores:
    recall: float
    precision: float
    reciprocal_rank: float
    ndcg: float


def retrieval_scores(
    ranked_ids: Sequence[str], grades: Mapping[str, int], k: int
) -> RetrievalScores:
    """Score one case's ranking against graded judgments at cutoff ``k``.

    relevant = ids with grade > 0; a ranked id without a judgment has grade 0.
    Recall@k = |top-k ∩ relevant| / |relevant|; Precision@k = |top-k ∩ relevant| / k (k, not
    the ranking's length, even when fewer than k passages were returned);
    reciprocal rank = 1 / rank of the first relevant id within the top k, else 0;
    nDCG@k = DCG / ideal DCG with DCG = Σ (2^grade − 1) / log2(rank + 1) over the top k and
    the ideal from all judged grades sorted descending, cut at k.

    Raises ``ValueError`` for k < 1, duplicate ids in the ranking or a negative grade, and
    ``NotEligible`` (a ``ValueError``) when no grade is positive.
    """
    return retrieval_scores_at(ranked_ids, grades, (k,))[k]


def retrieval_scores_at(
    ranked_ids: Sequence[str], grades: Mapping[str, int], ks: Iterable[int]
) -> dict[int, RetrievalScores]:
    """``retrieval_scores`` at every cutoff in ``ks``, checking the input once and walking the
    ranking once: a report scores each case at several k, and doing both once per k was most
    of an evaluation's time at 10,000 answers. Each cutoff's figures are those of its own top
    k; the DCG sums add in rank order."""
    if isinstance(ranked_ids, str):
        raise TypeError("ranked_ids must be a sequence of passage ids, not one string")
    ks = sorted(set(ks))
    if not ks or ks[0] < 1:
        raise ValueError(f"k must be at least 1, got {ks[0] if ks else 'no k'}")
    if len(set(ranked_ids)) != len(ranked_ids):
        duplicates = sorted(pid for pid, count in Counter(ranked_ids).items() if count > 1)
        raise ValueError(f"duplicate passage ids in the ranking: {', '.join(duplicates)}")
    negative = sorted(pid for pid, grade in grades.items() if grade < 0)
    if negative:
        raise ValueError(f"relevance grades must be non-negative: {', '.join(negative)}")
    relevant = {pid for pid, grade in grades.items() if grade > 0}
    if not relevant:
        raise NotEligible("no passage has a positive relevance grade; the case is not eligible")

    ideal_grades = sorted(grades.values(), reverse=True)
    scores: dict[int, RetrievalScores] = {}
    hits = 0
    reciprocal_rank = 0.0
    dcg = ideal = 0
    rank = 0
    longest = max(len(ranked_ids), len(ideal_grades))
    for k in ks:
        while rank < min(k, longest):
            rank += 1
            if rank <= len(ranked_ids):
                pid = ranked_ids[rank - 1]
                if pid in relevant:
                    hits += 1
                    if not reciprocal_rank:
                        reciprocal_rank = 1.0 / rank
                dcg += (2 ** grades.get(pid, 0) - 1) / math.log2(rank + 1)
            if rank <= len(ideal_grades):
                ideal += (2 ** ideal_grades[rank - 1] - 1) / math.log2(rank + 1)
        scores[k] = RetrievalScores(
            recall=hits / len(relevant),
            precision=hits / k,
            reciprocal_rank=reciprocal_rank,
            ndcg=dcg / ideal,
        )
    return scores


@dataclass(frozen=True)
class SuiteMean:
    """Mean over eligible cases, with how many were eligible and how many were not."""

    mean: float | None
    eligible: int
    not_eligible: int


def mean_over_eligible(scores: Iterable[float | None]) -> SuiteMean:
    """Mean of the scores that are not ``None``; ``None`` marks a non-eligible case."""
    values = list(scores)
    eligible = [score for score in values if score is not None]
    return SuiteMean(
        mean=math.fsum(eligible) / len(eligible) if eligible else None,
        eligible=len(eligible),
        not_eligible=len(values) - len(eligible),
    )


@dataclass(frozen=True)
class SuiteRetrievalScores:
    """Each retrieval metric averaged over eligible cases (None when no case is eligible)."""

    k: int
    recall: float | None
    precision: float | None
    reciprocal_rank: float | None
    ndcg: float | None
    eligible: int
    not_eligible: int


def suite_retrieval_scores(
    cases: Iterable[tuple[Sequence[str], Mapping[str, int]]], k: int
) -> SuiteRetrievalScores:
    """Average ``retrieval_scores`` over ``(ranked_ids, grades)`` pairs; non-eligible cases are
    counted apart and every other ``ValueError`` propagates."""
    scored: list[RetrievalScores] = []
    not_eligible = 0
    for ranked_ids, grades in cases:
        try:
            scored.append(retrieval_scores(ranked_ids, grades, k))
        except NotEligible:
            not_eligible += 1

    def mean(name: str) -> float | None:
        return math.fsum(getattr(s, name) for s in scored) / len(scored) if scored else None

    return SuiteRetrievalScores(
        k=k,
        recall=mean("recall"),
        precision=mean("precision"),
        reciprocal_rank=mean("reciprocal_rank"),
        ndcg=mean("ndcg"),
        eligible=len(scored),
        not_eligible=not_eligible,
    )


def reciprocal_rank_fusion_scores(
    rankings: Iterable[Sequence[str]], offset: float = 60
) -> list[tuple[str, float]]:
    """Fuse rankings: each id gains 1 / (offset + rank) from every list it appears in.

    Ranks start at 1; an id repeated within one list votes once, at its first rank. Returns
    ``(id, score)`` pairs by descending score, ties broken by id ascending.
    """
    if offset < 0:
        raise ValueError(f"offset must be non-negative, got {offset}")
    scores: dict[str, float] = {}
    for ranking in rankings:
        if isinstance(ranking, str):
            raise TypeError("each ranking must be a sequence of ids, not one string")
        for rank, passage_id in enumerate(dict.fromkeys(ranking), start=1):
            scores[passage_id] = scores.get(passage_id, 0.0) + 1.0 / (offset + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def reciprocal_rank_fusion(rankings: Iterable[Sequence[str]], offset: float = 60) -> list[str]:
    """The fused ranking of ``reciprocal_rank_fusion_scores``, ids only."""
    return [passage_id for passage_id, _ in reciprocal_rank_fusion_scores(rankings, offset)]


# ---------------------------------------------------------------------------------------------
# Generation (from gold labels)
# ---------------------------------------------------------------------------------------------


def _check_vocabulary(values: Iterable[Hashable], allowed: Sequence[Hashable], what: str) -> None:
    unknown = sorted({repr(v) for v in values if v not in allowed})
    if unknown:
        raise ValueError(f"unknown {what}: {', '.join(unknown)}; expected one of {allowed}")


@dataclass(frozen=True)
class Faithfulness:
    """rate = supported / n; contradicted, insufficient evidence and unsupported claims whose
    subtype is not decided are kept apart."""

    n: int
    supported: int
    contradicted: int
    insufficient: int
    rate: float | None
    unsupported: int = 0


def claim_faithfulness(supports: Iterable[str]) -> Faithfulness:
    """Claim faithfulness = supported claims / claims, from each claim's gold support label."""
    counts = Counter(supports)
    _check_vocabulary(counts, SUPPORT_LABELS, "support label")
    n = sum(counts.values())
    return Faithfulness(
        n=n,
        supported=counts["supported"],
        contradicted=counts["contradicted"],
        insufficient=counts["insufficient_evidence"],
        rate=_rate(counts["supported"], n),
        unsupported=counts["unsupported"],
    )


@dataclass(frozen=True)
class CitationPrecision:
    """rate = links judged ``supports`` / all links; not-found links count as not supporting."""

    links: int
    supports: int
    does_not_support: int
    not_found: int
    rate: float | None


def citation_precision(verdicts: Iterable[str]) -> CitationPrecision:
    """Citation precision over claim–citation links, one verdict per link."""
    counts = Counter(verdicts)
    _check_vocabulary(counts, CITATION_VERDICTS, "citation verdict")
    links = sum(counts.values())
    return CitationPrecision(
        links=links,
        supports=counts["supports"],
        does_not_support=counts["does_not_support"],
        not_found=counts["citation_not_found"],
        rate=_rate(counts["supports"], links),
    )


@dataclass(frozen=True)
class ClaimCitations:
    """One claim's gold ``requires_evidence`` flag and the verdicts of the passages it cites."""

    requires_evidence: bool
    verdicts: Sequence[str] = ()


@dataclass(frozen=True)
class CitationCoverage:
    """rate = covered / requiring_evidence; claims not requiring evidence are counted apart."""

    requiring_evidence: int
    covered: int
    not_requiring_evidence: int
    rate: float | None


def citation_coverage(claims: Iterable[ClaimCitations]) -> CitationCoverage:
    """Claims that require evidence and have ≥ 1 ``supports`` citation / claims requiring
    evidence."""
    requiring = covered = not_requiring = 0
    for claim in claims:
        _check_vocabulary(claim.verdicts, CITATION_VERDICTS, "citation verdict")
        if not claim.requires_evidence:
            not_requiring += 1
            continue
        requiring += 1
        covered += "supports" in claim.verdicts
    return CitationCoverage(
        requiring_evidence=requiring,
        covered=covered,
        not_requiring_evidence=not_requiring,
        rate=_rate(covered, requiring),
    )


@dataclass(frozen=True)
class RelevanceDistribution:
    """Mean relevance (0–2) and how many answers got each value; ``counts`` has keys 0, 1, 2."""

    n: int
    mean: float | None
    counts: Mapping[int, int]


def relevance_distribution(values: Iterable[int]) -> RelevanceDistribution:
    """Mean and distribution of answer relevance (0 off-topic, 1 partial, 2 direct)."""
    counts = Counter(values)
    _check_vocabulary(counts, RELEVANCE_VALUES, "relevance value")
    n = sum(counts.values())
    total = sum(value * count for value, count in counts.items())
    return RelevanceDistribution(
        n=n,
        mean=total / n if n else None,
        counts={value: counts[value] for value in RELEVANCE_VALUES},
    )


@dataclass(frozen=True)
class AbstentionRow:
    """One answer: the case's ``answerable`` flag, whether the answer declined, and whether it
    makes at least one claim whose gold label is not ``supported``."""

    answerable: bool
    abstained: bool
    unsupported: bool


@dataclass(frozen=True)
class AbstentionSummary:
    """Unanswerable cases: ``abstained`` (declined, no unsupported claim), ``unsupported`` (at
    least one unsupported claim, even inside a refusal), ``other`` (answered, all supported).
    Answerable cases: ``false_abstentions`` (declined although the corpus has the answer)."""

    unanswerable: int
    abstained: int
    unsupported: int
    other: int
    abstention_rate: float | None
    unsupported_rate: float | None
    answerable: int
    false_abstentions: int
    false_abstention_rate: float | None


def abstention_summary(rows: Iterable[AbstentionRow]) -> AbstentionSummary:
    """Abstention behaviour split by the case's own ``answerable`` label."""
    unanswerable = abstained = unsupported = other = 0
    answerable = false_abstentions = 0
    for row in rows:
        if row.answerable:
            answerable += 1
            false_abstentions += row.abstained
        else:
            unanswerable += 1
            # A refusal that still asserts an unsupported fact misleads like any fabrication,
            # so it is counted as unsupported rather than as a clean abstention.
            if row.unsupported:
                unsupported += 1
            elif row.abstained:
                abstained += 1
            else:
                other += 1
    return AbstentionSummary(
        unanswerable=unanswerable,
        abstained=abstained,
        unsupported=unsupported,
        other=other,
        abstention_rate=_rate(abstained, unanswerable),
        unsupported_rate=_rate(unsupported, unanswerable),
        answerable=answerable,
        false_abstentions=false_abstentions,
        false_abstention_rate=_rate(false_abstentions, answerable),
    )


@dataclass(frozen=True)
class FailureLabelCounts:
    """How many answers carry each failure label (every label present, zero included)."""

    answers: int
    counts: Mapping[str, int]


def failure_label_counts(labels_per_answer: Iterable[Iterable[str]]) -> FailureLabelCounts:
    """Count answers per failure label; a label repeated on one answer counts once."""
    counts: Counter[str] = Counter()
    answers = 0
    for labels in labels_per_answer:
        answers += 1
        counts.update(set(labels))
    _check_vocabulary(counts, FAILURE_LABELS, "failure label")
    return FailureLabelCounts(
        answers=answers, counts={label: counts[label] for label in FAILURE_LABELS}
    )


@dataclass(frozen=True)
class LatencySummary:
    """Latency of answers with a recorded ``elapsed_ms``; ``missing`` counts those without."""

    n: int
    missing: int
    mean: float | None
    p95: float | None


def latency_summary(elapsed_ms: Iterable[float | None]) -> LatencySummary:
    """Mean and p95 of ``elapsed_ms``; p95 is ``numpy.percentile(values, 95)`` with the default
    'linear' method (interpolating between the two nearest order statistics)."""
    # late import: heavy library (memory) -- pages that read reports never load numpy
    import numpy as np

    values, missing = _present_values(elapsed_ms, "elapsed_ms")
    return LatencySummary(
        n=len(values),
        missing=missing,
        mean=math.fsum(values) / len(values) if values else None,
        p95=float(np.percentile(values, 95, method="linear")) if values else None,
    )


@dataclass(frozen=True)
class CostSummary:
    """Total and mean ``request_cost`` of answers that recorded one."""

    n: int
    missing: int
    total: float | None
    mean: float | None


def cost_summary(costs: Iterable[float | None]) -> CostSummary:
    """Total and mean of ``request_cost``; answers without a cost are counted as missing."""
    values, missing = _present_values(costs, "request_cost")
    total = math.fsum(values) if values else None
    return CostSummary(
        n=len(values),
        missing=missing,
        total=total,
        mean=total / len(values) if total is not None else None,
    )


def _present_values(values: Iterable[float | None], what: str) -> tuple[list[float], int]:
    present: list[float] = []
    missing = 0
    for value in values:
        if value is None:
            missing += 1
        elif not math.isfinite(value) or value < 0:
            raise ValueError(f"{what} must be a finite non-negative number, got {value!r}")
        else:
            present.append(float(value))
    return present, missing


def per_case_mean(values_by_case: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Average each case's repeated samples, so a case weighs the same however many samples it
    has; cases without a sample are left out."""
    return {
        case_id: math.fsum(values) / len(values)
        for case_id, values in values_by_case.items()
        if len(values)
    }


@dataclass(frozen=True)
class GenerationVariance:
    """rate = cases whose samples disagree / cases with at least two samples."""

    repeated: int
    differing: int
    single_sample: int
    rate: float | None
    differing_case_ids: tuple[str, ...]


def generation_variance(outcomes_by_case: Mapping[str, Sequence[Hashable]]) -> GenerationVariance:
    """For one variant: how often a case's outcome (e.g. "has an unsupported claim", or a
    label) differs between its samples. Cases with one sample cannot vary; counted apart."""
    repeated = single = 0
    differing: list[str] = []
    for case_id, outcomes in outcomes_by_case.items():
        if len(outcomes) < 2:
            single += 1
            continue
        repeated += 1
        if len(set(outcomes)) > 1:
            differing.append(case_id)
    return GenerationVariance(
        repeated=repeated,
        differing=len(differing),
        single_sample=single,
        rate=_rate(len(differing), repeated),
        differing_case_ids=tuple(sorted(differing)),
    )


# ---------------------------------------------------------------------------------------------
# Paired comparison of two variants (cases paired by case_id)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Transitions:
    """Pass/fail transitions over the cases present in both runs, ids sorted; cases present in
    only one run are listed apart and never paired."""

    fixed: tuple[str, ...]
    broken: tuple[str, ...]
    unchanged_pass: tuple[str, ...]
    unchanged_fail: tuple[str, ...]
    only_before: tuple[str, ...]
    only_after: tuple[str, ...]

    @property
    def paired(self) -> int:
        return (
            len(self.fixed) + len(self.broken) + len(self.unchanged_pass) + len(self.unchanged_fail)
        )

    @property
    def counts(self) -> dict[str, int]:
        return {
            "paired": self.paired,
            "fixed": len(self.fixed),
            "broken": len(self.broken),
            "unchanged_pass": len(self.unchanged_pass),
            "unchanged_fail": len(self.unchanged_fail),
            "only_before": len(self.only_before),
            "only_after": len(self.only_after),
        }


def paired_transitions(before: Mapping[str, bool], after: Mapping[str, bool]) -> Transitions:
    """fixed = fail → pass, broken = pass → fail, unchanged_pass / unchanged_fail otherwise."""
    buckets: dict[tuple[bool, bool], list[str]] = {
        (False, True): [],
        (True, False): [],
        (True, True): [],
        (False, False): [],
    }
    for case_id in sorted(before.keys() & after.keys()):
        buckets[(bool(before[case_id]), bool(after[case_id]))].append(case_id)
    return Transitions(
        fixed=tuple(buckets[(False, True)]),
        broken=tuple(buckets[(True, False)]),
        unchanged_pass=tuple(buckets[(True, True)]),
        unchanged_fail=tuple(buckets[(False, False)]),
        only_before=tuple(sorted(before.keys() - after.keys())),
        only_after=tuple(sorted(after.keys() - before.keys())),
    )


@dataclass(frozen=True)
class BootstrapDiff:
    """Mean of (after − before) over paired cases with a percentile bootstrap interval."""

    n: int
    unpaired: int
    mean_diff: float | None
    ci95: tuple[float, float] | None
    n_boot: int
    seed: int


# Entries of the bootstrap's resampling matrix held at once (8 bytes each, twice).
BOOTSTRAP_BLOCK_ENTRIES = 1_000_000


def paired_bootstrap_diff(
    before: Mapping[str, float],
    after: Mapping[str, float],
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> BootstrapDiff:
    """Mean paired difference (after − before) over cases in both runs, and its 95% percentile
    interval: resample the paired cases with replacement ``n_boot`` times using
    ``numpy.random.default_rng(seed)``, take the 2.5th and 97.5th percentiles of the means.
    Cases are ordered by id first, so the result does not depend on mapping order."""
    # late import: heavy library (memory) -- pages that read reports never load numpy
    import numpy as np

    if n_boot < 1:
        raise ValueError(f"n_boot must be at least 1, got {n_boot}")
    case_ids = sorted(before.keys() & after.keys())
    unpaired = len(before.keys() ^ after.keys())
    diffs = np.array([after[c] - before[c] for c in case_ids], dtype=float)
    if not np.all(np.isfinite(diffs)):
        raise ValueError("paired scores must be finite numbers")
    if not case_ids:
        return BootstrapDiff(0, unpaired, None, None, n_boot, seed)
    rng = np.random.default_rng(seed)
    # The resampling matrix a block of replicates at a time, drawn in the same order: the
    # same numbers as one (n_boot × n) draw, without holding it. Whole, it was 160 MB for a
    # 5,000-case comparison, and grows with the cases.
    n = len(diffs)
    block = max(1, BOOTSTRAP_BLOCK_ENTRIES // n)
    resampled = np.empty(n_boot)
    for start in range(0, n_boot, block):
        size = min(block, n_boot - start)
        resampled[start : start + size] = diffs[rng.integers(0, n, size=(size, n))].mean(axis=1)
    low, high = np.percentile(resampled, [2.5, 97.5])
    return BootstrapDiff(
        n=len(case_ids),
        unpaired=unpaired,
        mean_diff=float(diffs.mean()),
        ci95=(float(low), float(high)),
        n_boot=n_boot,
        seed=seed,
    )
