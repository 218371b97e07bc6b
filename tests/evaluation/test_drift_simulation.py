"""Issue 32's drift simulation, through what the Reviewers report runs on each reviewer's
checks (evaluation.quality.reviewer_checks, the chart SPEC.md designs: reference rate 10%,
about one false alarm in 200 checks at that rate).

A reviewer whose error rate rises from 10% to 25% half-way is flagged within 40 checks of the
change in at least 80% of seeded runs. The issue's second target -- a false flag in at most 5%
of runs with no change over 200 checks -- is not what SPEC.md's threshold gives: one false
alarm in 200 checks *on average* is a false flag in about 62% of 200-check runs (a run
length's distribution is close to geometric). The last test proves, exactly, that no
threshold of this chart meets both targets at once, so the choice is the spec's to make; the
simulation here checks the rate the chart actually has against its exact value."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from evaluation.quality import DEFAULT_TARGET_ERROR_RATE, CheckLabel, cusum_design, reviewer_checks

RUNS = 400
HALF = 100
WINDOW = 40


def checks(errors) -> list[CheckLabel]:
    """One support label per check, wrong where `errors` says."""
    return [
        CheckLabel(
            check=i,
            field="support",
            given="contradicted" if e else "supported",
            gold="supported",
            group=i,
        )
        for i, e in enumerate(errors)
    ]


def flagged(errors) -> dict:
    return reviewer_checks(checks(errors), fields={})["drift"]


def test_a_reviewer_whose_error_rate_rises_is_flagged_within_40_checks_in_80_percent_of_runs():
    rng = np.random.default_rng(32)
    detected = 0
    for _ in range(RUNS):
        errors = np.concatenate([rng.random(HALF) < 0.10, rng.random(HALF) < 0.25]).tolist()
        before = flagged(errors[:HALF])["alarms"]
        after = flagged(errors[: HALF + WINDOW])["alarms"]
        detected += after > before  # an alarm raised by a check after the change
    assert detected / RUNS >= 0.80, detected


def run_length_distribution(p: float, n: int, design) -> np.ndarray:
    """P(the chart, from 0, has alarmed by check k), k = 1..n, for error rate p: the Markov
    chain over the statistic's values, stepped n times."""
    h = design.threshold
    state = np.zeros(h)
    state[0] = 1.0
    alarmed = np.zeros(n)
    total = 0.0
    for k in range(n):
        moved = np.zeros(h)
        up = np.arange(h) + design.error_step
        inside = up < h
        np.add.at(moved, up[inside], state[inside] * p)
        total += state[~inside].sum() * p
        np.add.at(moved, np.maximum(np.arange(h) + design.correct_step, 0), state * (1 - p))
        state = moved
        alarmed[k] = total
    return alarmed


def test_with_no_change_the_false_flag_rate_over_200_checks_is_the_chart_s_exact_one():
    design = cusum_design(DEFAULT_TARGET_ERROR_RATE)
    exact = run_length_distribution(DEFAULT_TARGET_ERROR_RATE, 200, design)[-1]
    rng = np.random.default_rng(200)
    false = sum(flagged((rng.random(200) < 0.10).tolist())["flag"] for _ in range(RUNS))
    standard_error = np.sqrt(exact * (1 - exact) / RUNS)
    assert abs(false / RUNS - exact) < 4 * standard_error
    assert 0.55 < exact < 0.70  # one false alarm in ~200 checks on average, not 5% of runs


def test_no_threshold_gives_both_5_percent_false_flags_in_200_checks_and_80_percent_detection():
    """For the chart designed against 20% (SPEC.md's) and against the 25% the issue
    simulates: the smallest threshold with at most 5% false flags over 200 checks detects
    the rise to 25% within 40 checks in well under 80% of runs; a higher threshold detects
    less still."""
    for p1 in (0.20, 0.25):
        base = cusum_design(DEFAULT_TARGET_ERROR_RATE)
        up, down = math.log(p1 / 0.10), math.log((1 - p1) / 0.90)
        scale = 10 / -down
        design = replace(
            base, p1=p1, error_step=round(up * scale), correct_step=round(down * scale)
        )
        low, high = design.error_step, design.error_step * 16
        while high - low > 1:
            middle = (low + high) // 2
            false = run_length_distribution(0.10, 200, replace(design, threshold=middle))[-1]
            low, high = (low, middle) if false <= 0.05 else (middle, high)
        strict = replace(design, threshold=high)
        assert run_length_distribution(0.10, 200, strict)[-1] <= 0.05
        detection = run_length_distribution(0.25, WINDOW, strict)[-1]
        assert detection < 0.60, (p1, detection)
