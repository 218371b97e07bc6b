"""Fewer labels, honest intervals: PPI++, strata, three-way shares and the judge gate.

Pure functions, no Django import. Definitions follow SPEC.md "Calibration, second step":

- **PPI++** (power-tuned prediction-powered inference, Angelopoulos, Duchi & Zrnic 2023) is the
  headline estimate of the unsupported share of the target. It is what ``ppi_py``'s
  ``ppi_mean_pointestimate`` / ``ppi_mean_ci`` return with ``lam=None`` and ``alpha=0.05``; the
  package computes it, this module only validates, clips and reports the tuned λ.
- **Strata**: PPI++ within each stratum, combined as Σ w_h θ_h with w_h = N_h / N.
- **Three-way**: the share of any one support label, as the mean of its indicator.
- **Judge gate**: a judge passes when the lower end of its kappa interval reaches a bound and,
  against a baseline judge, an exact McNemar test does not find it worse.

The design-based estimate of a calibration sample and the budget planner live in
``evaluation.sampling_design``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import binomtest, norm

from evaluation.agreement import SUPPORT
from evaluation.calibration import CalibrationRefused, _as_bool
from evaluation.intervals import ClippedShare, clip_share, share_dict

# The clipping lives in evaluation.intervals (evaluation.calibration clips classic PPI with it,
# and cannot import this module); evaluation.sampling_design imports it from here by this name.
_share_dict = share_dict

ALPHA = 0.05
# ppi_py's normal interval uses the exact quantile, not SPEC's rounded 1.96: the strata invert
# its half-widths with the same number, so a single stratum gives back its PPI++ interval.
Z_PPI = float(norm.ppf(1.0 - ALPHA / 2.0))
MIN_ITEMS = 2  # a sample variance needs two items on each side
GATE_LEVEL = 0.05


# --- PPI++ -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PPIPlusPlus:
    """PPI++ estimate of a share: θ̂ = λ·mean(Ŷ_target) + mean(Y − λ·Ŷ) over gold."""

    share: ClippedShare
    lam: float  # the power-tuning λ in [0, 1]: 0 is the gold-only mean, 1 classic PPI
    n: int  # gold items
    target_n: int

    @property
    def estimate(self) -> float:
        return self.share.estimate

    @property
    def ci95(self) -> tuple[float, float]:
        return self.share.ci95

    @property
    def ci95_unclipped(self) -> tuple[float, float]:
        return self.share.ci95_unclipped

    @property
    def clipped(self) -> bool:
        return self.share.clipped

    @property
    def standard_error(self) -> float:
        """ppi_py's standard error, recovered from its interval: half-width / z."""
        lo, hi = self.share.ci95_unclipped
        return (hi - lo) / (2.0 * Z_PPI)

    def as_dict(self) -> dict[str, Any]:
        """The ``corrected.ppi_plus_plus`` block: estimate, ci95, lambda (+ clipping)."""
        return {
            **_share_dict(self.share),
            "lambda": self.lam,
            "n": self.n,
            "target_n": self.target_n,
        }


def ppi_lambda(gold: np.ndarray, judge_gold: np.ndarray, judge_target: np.ndarray) -> float:
    """The power-tuning λ of PPI++ for a mean, in closed form, clipped to [0, 1]:

        λ = Cov(Y, Ŷ) / ((1 + n/N) · Var(Ŷ ∪ Ŷ_target))

    with the covariance over the n gold items divided by n and the variance over all n + N
    judge labels divided by n + N − 1, as ppi_py computes them. λ minimises the variance of
    λ·mean(Ŷ_target) + mean(Y − λŶ). A judge that gives every item one label carries no
    information and its λ is 0/0: any λ then yields the same estimate and interval, and 0 (the
    gold-only mean) says so honestly, where ppi_py would return rounding noise.
    """
    pooled = np.concatenate([judge_gold, judge_target])
    if np.ptp(pooled) == 0:
        return 0.0
    n, big_n = gold.size, judge_target.size
    cov = float(np.mean((gold - gold.mean()) * (judge_gold - judge_gold.mean())))
    var = float(pooled.var(ddof=1))
    return float(np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0))


def _ppi_inputs(gold: Any, judge_gold: Any, judge_target: Any) -> tuple[np.ndarray, ...]:
    y = _as_bool(gold, "gold").astype(float)
    yhat = _as_bool(judge_gold, "judge_gold").astype(float)
    yhat_target = _as_bool(judge_target, "judge_target").astype(float)
    if y.size != yhat.size:
        raise ValueError(f"gold and judge_gold must be aligned: {y.size} != {yhat.size}")
    if y.size < MIN_ITEMS:
        raise CalibrationRefused(f"PPI++ needs at least {MIN_ITEMS} gold claims, got {y.size}")
    if yhat_target.size < MIN_ITEMS:
        raise CalibrationRefused(
            f"PPI++ needs at least {MIN_ITEMS} target claims, got {yhat_target.size}"
        )
    return y, yhat, yhat_target


def ppi_plus_plus(*, gold: Any, judge_gold: Any, judge_target: Any) -> PPIPlusPlus:
    """PPI++ estimate and 95% interval of the share of positives in the target.

    ``gold[i]`` / ``judge_gold[i]``: gold item i is positive per gold / per judge (booleans or
    0/1); ``judge_target``: the judge's calls on the N target items. The numbers are ppi_py's
    ``ppi_mean_pointestimate`` and ``ppi_mean_ci`` with ``lam=None``, ``alpha=0.05``:
    θ̂ = λ·mean(Ŷ_target) + mean(Y − λŶ), interval θ̂ ± z·sqrt(λ²·σ²(Ŷ_target)/N +
    σ²(Y − λŶ)/n) with population variances and z = Φ⁻¹(0.975). Refused with fewer than two
    gold or two target items.
    """
    y, yhat, yhat_target = _ppi_inputs(gold, judge_gold, judge_target)
    # ppi_py loads numba and pandas (about 66 MB and 1.6 s), which a process that imports
    # this module for anything else should not pay for.
    # late import: heavy library (memory)
    from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

    lam = ppi_lambda(y, yhat, yhat_target)
    # For a constant judge ppi_py's own λ is rounding noise (see ppi_lambda); the estimate and
    # interval do not depend on it, so pass 0 and report 0. Otherwise let the package tune λ.
    lam_arg = 0.0 if np.ptp(np.concatenate([yhat, yhat_target])) == 0 else None
    estimate = ppi_mean_pointestimate(y, yhat, yhat_target, lam=lam_arg)
    low, high = ppi_mean_ci(y, yhat, yhat_target, alpha=ALPHA, lam=lam_arg)
    return PPIPlusPlus(
        share=clip_share(_scalar(estimate), _scalar(low), _scalar(high)),
        lam=lam,
        n=int(y.size),
        target_n=int(yhat_target.size),
    )


def _scalar(value: Any) -> float:
    """ppi_py returns one-element arrays for a one-dimensional mean."""
    return float(np.asarray(value, dtype=float).reshape(-1)[0])


# --- Strata -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StratumSample:
    """One stratum's gold (with the judge's calls on it) and the judge's calls on its target."""

    gold: Any
    judge_gold: Any
    judge_target: Any


@dataclass(frozen=True)
class StratumRow:
    name: str
    n: int
    target_n: int
    result: PPIPlusPlus | None
    refused: str | None

    def as_dict(self) -> dict[str, Any]:
        row: dict[str, Any] = {"name": self.name, "n": self.n, "target_n": self.target_n}
        if self.result is None:
            return {**row, "estimate": None, "ci95": None, "refused": self.refused}
        return {**row, **_share_dict(self.result.share), "lambda": self.result.lam}


@dataclass(frozen=True)
class StratifiedEstimate:
    strata: tuple[StratumRow, ...]
    share: ClippedShare | None
    variance: float | None
    refused: str | None

    def as_dict(self) -> dict[str, Any]:
        """``{"strata": [...], "stratified": {...}}`` as in ``calibration --by … --json``."""
        if self.share is None:
            stratified: dict[str, Any] = {"estimate": None, "ci95": None, "refused": self.refused}
        else:
            stratified = _share_dict(self.share)
        return {"strata": [row.as_dict() for row in self.strata], "stratified": stratified}


def _stratum_row(name: str, sample: StratumSample) -> StratumRow:
    y, yhat, yhat_target = (
        _as_bool(sample.gold, f"{name}: gold"),
        _as_bool(sample.judge_gold, f"{name}: judge_gold"),
        _as_bool(sample.judge_target, f"{name}: judge_target"),
    )
    try:
        result = ppi_plus_plus(gold=y, judge_gold=yhat, judge_target=yhat_target)
    except CalibrationRefused as refusal:
        return StratumRow(name, int(y.size), int(yhat_target.size), None, str(refusal))
    return StratumRow(name, result.n, result.target_n, result, None)


def stratified_ppi_plus_plus(strata: Mapping[str, StratumSample]) -> StratifiedEstimate:
    """Stratified PPI++: θ = Σ w_h θ_h, Var = Σ w_h² Var_h, w_h = N_h / N, 95% θ ± z·√Var.

    θ_h and Var_h are PPI++ within stratum h (Var_h = (half-width / z)² of its unclipped
    interval, z = Φ⁻¹(0.975) as ppi_py uses), N_h its target claims, N = Σ N_h. A stratum with
    fewer than two gold or two target claims is reported refused with the reason, and then so
    is the stratified estimate, naming the stratum — except a stratum without any target claim:
    its weight is 0, so the estimate of the target does not need it.
    """
    if not strata:
        raise CalibrationRefused("no strata to combine")
    rows = tuple(_stratum_row(name, sample) for name, sample in strata.items())
    total_target = sum(row.target_n for row in rows)
    if total_target == 0:
        return StratifiedEstimate(rows, None, None, "no target claims in any stratum")
    weighted = [row for row in rows if row.target_n > 0]
    blocked = [row for row in weighted if row.result is None]
    if blocked:
        reasons = "; ".join(f"stratum {row.name!r}: {row.refused}" for row in blocked)
        return StratifiedEstimate(rows, None, None, f"a stratum cannot be estimated ({reasons})")
    weights = np.array([row.target_n / total_target for row in weighted])
    thetas = np.array([row.result.share.estimate_unclipped for row in weighted])
    variances = np.array([row.result.standard_error**2 for row in weighted])
    theta = float(weights @ thetas)
    variance = float(weights**2 @ variances)
    half = Z_PPI * float(np.sqrt(variance))
    return StratifiedEstimate(rows, clip_share(theta, theta - half, theta + half), variance, None)


# --- Three-way shares ---------------------------------------------------------------------------


def label_indicator(labels: Sequence[str], label: str) -> np.ndarray:
    """Boolean array: True where a three-way support label equals ``label``.

    The labels must be on the three-way scale: a binary 'unsupported' cannot say whether the
    claim was contradicted or lacked evidence, so it is refused, as is any stray label.
    """
    if label not in SUPPORT:
        raise ValueError(f"label {label!r} is not a three-way support label {list(SUPPORT)!r}")
    unknown = sorted({repr(v) for v in labels if v not in SUPPORT})
    if unknown:
        raise CalibrationRefused(
            f"three-way shares need three-way labels; found {', '.join(unknown)}"
        )
    return np.fromiter((v == label for v in labels), dtype=bool, count=len(labels))


def three_way_shares(
    *,
    gold: Sequence[str],
    judge_gold: Sequence[str],
    judge_target: Sequence[str],
    labels: Sequence[str] = ("contradicted", "insufficient_evidence"),
) -> dict[str, PPIPlusPlus]:
    """PPI++ share of each three-way label in the target, each the mean of its indicator."""
    return {
        label: ppi_plus_plus(
            gold=label_indicator(gold, label),
            judge_gold=label_indicator(judge_gold, label),
            judge_target=label_indicator(judge_target, label),
        )
        for label in labels
    }


# --- Judge gate ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class McNemar:
    """Exact McNemar test on the gold items two judges both scored."""

    items: int
    candidate_only: int  # the candidate is right, the baseline wrong
    baseline_only: int  # the baseline is right, the candidate wrong
    p_value: float | None  # None without discordant items

    @property
    def candidate_worse(self) -> bool:
        return (
            self.p_value is not None
            and self.p_value < GATE_LEVEL
            and self.candidate_only < self.baseline_only
        )


def mcnemar_exact(candidate_correct: Any, baseline_correct: Any) -> McNemar:
    """Two-sided exact McNemar test: p = binomtest(b, b + c, 0.5), where b counts the items only
    the candidate got right and c those only the baseline got right (the same test as
    ``evaluation.reports.judge_comparison``'s ``mcnemar_p``). Concordant items carry no
    information about which judge is better, so only the b + c discordant ones enter.
    """
    cand = _as_bool(candidate_correct, "candidate_correct")
    base = _as_bool(baseline_correct, "baseline_correct")
    if cand.size != base.size:
        raise ValueError(f"the two judges must be paired: {cand.size} != {base.size} items")
    b = int((cand & ~base).sum())
    c = int((~cand & base).sum())
    p_value = float(binomtest(b, b + c, 0.5).pvalue) if b + c else None
    return McNemar(items=int(cand.size), candidate_only=b, baseline_only=c, p_value=p_value)


@dataclass(frozen=True)
class GateResult:
    passed: bool
    reasons: tuple[str, ...]  # one plain sentence per check, passed or failed
    kappa_lower: float | None
    min_kappa: float
    mcnemar: McNemar | None

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "reasons": list(self.reasons)}


def _kappa_check(kappa_lower: float | None, min_kappa: float) -> tuple[bool, str]:
    if kappa_lower is None:
        return False, (
            "the judge's kappa interval is undefined (too few gold items or a single label), "
            f"so it cannot be shown to reach the minimum {min_kappa:.2f}"
        )
    if kappa_lower < min_kappa:
        return False, (
            f"the lower end of the judge's kappa interval, {kappa_lower:.3f}, is under the "
            f"minimum {min_kappa:.2f}"
        )
    return True, (
        f"the lower end of the judge's kappa interval, {kappa_lower:.3f}, reaches the minimum "
        f"{min_kappa:.2f}"
    )


def _mcnemar_check(test: McNemar, candidate: str, baseline: str) -> tuple[bool, str]:
    counts = (
        f"on the {test.items} gold items both judges scored, {candidate} alone is right on "
        f"{test.candidate_only} and {baseline} alone on {test.baseline_only}"
    )
    if test.p_value is None:
        return True, f"{counts}: the two judges are right on the same items"
    if test.candidate_worse:
        return False, (
            f"{counts}: an exact McNemar test finds {candidate} worse than {baseline} "
            f"(p = {test.p_value:.3g} < {GATE_LEVEL})"
        )
    return True, (
        f"{counts}: an exact McNemar test does not find {candidate} worse than {baseline} at "
        f"the 5% level (p = {test.p_value:.3g})"
    )


def judge_gate(
    *,
    kappa_lower: float | None,
    min_kappa: float,
    candidate_correct: Any = None,
    baseline_correct: Any = None,
    candidate: str = "the judge",
    baseline: str = "the baseline",
) -> GateResult:
    """Pass or fail a judge (SPEC "Judge gate").

    Fails when the lower end of the judge's 95% kappa interval is under ``min_kappa`` (or the
    interval is undefined), or — given the paired correctness of the candidate and a baseline
    judge on the same gold items — when the exact McNemar test is significant at 5% (p < 0.05)
    and the candidate is right less often than the baseline. ``reasons`` has one sentence per
    check, whether it passed or failed.
    """
    if (candidate_correct is None) != (baseline_correct is None):
        raise ValueError("give both judges' paired correctness, or neither")
    checks = [_kappa_check(kappa_lower, min_kappa)]
    test = None
    if candidate_correct is not None:
        test = mcnemar_exact(candidate_correct, baseline_correct)
        checks.append(_mcnemar_check(test, candidate, baseline))
    return GateResult(
        passed=all(ok for ok, _ in checks),
        reasons=tuple(reason for _, reason in checks),
        kappa_lower=kappa_lower,
        min_kappa=min_kappa,
        mcnemar=test,
    )
