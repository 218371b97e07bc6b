"""Calibration samples with known inclusion probabilities, their estimate, and a budget planner.

Pure functions, no Django import. Definitions follow SPEC.md "Calibration samples
(design-based)" and "Budget planner".

The frame is the answers the judge labelled and no reviewer has labelled yet. Each answer a is
drawn for human labelling independently with probability π_a (Poisson sampling), Σ π_a = B:

- ``uniform``: π_a = B / |frame|;
- ``active`` (Zrnic & Candès 2024): π_a ∝ sqrt(u_a), u_a = Σ over a's judged claims of
  min(p, 1 − p), p the judge's confidence that the claim is unsupported; floored at a tenth of
  the uniform rate, capped at 1, rescaled to Σ π_a = B. Where p is missing it is uniform.

Whatever the design and whatever the judge, the Horvitz–Thompson correction of the judge's
share by the sampled answers' residuals d_a = Σ (gold − judge) is unbiased for the frame's
unsupported share, because every answer's π_a is known and positive.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from evaluation.calibration import Z_95, CalibrationRefused
from evaluation.estimators import ClippedShare, _share_dict, clip_share

Design = Literal["uniform", "active"]
DESIGNS: tuple[str, ...] = ("uniform", "active")
FLOOR_SHARE = 0.1  # π_a ≥ a tenth of the uniform rate: no answer is nearly impossible to draw
SUM_TOLERANCE = 1e-9  # Σ π_a = B to this absolute tolerance
DEFAULT_HALF_WIDTH = 0.05
MIN_GOLD_ANSWERS = 2  # the planner's residual model needs more than one labelled answer

Confidences = Sequence[Sequence[float | None]]  # per answer, its judged claims' p (or None)


# --- Inclusion probabilities -------------------------------------------------------------------


def answer_uncertainty(confidences: Sequence[float | None]) -> float | None:
    """u_a = Σ over the answer's judged claims of min(p, 1 − p); None if any p is missing.

    min(p, 1 − p) is the probability that a calibrated judge's label (unsupported when
    p > 0.5) is wrong, so u_a is the expected number of judge errors in the answer.
    """
    if any(p is None for p in confidences):
        return None
    ps = np.asarray(confidences, dtype=float)
    if ps.size and ((ps < 0.0) | (ps > 1.0) | np.isnan(ps)).any():
        raise ValueError(f"confidences must lie in [0, 1], got {list(confidences)!r}")
    return float(np.minimum(ps, 1.0 - ps).sum())


def frame_uncertainties(frame: Confidences) -> tuple[np.ndarray | None, str | None]:
    """Every answer's u_a, or None and the reason the active design cannot use them.

    Active sampling needs a confidence on every judged claim of the frame: an answer without
    one has no score to be drawn in proportion to, and giving it an arbitrary one would make
    the design say more than the judge did.
    """
    scores = [answer_uncertainty(claims) for claims in frame]
    missing = sum(p is None for claims in frame for p in claims)
    if missing:
        total = sum(len(claims) for claims in frame)
        return None, f"{missing} of {total} judged claims have no confidence"
    return np.asarray(scores, dtype=float), None


@dataclass(frozen=True)
class SampleDesign:
    """Inclusion probabilities of the frame's answers (``pi[i]`` for answer i)."""

    requested: str
    kind: str  # the design used: active falls back to uniform without confidences
    budget: float
    pi: np.ndarray = field(repr=False, compare=False)
    fallback: str | None = None  # why active fell back to uniform

    @property
    def frame(self) -> int:
        return int(self.pi.size)


def _check_budget(budget: float, frame_size: int) -> None:
    if frame_size == 0:
        raise ValueError("the frame is empty: no unlabelled answers with a verdict of this judge")
    if not np.isfinite(budget) or budget <= 0:
        raise ValueError(f"the budget must be a positive number of answers, got {budget}")
    if budget > frame_size:
        raise ValueError(
            f"the budget of {budget:g} answers exceeds the frame of {frame_size} unlabelled "
            "answers: Poisson sampling cannot draw an answer more than once"
        )


def _clamped_proportional(scores: np.ndarray, budget: float, floor: float) -> np.ndarray:
    """π_a = clip(c·s_a, floor, 1) with the one c for which Σ π_a = B (to 1e-9).

    Clamping and then rescaling only the answers left between the bounds can push others across
    a bound, so the scale is searched instead: Σ clip(c·s, floor, 1) rises continuously with c,
    and bisection on c clamps and rescales all answers at once until the sum holds (every step
    halves the bracket; 200 of them reach float precision whatever the frame). If even with
    every scored answer at 1 the sum stays short of B (the judge is certain of most answers),
    the answers scored 0 share what is left equally: nothing tells them apart.
    """
    positive = scores > 0
    saturated = positive.sum() + floor * (~positive).sum()
    if saturated <= budget:
        return np.where(positive, 1.0, (budget - positive.sum()) / max(1, (~positive).sum()))
    low, high = 0.0, 1.0 / scores[positive].min()  # at high every scored answer is at 1
    for _ in range(200):
        scale = 0.5 * (low + high)
        pi = np.clip(scale * scores, floor, 1.0)
        total = pi.sum()
        if abs(total - budget) <= SUM_TOLERANCE / 10:
            break
        low, high = (scale, high) if total < budget else (low, scale)
    return pi


def inclusion_probabilities(*, design: str, budget: float, frame: Confidences) -> SampleDesign:
    """π_a for every answer of the frame (``frame[i]``: answer i's judged claims' confidences).

    ``uniform``: π_a = B / |frame|. ``active``: π_a ∝ sqrt(u_a), floored at 0.1·B/|frame|,
    capped at 1, Σ π_a = B; uniform for all when some claim has no confidence or the judge is
    certain of every claim (u_a = 0 everywhere), with the reason in ``fallback``.
    B must lie in (0, |frame|].
    """
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}; use {' or '.join(DESIGNS)}")
    _check_budget(budget, len(frame))
    if design == "uniform":
        return _design_for(design, budget, len(frame), None, None)
    scores, reason = frame_uncertainties(frame)
    return _design_for(design, budget, len(frame), scores, reason)


def _design_for(
    design: str, budget: float, size: int, scores: np.ndarray | None, reason: str | None
) -> SampleDesign:
    """The probabilities once each answer's u_a is known (the planner calls this many times)."""
    uniform = np.full(size, budget / size)
    if design == "uniform":
        return SampleDesign(design, "uniform", float(budget), uniform)
    if scores is not None and not (scores > 0).any():
        scores, reason = None, "the judge is certain (p = 0 or 1) of every claim in the frame"
    if scores is None:
        return SampleDesign(design, "uniform", float(budget), uniform, fallback=reason)
    pi = _clamped_proportional(np.sqrt(scores), budget, FLOOR_SHARE * budget / size)
    return SampleDesign(design, "active", float(budget), pi)


def draw_sample(pi: Any, *, seed: int) -> np.ndarray:
    """Poisson sampling: answer i is drawn independently with probability ``pi[i]``.

    Seeded (numpy's default Generator), so a stored design can be drawn again identically.
    """
    pi = np.asarray(pi, dtype=float)
    if ((pi <= 0.0) | (pi > 1.0)).any():
        raise ValueError("inclusion probabilities must lie in (0, 1]")
    return np.random.default_rng(seed).random(pi.size) < pi


# --- The design estimate -----------------------------------------------------------------------


def answer_residual(gold: Any, judge: Any) -> int:
    """d_a = Σ over an answer's judged claims of (gold − judge) unsupported indicators."""
    gold = np.asarray(gold, dtype=bool)
    judge = np.asarray(judge, dtype=bool)
    if gold.shape != judge.shape:
        raise ValueError("gold and judge must be aligned claim by claim")
    return int(gold.sum()) - int(judge.sum())


@dataclass(frozen=True)
class DesignEstimate:
    share: ClippedShare
    variance: float
    frame_claims: int  # M
    answers_sampled: int  # labelled + waiting
    answers_labelled: int
    waiting: int  # sampled answers without gold yet

    @property
    def provisional(self) -> bool:
        return self.waiting > 0

    @property
    def provisional_reason(self) -> str | None:
        if not self.waiting:
            return None
        s = "s" if self.waiting != 1 else ""
        return (
            f"{self.waiting} sampled answer{s} still wait{'' if s else 's'} for labels or "
            "decisions: the estimate counts only the labelled ones until then"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            **_share_dict(self.share),
            "frame_claims": self.frame_claims,
            "answers_sampled": self.answers_sampled,
            "answers_labelled": self.answers_labelled,
            "provisional": self.provisional,
            "provisional_reason": self.provisional_reason,
        }


def design_estimate(
    *,
    frame_claims: int,
    frame_judge_unsupported: int,
    sampled_pi: Sequence[float],
    sampled_residuals: Sequence[float | None],
) -> DesignEstimate:
    """The frame's unsupported share from a calibration sample (Horvitz–Thompson):

        θ = (1/M) Σ_c judge_c + (1/M) Σ_{a sampled} d_a / π_a,
        Var = (1/M²) Σ_{a sampled} (1 − π_a) d_a² / π_a²,   95%: θ ± 1.96 √Var,

    M = ``frame_claims`` judged claims in the frame, Σ_c judge_c = ``frame_judge_unsupported``.
    ``sampled_residuals[i]`` is d_a of the i-th sampled answer, or None while it waits for gold:
    the estimate then uses the labelled ones and is provisional.
    """
    if frame_claims <= 0:
        raise CalibrationRefused("the frame has no judged claims")
    if not 0 <= frame_judge_unsupported <= frame_claims:
        raise ValueError(
            f"the judge's unsupported calls ({frame_judge_unsupported}) must lie between 0 and "
            f"the frame's {frame_claims} claims"
        )
    if len(sampled_pi) != len(sampled_residuals):
        raise ValueError("sampled_pi and sampled_residuals must be aligned")
    labelled = np.array([d is not None for d in sampled_residuals], dtype=bool)
    pi = np.asarray(sampled_pi, dtype=float)
    if ((pi <= 0.0) | (pi > 1.0)).any():
        raise ValueError("inclusion probabilities must lie in (0, 1]")
    d = np.array([0.0 if r is None else float(r) for r in sampled_residuals])[labelled]
    pi = pi[labelled]
    m = float(frame_claims)
    theta = frame_judge_unsupported / m + float((d / pi).sum()) / m
    variance = float(((1.0 - pi) * d**2 / pi**2).sum()) / m**2
    half = Z_95 * float(np.sqrt(variance))
    return DesignEstimate(
        share=clip_share(theta, theta - half, theta + half),
        variance=variance,
        frame_claims=int(frame_claims),
        answers_sampled=len(sampled_residuals),
        answers_labelled=int(labelled.sum()),
        waiting=int((~labelled).sum()),
    )


# --- Budget planner ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ResidualModel:
    """E[d_a²] for an answer of the frame, fitted on the current gold.

    ``uniform``: one number, the (1/π-weighted) mean of d_a² over the labelled answers.
    ``active``: E[d_a² | u_a] = ``slope`` · u_a, with slope = Σ w d_a² / Σ w u_a. For a
    calibrated judge each claim is wrong with probability q = min(p, 1 − p), so d_a² has
    expectation Σ q(1 − q) + (Σ ±q)² ≈ u_a: a line through the origin has the right shape, and
    one ratio of totals is the steadiest fit the few nonzero residuals of a small gold allow
    (a binned or two-parameter fit spends them on more unknowns, and a noisy intercept would
    be multiplied by the large 1/π of the answers active sampling rarely draws). ``slope`` is
    None when a gold claim has no confidence or the gold holds no uncertainty at all.
    """

    mean_square: float
    slope: float | None
    answers: int


def fit_residual_model(
    *,
    residuals: Sequence[float],
    uncertainties: Sequence[float | None],
    pi: Sequence[float] | None = None,
) -> ResidualModel:
    """Fit E[d²] on the labelled answers; ``pi`` (their inclusion probabilities, when the gold
    came from a calibration sample) weights each answer by 1/π so the fit describes the frame.
    """
    d = np.asarray(residuals, dtype=float)
    if d.size < MIN_GOLD_ANSWERS:
        raise CalibrationRefused(
            f"the planner needs at least {MIN_GOLD_ANSWERS} labelled answers, got {d.size}"
        )
    if len(uncertainties) != d.size:
        raise ValueError("residuals and uncertainties must be aligned")
    if not (d != 0).any():
        raise CalibrationRefused(
            f"the judge made no error on the {d.size} labelled answers, so their residual "
            "variance is 0 and cannot predict how many labels an interval needs"
        )
    w = np.ones_like(d) if pi is None else 1.0 / np.asarray(pi, dtype=float)
    mean_square = float((w * d**2).sum() / w.sum())
    slope = None
    if all(u is not None for u in uncertainties):
        u = np.asarray(uncertainties, dtype=float)
        if (w * u).sum() > 0:
            slope = float((w * d**2).sum() / (w * u).sum())
    return ResidualModel(mean_square=mean_square, slope=slope, answers=int(d.size))


def expected_half_width(*, pi: np.ndarray, expected_sq: np.ndarray, frame_claims: int) -> float:
    """1.96 · sqrt(E[Var]), E[Var] = (1/M²) Σ_{a in frame} (1 − π_a) E[d_a²] / π_a."""
    variance = float(((1.0 - pi) * expected_sq / pi).sum()) / float(frame_claims) ** 2
    return Z_95 * float(np.sqrt(variance))


@dataclass(frozen=True)
class _Frame:
    claims: np.ndarray  # judged claims per answer
    uncertainty: np.ndarray | None
    no_uncertainty: str | None  # why there is none

    @property
    def size(self) -> int:
        return int(self.claims.size)

    @property
    def total_claims(self) -> int:
        return int(self.claims.sum())


def _frame(frame: Confidences) -> _Frame:
    claims = np.array([len(c) for c in frame], dtype=int)
    if claims.sum() == 0:
        raise CalibrationRefused("the frame has no judged claims")
    return _Frame(claims, *frame_uncertainties(frame))


def _expected_sq(frame: _Frame, model: ResidualModel, design: str) -> np.ndarray:
    if design == "active":
        return model.slope * frame.uncertainty
    return np.full(frame.size, model.mean_square)


def _half_width_at(frame: _Frame, model: ResidualModel, design: str, budget: float) -> float:
    _check_budget(budget, frame.size)
    plan = _design_for(design, budget, frame.size, frame.uncertainty, frame.no_uncertainty)
    return expected_half_width(
        pi=plan.pi,
        expected_sq=_expected_sq(frame, model, design),
        frame_claims=frame.total_claims,
    )


def _active_unavailable(frame: _Frame, model: ResidualModel) -> str | None:
    """Why the active design cannot be planned, or None when it can."""
    if frame.uncertainty is None:
        return f"in the frame, {frame.no_uncertainty}"
    if not (frame.uncertainty > 0).any():
        return "the judge is certain (p = 0 or 1) of every claim in the frame"
    if model.slope is None:
        return "the gold's judged claims lack confidences, so errors cannot be related to them"
    return None


@dataclass(frozen=True)
class DesignPlan:
    design: str
    answers: int  # expected sampled answers (B) for the target half-width
    claims: float  # the judged claims those answers are expected to hold, Σ π_a m_a
    half_width: float  # expected at ``answers``
    planned_answers: float | None
    planned_half_width: float | None  # expected with the answers already planned

    def as_dict(self) -> dict[str, Any]:
        return {
            "answers": self.answers,
            "claims": round(self.claims, 1),
            "expected_half_width": self.half_width,
            "planned": None
            if self.planned_answers is None
            else {"answers": self.planned_answers, "expected_half_width": self.planned_half_width},
        }


@dataclass(frozen=True)
class BudgetPlan:
    half_width: float
    uniform: DesignPlan
    active: DesignPlan | None
    active_unavailable: str | None

    def as_dict(self) -> dict[str, Any]:
        """``plan: {"half_width", "uniform": {"answers", "claims", …}, "active": {…} | null}``"""
        return {
            "half_width": self.half_width,
            "uniform": self.uniform.as_dict(),
            "active": None if self.active is None else self.active.as_dict(),
            "active_unavailable": self.active_unavailable,
        }


def _smallest_budget(frame: _Frame, model: ResidualModel, design: str, target: float) -> int:
    """Smallest whole B whose expected half-width is ≤ target (B = |frame| gives 0).

    The expected half-width falls as B grows (every π_a rises with B), so bisection finds it.
    """
    low, high = 0, frame.size  # h(low) > target unless low = 0; h(high) = 0 ≤ target
    while high - low > 1:
        mid = (low + high) // 2
        if _half_width_at(frame, model, design, mid) <= target:
            high = mid
        else:
            low = mid
    return high


def _design_plan(
    frame: _Frame, model: ResidualModel, design: str, target: float, planned: float | None
) -> DesignPlan:
    answers = _smallest_budget(frame, model, design, target)
    pi = _design_for(design, answers, frame.size, frame.uncertainty, frame.no_uncertainty).pi
    planned_half = None if planned is None else _half_width_at(frame, model, design, planned)
    return DesignPlan(
        design=design,
        answers=answers,
        claims=float(pi @ frame.claims),
        half_width=_half_width_at(frame, model, design, answers),
        planned_answers=planned,
        planned_half_width=planned_half,
    )


def plan_budget(
    *,
    frame: Confidences,
    gold_residuals: Sequence[float],
    gold_confidences: Confidences,
    gold_pi: Sequence[float] | None = None,
    half_width: float = DEFAULT_HALF_WIDTH,
    planned_answers: float | None = None,
) -> BudgetPlan:
    """How many answers (and claims) a calibration sample needs for a 95% half-width.

    ``frame``: per frame answer, its judged claims' confidences (None where missing);
    ``gold_residuals`` / ``gold_confidences``: d_a and the claims' confidences of each labelled
    answer. E[d_a²] comes from ``fit_residual_model``; the expected half-width at budget B is
    1.96·sqrt((1/M²) Σ_{a in frame} (1 − π_a(B)) E[d_a²] / π_a(B)), and the plan is the smallest
    B reaching ``half_width``, under each design (active only when confidences exist on both the
    frame and the gold). ``planned_answers``: the expected size of a sample already drawn, whose
    expected half-width is reported too.
    """
    if not 0 < half_width < 1:
        raise ValueError(f"the half-width must lie in (0, 1), got {half_width}")
    fr = _frame(frame)
    if planned_answers is not None:
        _check_budget(planned_answers, fr.size)
    model = fit_residual_model(
        residuals=gold_residuals,
        uncertainties=[answer_uncertainty(c) for c in gold_confidences],
        pi=gold_pi,
    )
    uniform = _design_plan(fr, model, "uniform", half_width, planned_answers)
    reason = _active_unavailable(fr, model)
    if reason is not None:
        return BudgetPlan(half_width, uniform, None, reason)
    active = _design_plan(fr, model, "active", half_width, planned_answers)
    return BudgetPlan(half_width, uniform, active, None)


@dataclass(frozen=True)
class CurvePoint:
    answers: int
    uniform: float  # expected 95% half-width
    active: float | None


def planner_curve(
    *,
    frame: Confidences,
    gold_residuals: Sequence[float],
    gold_confidences: Confidences,
    gold_pi: Sequence[float] | None = None,
    budgets: Sequence[int] | None = None,
) -> list[CurvePoint]:
    """Expected 95% half-width against answers labelled, under both designs, for a chart.

    ``budgets`` default to 20 points spaced evenly on a log scale from 1 to the frame's size.
    """
    fr = _frame(frame)
    model = fit_residual_model(
        residuals=gold_residuals,
        uncertainties=[answer_uncertainty(c) for c in gold_confidences],
        pi=gold_pi,
    )
    if budgets is None:
        budgets = np.unique(np.round(np.geomspace(1, fr.size, 20)).astype(int)).tolist()
    active = _active_unavailable(fr, model) is None
    return [
        CurvePoint(
            answers=int(b),
            uniform=_half_width_at(fr, model, "uniform", b),
            active=_half_width_at(fr, model, "active", b) if active else None,
        )
        for b in budgets
    ]
