"""95% intervals for the rates and means the reports chart. Pure functions, no Django import.

A rate drawn as a bar without its interval reads as firmer than it is: 1.00 against 0.75 at
n = 2 is no difference at all. Every rate bar carries one of these:

- **Wilson score interval** for a proportion (successes out of n). Unlike the normal
  ("Wald") interval it stays inside [0, 1] and does not collapse to a point at 0 or 1 successes,
  which is exactly where small projects sit. It matches statsmodels'
  ``proportion_confint(method="wilson")`` (tested).
- **Clipped shares**: an unbiased estimator of a share (PPI, PPI++, a design's estimate) can
  step outside [0, 1] on a small sample. The reports show it clipped (a share cannot be
  negative) and say so, keeping the unclipped numbers as evidence (``clip_share``).
- **Bounded means** (recall@k, MRR, nDCG: a mean over cases of a value in [0, 1]; relevance, a
  mean of 0/1/2) get the Wilson interval of the mean read as a proportion. A variable in
  [0, 1] with mean μ has variance at most μ(1 − μ), the variance of a 0/1 variable with that
  mean, so this interval is never narrower than the one the data's own spread would give --
  conservative, and it needs only the mean and n, which the reports already keep.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

# The two-sided 95% normal quantile, norm.ppf(0.975), as statsmodels uses it.
Z95 = 1.959963984540054
# Below 30 items one item moves a rate by more than 3 points; the charts mark such bars
# (evaluation.agreement uses the same bound for kappa).
SMALL_N = 30


def wilson_interval(successes: float, n: int, *, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of ``successes`` out of ``n``; None when n is 0.

    ``successes`` may be fractional (a bounded mean times n, see ``bounded_mean_interval``)."""
    if n <= 0:
        return None
    if not 0 <= successes <= n:
        raise ValueError(f"successes must lie in [0, n], got {successes} of {n}")
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def bounded_mean_interval(
    mean: float | None, n: int, *, low: float = 0.0, high: float = 1.0
) -> tuple[float, float] | None:
    """A conservative 95% interval for the mean of n values that lie in [low, high]: the
    Wilson interval of the mean rescaled to [0, 1] (see the module's note); None when the mean
    is undefined or n is 0."""
    if mean is None or n <= 0 or high <= low:
        return None
    share = min(1.0, max(0.0, (mean - low) / (high - low)))
    interval = wilson_interval(share * n, n)
    assert interval is not None
    return low + interval[0] * (high - low), low + interval[1] * (high - low)


# --- Shares are clipped to [0, 1], and say so ------------------------------------------------


@dataclass(frozen=True)
class ClippedShare:
    """A share's estimate and 95% interval clipped to [0, 1], the unclipped values kept."""

    estimate: float
    ci95: tuple[float, float]
    estimate_unclipped: float
    ci95_unclipped: tuple[float, float]
    clipped: bool


def clip_share(estimate: float, low: float, high: float) -> ClippedShare:
    """Clip θ and [low, high] to [0, 1]; ``clipped`` is True when any of the three left it.

    An unbiased estimator of a share can step outside [0, 1] on a small sample; the report shows
    the clipped numbers (a share cannot be negative) and keeps the unclipped ones as evidence.
    """
    values = (float(estimate), float(low), float(high))
    clipped = any(v < 0.0 or v > 1.0 for v in values)
    est, lo, hi = (min(1.0, max(0.0, v)) for v in values)
    return ClippedShare(
        estimate=est,
        ci95=(lo, hi),
        estimate_unclipped=values[0],
        ci95_unclipped=(values[1], values[2]),
        clipped=clipped,
    )


def share_dict(share: ClippedShare) -> dict[str, Any]:
    """A clipped share as the reports' JSON carries it: estimate, ci95, clipped, and the
    unclipped estimate and ends under ``unclipped`` when it was clipped."""
    out: dict[str, Any] = {
        "estimate": share.estimate,
        "ci95": list(share.ci95),
        "clipped": share.clipped,
    }
    if share.clipped:
        out["unclipped"] = {
            "estimate": share.estimate_unclipped,
            "ci95": list(share.ci95_unclipped),
        }
    return out
