"""The budget planner's and the judge gate's inputs (a half-width, a minimum kappa), checked
the same way by the command, the API and the run's page, and the stored plan's key.

No statistics import: the page and the API show stored reports and must not load numpy to
read their query parameters (tests/test_lean_workers.py)."""

from __future__ import annotations

from typing import Any

DEFAULT_HALF_WIDTH = 0.05  # as evaluation.sampling_design's


def check_half_width(value: Any) -> float:
    """The half-width a plan is asked for, a float in (0, 1); ValueError otherwise."""
    try:
        width = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"the half-width must be a number, got {value!r}") from None
    if not 0 < width < 1:
        raise ValueError(f"the half-width must lie between 0 and 1, got {value}")
    return width


def check_min_kappa(value: Any) -> float:
    """The bound a gate is asked for, in [-1, 1]; ValueError otherwise."""
    try:
        bound = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"the minimum kappa must be a number, got {value!r}") from None
    if not -1 <= bound <= 1:
        raise ValueError(f"the minimum kappa must lie between -1 and 1, got {value}")
    return bound


def plan_key(run_pk: int, split: str, half_width: float, newest_sample: int | None) -> str:
    """The stored plan's key (evaluation.report_kinds.CALIBRATION_PLAN). It names the run's
    newest calibration sample, whose expected half-width the plan reports: drawing a sample
    moves no revision (no label changes), so a new sample is a new key instead."""
    return f"{run_pk}:{split}:{half_width:g}:{newest_sample or 0}"
