"""Model judge versus gold: confusion, kappa, per-label scores, and corrected prevalence.

Pure functions, no Django import. Definitions follow SPEC.md "Model judges": for claim support
the positive class is **unsupported** (contradicted, insufficient_evidence, or a binary
'unsupported'); the share of unsupported claims among the target is corrected by Rogan–Gladen
and by prediction-powered inference (PPI) using the gold items the judge also labelled.

Both corrections assume the gold items and the target are random samples of one population.
``calibration_population`` chooses them so that they are: claims whose reviewers disagree are
the hard ones, not a random sample, so an answer with a pending dispute (or with a single
reviewer) belongs to neither side and is counted apart. An answer with gold from elsewhere
(one label per item, imported) is a gold item, never part of the target.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.metrics import confusion_matrix, precision_recall_fscore_support

from annotate.schema import support_binary
from evaluation.agreement import SUPPORT, Weighting, cohen_kappa
from evaluation.intervals import clip_share, share_dict

UNSUPPORTED = ("contradicted", "insufficient_evidence", "unsupported")
Z_95 = 1.96  # as written in SPEC.md, so reports can be checked by hand


# Rogan–Gladen is refused when the 95% interval of TPR + TNR − 1 (Youden's J) reaches below
# this: the correction divides by J, so a judge this close to chance turns the sampling noise of
# p_obs into any share at all (SPEC.md "Calibration, second step").
MIN_YOUDEN = 0.05


class CalibrationRefused(ValueError):
    """A corrected estimate cannot be computed honestly from these data; the message says why.
    ``details`` are the figures behind the refusal, reported beside the reason."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details


def unsupported_indicator(labels: Sequence[str]) -> np.ndarray:
    """Boolean array: True where a support label is unsupported (the positive class), on
    either scale. A label outside both scales is a ValueError naming it."""
    binary = [support_binary(label) for label in labels]
    unknown = sorted({repr(lab) for lab, b in zip(labels, binary, strict=True) if b is None})
    if unknown:
        raise ValueError(f"support labels outside the vocabulary: {', '.join(unknown)}")
    return np.fromiter((b == "unsupported" for b in binary), dtype=bool, count=len(binary))


def _as_bool(values: Any, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional")
    if arr.dtype != bool:
        if arr.size and not np.isin(arr, (0, 1)).all():
            raise ValueError(f"{name} must hold booleans or 0/1")
        arr = arr.astype(bool)
    return arr


def _none_if_nan(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


@dataclass(frozen=True)
class BinaryRates:
    """Judge rates for the unsupported class; a rate is None when its gold class is absent."""

    n: int
    positives: int  # gold unsupported
    negatives: int  # gold supported
    true_positives: int
    true_negatives: int
    tpr: float | None
    tnr: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "positives": self.positives,
            "negatives": self.negatives,
            "true_positives": self.true_positives,
            "true_negatives": self.true_negatives,
            "tpr": self.tpr,
            "tnr": self.tnr,
        }


def _rates(gold_pos: np.ndarray, judge_pos: np.ndarray) -> BinaryRates:
    positives = int(gold_pos.sum())
    negatives = int(gold_pos.size - positives)
    tp = int((gold_pos & judge_pos).sum())
    tn = int((~gold_pos & ~judge_pos).sum())
    return BinaryRates(
        n=int(gold_pos.size),
        positives=positives,
        negatives=negatives,
        true_positives=tp,
        true_negatives=tn,
        tpr=tp / positives if positives else None,
        tnr=tn / negatives if negatives else None,
    )


def binary_rates(gold: Sequence[str], judge: Sequence[str]) -> BinaryRates:
    """TPR = P(judge unsupported | gold unsupported), TNR = P(judge supported | gold supported).

    ``gold[i]`` and ``judge[i]`` are support labels of the same claim.
    """
    if len(gold) != len(judge):
        raise ValueError(f"gold and judge must be aligned: {len(gold)} != {len(judge)}")
    return _rates(unsupported_indicator(gold), unsupported_indicator(judge))


@dataclass(frozen=True)
class LabelScores:
    label: Hashable
    precision: float | None
    recall: float | None
    f1: float | None
    support: int


@dataclass(frozen=True)
class JudgeReport:
    n: int
    accuracy: float | None
    kappa: float | None
    kappa_undefined_reason: str | None
    labels: tuple[Hashable, ...]
    matrix: tuple[tuple[int, ...], ...]  # rows gold, columns judge
    per_label: tuple[LabelScores, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "accuracy": self.accuracy,
            "kappa": self.kappa,
            "kappa_undefined_reason": self.kappa_undefined_reason,
            "confusion": {
                "labels": list(self.labels),
                "matrix": [list(row) for row in self.matrix],
            },
            # A list, not a mapping: labels may be ints or bools, which JSON keys cannot be.
            "per_label": [
                {
                    "label": s.label,
                    "precision": s.precision,
                    "recall": s.recall,
                    "f1": s.f1,
                    "support": s.support,
                }
                for s in self.per_label
            ],
        }


def judge_report(
    gold: Sequence[Hashable],
    judge: Sequence[Hashable],
    labels: Sequence[Hashable] = SUPPORT,
    *,
    weights: Weighting = None,
) -> JudgeReport:
    """Gold (rows) versus judge (columns) over the full label list.

    Only scored verdicts belong here: malformed and timed-out ones are counted by the caller and
    never passed in. A precision whose label the judge never used, or a recall whose label is
    absent from gold, is undefined and reported as None (not 0).
    """
    if len(gold) != len(judge):
        raise ValueError(f"gold and judge must be aligned: {len(gold)} != {len(judge)}")
    labels = tuple(labels)
    k = len(labels)
    # Also validates both sides against the vocabulary before scikit-learn sees them.
    kappa, reason = cohen_kappa(gold, judge, labels=labels, weights=weights)
    n = len(gold)
    if n:
        conf = confusion_matrix(gold, judge, labels=list(labels))
        # zero_division=nan marks undefined ratios so they can become None; 0 would read as a
        # judge that is always wrong on that label.
        precision, recall, f1, support = precision_recall_fscore_support(
            gold, judge, labels=list(labels), zero_division=np.nan
        )
        per_label = tuple(
            LabelScores(
                label=labels[i],
                precision=_none_if_nan(precision[i]),
                recall=_none_if_nan(recall[i]),
                f1=_none_if_nan(f1[i]),
                support=int(support[i]),
            )
            for i in range(k)
        )
    else:
        conf = np.zeros((k, k), dtype=int)
        per_label = tuple(LabelScores(label, None, None, None, 0) for label in labels)
    return JudgeReport(
        n=n,
        accuracy=float(np.trace(conf)) / n if n else None,
        kappa=kappa,
        kappa_undefined_reason=reason,
        labels=labels,
        matrix=tuple(tuple(int(x) for x in row) for row in conf),
        per_label=per_label,
    )


def rogan_gladen_unclipped(p_obs: float, tpr: float | None, tnr: float | None) -> float:
    """θ = (p_obs + TNR − 1) / (TPR + TNR − 1), as the formula gives it: outside [0, 1] when
    p_obs lies outside the range [1 − TNR, TPR] a judge with these rates can produce.

    Refused when TPR + TNR ≤ 1: such a judge is no better than a coin, the correction divides by
    zero or flips sign, and any number it produced would be noise.
    """
    if tpr is None or tnr is None:
        raise CalibrationRefused("a gold class is missing, so TPR or TNR is unknown")
    for name, value in (("p_obs", p_obs), ("tpr", tpr), ("tnr", tnr)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {value}")
    if tpr + tnr <= 1.0:
        raise CalibrationRefused(
            f"TPR + TNR = {tpr + tnr:.3f} ≤ 1: the judge does not separate supported from "
            "unsupported claims better than chance"
        )
    return float((p_obs + tnr - 1.0) / (tpr + tnr - 1.0))


def rogan_gladen(p_obs: float, tpr: float | None, tnr: float | None) -> float:
    """The Rogan–Gladen estimate clipped to [0, 1] (a share cannot leave it); refused as
    ``rogan_gladen_unclipped`` is."""
    return float(np.clip(rogan_gladen_unclipped(p_obs, tpr, tnr), 0.0, 1.0))


@dataclass(frozen=True)
class RoganGladenInterval:
    estimate: float  # clipped to [0, 1]
    unclipped: float  # the formula's value; differs from estimate exactly when clipped
    ci95: tuple[float, float] | None  # percentiles of the replicates clipped to [0, 1]
    ci95_unclipped: tuple[float, float] | None  # the same percentiles of the formula's values
    p_obs: float
    tpr: float
    tnr: float
    youden: float  # TPR + TNR − 1
    youden_ci95: tuple[float, float]
    n: int
    target_n: int
    n_boot: int
    skipped: int  # replicates where a gold class vanished or TPR + TNR ≤ 1

    @property
    def clipped(self) -> bool:
        return self.unclipped != self.estimate

    @property
    def interval_clipped(self) -> bool:
        """Whether an end of the formula's bootstrap interval left [0, 1]."""
        return self.ci95_unclipped is not None and (
            self.ci95_unclipped[0] < 0.0 or self.ci95_unclipped[1] > 1.0
        )


def _percentiles(values: np.ndarray) -> tuple[float, float] | None:
    if not values.size:
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def rogan_gladen_interval(
    gold_pos: Any,
    judge_pos_on_gold: Any,
    target_judge_pos: Any,
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> RoganGladenInterval:
    """Rogan–Gladen estimate of the unsupported share of the target, with a 95% bootstrap CI.

    ``gold_pos[i]`` / ``judge_pos_on_gold[i]``: gold item i is unsupported per gold / per judge;
    ``target_judge_pos``: the judge's unsupported calls on the target (no gold).

    The percentile bootstrap resamples the n gold items (recomputing TPR and TNR) **and,
    independently, the N target items** (p_obs): both samples are random, and holding p_obs
    fixed would understate the interval by its binomial error, amplified by 1/(TPR + TNR − 1).
    Resampling n items with replacement is drawn exactly as a multinomial over the four
    (gold, judge) cells, and N items as a binomial, so the cost does not grow with n or N.
    Replicates where a gold class vanishes or TPR + TNR ≤ 1 are skipped and counted.

    The same resamples of the gold items give the 95% interval of Youden's J = TPR + TNR − 1
    (over the replicates that keep both gold classes). When it reaches below ``MIN_YOUDEN``
    the estimate is refused: the point J may look usable while the data cannot rule out a
    judge at chance, and dividing by a J near 0 turns any p_obs into 0 or 1.
    """
    gold_pos = _as_bool(gold_pos, "gold_pos")
    judge_pos = _as_bool(judge_pos_on_gold, "judge_pos_on_gold")
    target = _as_bool(target_judge_pos, "target_judge_pos")
    if gold_pos.size != judge_pos.size:
        raise ValueError("gold_pos and judge_pos_on_gold must be aligned")
    if n_boot < 1:
        raise ValueError("n_boot must be at least 1: the refusal rule reads the bootstrap")
    if target.size == 0:
        raise CalibrationRefused("no target claims (judge-labelled claims without gold)")
    rates = _rates(gold_pos, judge_pos)
    p_obs = float(target.mean())
    unclipped = rogan_gladen_unclipped(p_obs, rates.tpr, rates.tnr)
    n, big_n = int(gold_pos.size), int(target.size)
    youden = float(rates.tpr + rates.tnr - 1.0)

    rng = np.random.default_rng(seed)
    cells = np.array(
        [
            rates.true_positives,  # gold +, judge +
            rates.positives - rates.true_positives,  # gold +, judge −
            rates.negatives - rates.true_negatives,  # gold −, judge +
            rates.true_negatives,  # gold −, judge −
        ]
    )
    draws = rng.multinomial(n, cells / n, size=n_boot)
    p_star = rng.binomial(big_n, p_obs, size=n_boot) / big_n
    pos = draws[:, 0] + draws[:, 1]
    neg = draws[:, 2] + draws[:, 3]
    both_classes = (pos > 0) & (neg > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr = draws[:, 0] / pos
        tnr = draws[:, 3] / neg
        youden_star = tpr + tnr - 1.0
        theta_unclipped = (p_star + tnr - 1.0) / youden_star
        theta = np.clip(theta_unclipped, 0.0, 1.0)

    youden_ci95 = _percentiles(youden_star[both_classes])
    if youden_ci95 is None:
        raise CalibrationRefused(
            "no bootstrap resample of the gold items keeps both gold classes, so the "
            "interval of TPR + TNR − 1 is unknown",
            youden=youden,
        )
    if youden_ci95[0] < MIN_YOUDEN:
        raise CalibrationRefused(
            f"TPR + TNR − 1 = {youden:.3f}, and its 95% bootstrap interval "
            f"[{youden_ci95[0]:.3f}, {youden_ci95[1]:.3f}] reaches below {MIN_YOUDEN}: a judge "
            "that close to chance gives no usable correction",
            youden=youden,
            youden_ci95=list(youden_ci95),
        )
    valid = both_classes & (youden_star > 0)
    return RoganGladenInterval(
        estimate=float(np.clip(unclipped, 0.0, 1.0)),
        unclipped=unclipped,
        ci95=_percentiles(theta[valid]),
        ci95_unclipped=_percentiles(theta_unclipped[valid]),
        p_obs=p_obs,
        tpr=float(rates.tpr),
        tnr=float(rates.tnr),
        youden=youden,
        youden_ci95=youden_ci95,
        n=n,
        target_n=big_n,
        n_boot=n_boot,
        skipped=int(n_boot - valid.sum()),
    )


@dataclass(frozen=True)
class PPIEstimate:
    estimate: float
    ci95: tuple[float, float]
    target_n: int
    n: int
    var_target: float
    var_diff: float


def ppi_mean(judge_target: Any, judge_gold: Any, gold: Any) -> PPIEstimate:
    """Prediction-powered estimate of the unsupported share of the target.

    θ = mean(judge over the N target items) − mean(judge − gold over the n gold items); the
    second term removes the judge's bias as measured on gold. 95% interval
    θ ± 1.96·sqrt(var_target/N + var_diff/n) with sample variances (ddof=1), which is why at
    least two items are needed on each side. Neither θ nor the interval is clipped to [0, 1]:
    the estimator is unbiased as it stands, and a value outside the range is itself a signal.
    """
    target = _as_bool(judge_target, "judge_target").astype(float)
    judge_g = _as_bool(judge_gold, "judge_gold").astype(float)
    gold_g = _as_bool(gold, "gold").astype(float)
    if judge_g.size != gold_g.size:
        raise ValueError("judge_gold and gold must be aligned")
    if target.size < 2:
        raise CalibrationRefused(f"PPI needs at least 2 target claims, got {target.size}")
    if gold_g.size < 2:
        raise CalibrationRefused(f"PPI needs at least 2 gold claims, got {gold_g.size}")
    diff = judge_g - gold_g
    estimate = float(target.mean() - diff.mean())
    var_target = float(target.var(ddof=1))
    var_diff = float(diff.var(ddof=1))
    half = Z_95 * float(np.sqrt(var_target / target.size + var_diff / diff.size))
    return PPIEstimate(
        estimate=estimate,
        ci95=(estimate - half, estimate + half),
        target_n=int(target.size),
        n=int(diff.size),
        var_target=var_target,
        var_diff=var_diff,
    )


def corrected_estimates(
    gold_pos: Any,
    judge_pos_on_gold: Any,
    target_judge_pos: Any,
    *,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The ``corrected`` block of ``calibration --json``; a refused method says why instead.

    Every share is shown in [0, 1] and says when it was clipped there: Rogan–Gladen's
    ``clipped`` is True when its estimate or an end of its bootstrap interval left [0, 1]
    (``unclipped`` is the formula's value, ``unclipped_ci95`` the interval's own ends); classic
    PPI's interval is clipped as ``evaluation.intervals.clip_share`` does, its unclipped
    estimate and ends kept under ``unclipped``."""
    target = _as_bool(target_judge_pos, "target_judge_pos")
    result: dict[str, Any] = {
        "target_n": int(target.size),
        "p_obs": float(target.mean()) if target.size else None,
    }
    try:
        rg = rogan_gladen_interval(gold_pos, judge_pos_on_gold, target, n_boot=n_boot, seed=seed)
        result["rogan_gladen"] = {
            "estimate": rg.estimate,
            "ci95": list(rg.ci95) if rg.ci95 is not None else None,
            # A share the formula put outside [0, 1] is shown at the edge, and says so.
            "clipped": rg.clipped or rg.interval_clipped,
            "unclipped": rg.unclipped,
            "unclipped_ci95": list(rg.ci95_unclipped) if rg.ci95_unclipped is not None else None,
            "youden": rg.youden,
            "youden_ci95": list(rg.youden_ci95),
            "n_boot": rg.n_boot,
            "skipped": rg.skipped,
        }
    except CalibrationRefused as refusal:
        result["rogan_gladen"] = {"refused": str(refusal), **refusal.details}
    try:
        ppi = ppi_mean(target, judge_pos_on_gold, gold_pos)
        result["ppi"] = share_dict(clip_share(ppi.estimate, *ppi.ci95))
    except CalibrationRefused as refusal:
        result["ppi"] = {"refused": str(refusal), **refusal.details}
    return result


# --- Who is gold, who is target --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PopulationClaim:
    """What the population rule needs to know of one claim."""

    claim: Hashable
    answer: Hashable
    reviewers: int  # submitted label sets on the claim's answer
    decided: bool  # its gold support_binary is decided (agreed, adjudicated or imported)
    judged: bool  # the judge gave it a scored (ok) label
    imported: bool = False  # its answer has gold from elsewhere (annotate.gold.IMPORTED)


@dataclass
class Population:
    """The two random samples of one population that the corrections compare, and what was
    left out of both. ``excluded`` counts judged claims; ``disputes`` counts answers."""

    gold: list[Hashable] = field(default_factory=list)
    target: list[Hashable] = field(default_factory=list)
    excluded: dict[str, int] = field(
        default_factory=lambda: {"pending_dispute": 0, "single_reviewer": 0}
    )
    disputes: int = 0

    @property
    def provisional(self) -> bool:
        return self.disputes > 0

    @property
    def provisional_reason(self) -> str | None:
        if not self.disputes:
            return None
        plural = "s" if self.disputes != 1 else ""
        return (
            f"{self.disputes} dispute{plural} pending: the estimate may move once "
            f"{'they are' if plural else 'it is'} adjudicated"
        )


def calibration_population(claims: Iterable[PopulationClaim]) -> Population:
    """Sort claims into gold items and target (SPEC.md "Model judges").

    - **gold**: the claims of answers labelled by two reviewers, or with gold imported from
      elsewhere, whose support_binary is decided for every claim (all of them, judged or not:
      the caller scores the judged);
    - **target**: the claims the judge labelled in answers **no reviewer has labelled** and
      no imported gold covers;
    - **excluded**: the judged claims of answers with a pending dispute (two reviewers, some
      claim undecided) or with a single reviewer and no imported gold: not a random sample
      of either side.
    """
    by_answer: dict[Hashable, list[PopulationClaim]] = defaultdict(list)
    for claim in claims:
        by_answer[claim.answer].append(claim)
    population = Population()
    for answer_claims in by_answer.values():
        reviewers, imported = answer_claims[0].reviewers, answer_claims[0].imported
        judged = sum(c.judged for c in answer_claims)
        if reviewers == 0 and not imported:
            population.target.extend(c.claim for c in answer_claims if c.judged)
        elif reviewers == 1 and not imported:
            population.excluded["single_reviewer"] += judged
        elif all(c.decided for c in answer_claims):
            population.gold.extend(c.claim for c in answer_claims)
        else:
            population.excluded["pending_dispute"] += judged
            population.disputes += 1
    return population
