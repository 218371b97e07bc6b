"""Issue 32's drift simulation, through what the Reviewers report runs on each reviewer's
checks (evaluation.quality.reviewer_checks: reference rate 10%, one trial per claim of each
check, the threshold that flags at most 5% of reviewers working at that rate within 200
checks).

The checks have as many claims as the answers of a public hallucination benchmark
(fixtures/halu/bundle.jsonl, 2.7 claims per answer on average), drawn at random:
- a reviewer whose error rate rises from 10% to 25% half-way through 200 checks is flagged
  within 40 checks of the change in at least 80% of seeded runs;
- with no change, the share flagged within 200 checks is the chart's exact one (the Markov
  chain's, for each run's number of claims), and that is at most 5%.

With one claim per check no threshold of this chart meets both targets (the last test proves
it exactly): the report then keeps the false-flag rate and says how likely a flag is."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from evaluation.quality import (
    DEFAULT_TARGET_ERROR_RATE,
    DETECTION_CHECKS,
    FALSE_FLAG_RATE,
    HORIZON_CHECKS,
    CheckLabel,
    alarm_probability,
    cusum_design,
    reviewer_checks,
)

RUNS = 400
HALF = HORIZON_CHECKS // 2
BUNDLE = Path(__file__).resolve().parents[2] / "fixtures" / "halu" / "bundle.jsonl"


def claims_per_answer() -> list[int]:
    with open(BUNDLE, encoding="utf-8") as stream:
        lines = [json.loads(line) for line in stream]
    return [len(line["claims"]) for line in lines if line.get("type") == "answer"]


SIZES = claims_per_answer()
MEAN_CLAIMS = sum(SIZES) / len(SIZES)


def reviewer(rng, rates: list[float]) -> tuple[list[CheckLabel], list[int]]:
    """One reviewer's support labels on len(rates) checks, check i erring on each of its
    claims with rates[i]; and each check's first trial's position."""
    labels, starts = [], []
    for check, rate in enumerate(rates):
        starts.append(len(labels))
        for _ in range(rng.choice(SIZES)):
            wrong = rng.random() < rate
            given = "contradicted" if wrong else "supported"
            labels.append(CheckLabel(check, "support", given, "supported", group=check))
    return labels, starts


def chart(labels: list[CheckLabel]) -> dict:
    return reviewer_checks(labels, fields={}, claims_per_check=MEAN_CLAIMS)["drift"]


def test_the_fixture_has_public_benchmark_claim_counts():
    assert len(SIZES) >= 30
    assert 2.5 < MEAN_CLAIMS < 3.0


def test_a_reviewer_whose_error_rate_rises_is_flagged_within_40_checks_in_80_percent_of_runs():
    rng = np.random.default_rng(32)
    detected = 0
    for _ in range(RUNS):
        labels, starts = reviewer(rng, [0.10] * HALF + [0.25] * DETECTION_CHECKS)
        change = starts[HALF]
        before = chart(labels[:change])["alarms"]
        after = chart(labels)["alarms"]
        detected += after > before  # an alarm raised by a claim of the 40 checks after it
    assert detected / RUNS >= 0.80, detected


def alarmed_by(p: float, n: int, design) -> np.ndarray:
    """P(the chart, from 0, has alarmed by trial k), k = 1..n: the Markov chain stepped n
    times, written apart from evaluation.quality.alarm_probability (which gives the last)."""
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


def test_with_no_change_at_most_5_percent_are_flagged_within_200_checks():
    design = cusum_design(DEFAULT_TARGET_ERROR_RATE, MEAN_CLAIMS)
    rng = np.random.default_rng(200)
    flagged, trials = 0, []
    for _ in range(RUNS):
        labels, _ = reviewer(rng, [DEFAULT_TARGET_ERROR_RATE] * HORIZON_CHECKS)
        flagged += chart(labels)["flag"]
        trials.append(len(labels))
    # The exact share for these runs: each run's chance of a flag within its own claims.
    lo, hi = min(trials), max(trials)
    by_trial = alarmed_by(DEFAULT_TARGET_ERROR_RATE, hi, design)
    steps = (design.error_step, design.correct_step, design.threshold)
    assert by_trial[lo - 1] == pytest.approx(alarm_probability(0.10, lo, *steps), abs=1e-12)
    exact = float(np.mean([by_trial[n - 1] for n in trials]))
    assert exact <= FALSE_FLAG_RATE
    standard_error = math.sqrt(exact * (1 - exact) / RUNS)
    assert abs(flagged / RUNS - exact) < 4 * standard_error, (flagged, exact)


def test_the_design_reports_its_own_false_flag_rate_and_detection():
    design = cusum_design(DEFAULT_TARGET_ERROR_RATE, MEAN_CLAIMS)
    horizon = math.ceil(HORIZON_CHECKS * design.claims_per_check - 1e-9)
    window = math.ceil(DETECTION_CHECKS * design.claims_per_check - 1e-9)
    steps = (design.error_step, design.correct_step)
    assert design.false_flag_rate == alarm_probability(0.10, horizon, *steps, design.threshold)
    assert design.false_flag_rate <= FALSE_FLAG_RATE
    # the smallest such threshold: one unit lower flags more than 5%
    assert alarm_probability(0.10, horizon, *steps, design.threshold - 1) > FALSE_FLAG_RATE
    assert design.detection == alarm_probability(0.20, window, *steps, design.threshold)


def test_one_claim_per_check_cannot_meet_both_targets_and_the_design_says_so():
    """For the chart designed against 20% (a doubling) and against the 25% the issue
    simulates: the smallest threshold with at most 5% false flags over 200 one-claim checks
    detects the rise to 25% within 40 checks in well under 80% of runs; a higher threshold
    detects less still. The design at one claim per check reports a detection under 80%."""
    base = cusum_design(DEFAULT_TARGET_ERROR_RATE, 1.0)
    for p1 in (0.20, 0.25):
        up, down = math.log(p1 / 0.10), math.log((1 - p1) / 0.90)
        scale = 10 / -down
        design = replace(
            base, p1=p1, error_step=round(up * scale), correct_step=round(down * scale)
        )
        steps = (design.error_step, design.correct_step)
        low, high = design.error_step, design.error_step * 16
        while high - low > 1:
            middle = (low + high) // 2
            false = alarm_probability(0.10, HORIZON_CHECKS, *steps, middle)
            low, high = (low, middle) if false <= FALSE_FLAG_RATE else (middle, high)
        assert alarm_probability(0.10, HORIZON_CHECKS, *steps, high) <= FALSE_FLAG_RATE
        detection = alarm_probability(0.25, DETECTION_CHECKS, *steps, high)
        assert detection < 0.60, (p1, detection)
    assert base.detection < 0.80
    assert base.false_flag_rate <= FALSE_FLAG_RATE
