"""A reviewer against gold checks (evaluation/quality.py): accuracy with its Wilson interval
against statsmodels, kappa against scikit-learn, and the Bernoulli CUSUM's run lengths against
a simulation of the same chart."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from evaluation.quality import (
    FALSE_FLAG_RATE,
    HORIZON_CHECKS,
    alarm_probability,
    average_run_length,
    check_accuracy,
    cusum_design,
    drift,
)

SUPPORT = ("supported", "contradicted", "insufficient_evidence")


def simulated_run_lengths(design, p, runs, seed):
    """Checks until the integer chart alarms, for ``runs`` reviewers erring with rate p,
    simulated side by side."""
    rng = np.random.default_rng(seed)
    statistic = np.zeros(runs, dtype=np.int64)
    lengths = np.zeros(runs, dtype=np.int64)
    running = np.ones(runs, dtype=bool)
    step = 0
    while running.any():
        step += 1
        errors = rng.random(runs) < p
        moved = np.maximum(statistic + np.where(errors, design.error_step, design.correct_step), 0)
        statistic = np.where(running, moved, statistic)
        alarmed = running & (statistic >= design.threshold)
        lengths[alarmed] = step
        running &= ~alarmed
    return lengths


@pytest.mark.parametrize("claims", [1.0, 2.7, 6.0])
@pytest.mark.parametrize("p0", [0.05, 0.10, 0.20])
def test_the_threshold_is_the_smallest_with_at_most_5_percent_false_flags_in_200_checks(p0, claims):
    design = cusum_design(p0, claims)
    steps = (design.error_step, design.correct_step)
    horizon = round(HORIZON_CHECKS * claims)
    assert alarm_probability(p0, horizon, *steps, design.threshold) <= FALSE_FLAG_RATE
    assert alarm_probability(p0, horizon, *steps, design.threshold - 1) > FALSE_FLAG_RATE
    assert design.p1 == pytest.approx(2 * p0)
    # in checks: the trials between false alarms, over the claims a check holds
    arl = average_run_length(p0, *steps, design.threshold)
    assert design.run_length == pytest.approx(arl / claims)


def test_more_claims_per_check_find_a_doubled_rate_sooner():
    detections = [cusum_design(0.10, claims).detection for claims in (1.0, 2.0, 4.0, 8.0)]
    assert detections == sorted(detections)
    assert detections[0] < 0.5 < detections[-1]


def test_claims_per_check_round_up_to_a_tenth():
    assert cusum_design(0.10, 2.71875).claims_per_check == 2.8
    assert cusum_design(0.10, 0.4).claims_per_check == 1.0


@pytest.mark.parametrize("p0", [0.05, 0.10])
def test_the_exact_run_length_is_what_the_chart_does(p0):
    """The Markov chain's answer against 20,000 simulated reviewers, in and out of control."""
    design = cusum_design(p0)
    for p in (p0, design.p1):
        expected = average_run_length(p, design.error_step, design.correct_step, design.threshold)
        lengths = simulated_run_lengths(design, p, runs=20_000, seed=5)
        standard_error = lengths.std() / np.sqrt(lengths.size)
        assert abs(lengths.mean() - expected) < 4 * standard_error


def test_a_doubled_error_rate_is_found_far_sooner_than_a_false_alarm():
    design = cusum_design(0.10)
    out_of_control = average_run_length(
        design.p1, design.error_step, design.correct_step, design.threshold
    )
    assert out_of_control < design.run_length / 5


def test_the_flag_names_the_checks_that_raised_it():
    # 40 good checks, seven errors in eight checks, then good checks again.
    errors = [False] * 40 + [True, True, True, False, True, True, True, True] + [False] * 20
    result = drift(errors, p0=0.10)
    assert result.flag
    assert result.alarms == 1
    # from the first error (the statistic stood at 0 before it) to the seventh, which crossed
    assert result.checks == tuple(range(40, 48))
    first, last = result.checks[0], result.checks[-1]
    # replaying the chart over exactly those checks crosses the threshold at their end
    design = result.design
    statistic = 0
    for error in errors[first : last + 1]:
        statistic = max(0, statistic + (design.error_step if error else design.correct_step))
    assert statistic >= design.threshold


def test_a_reviewer_at_the_target_rate_is_left_alone():
    errors = [i % 10 == 0 for i in range(150)]  # exactly 10%, spread out
    result = drift(errors, p0=0.10)
    assert not result.flag
    assert result.checks == ()
    assert result.statistic < result.threshold


def test_accuracy_and_kappa_against_gold_match_statsmodels_and_scikit_learn():
    rng = np.random.default_rng(2)
    gold = [SUPPORT[i] for i in rng.integers(0, 3, size=60)]
    reviewer = [g if rng.random() < 0.8 else SUPPORT[rng.integers(0, 3)] for g in gold]
    groups = [i // 3 for i in range(60)]
    result = check_accuracy(reviewer, gold, labels=SUPPORT, groups=groups, n_boot=400)
    correct = sum(a == b for a, b in zip(reviewer, gold, strict=True))
    assert (result.n, result.correct) == (60, correct)
    assert result.accuracy == pytest.approx(correct / 60)
    lo, hi = proportion_confint(correct, 60, method="wilson")
    assert result.ci95 == pytest.approx((lo, hi))
    assert result.kappa.kappa == pytest.approx(
        cohen_kappa_score(reviewer, gold, labels=list(SUPPORT))
    )
    assert result.kappa.ci95[0] <= result.kappa.kappa <= result.kappa.ci95[1]
    assert result.as_dict()["value"] == result.accuracy


def test_no_checks_is_undefined_not_zero():
    result = check_accuracy([], [], labels=SUPPORT)
    assert (result.n, result.accuracy, result.ci95) == (0, None, None)
    assert result.kappa.kappa is None


def test_a_target_rate_outside_the_chart_is_refused():
    with pytest.raises(ValueError, match="between 0 and 0.5"):
        cusum_design(0.0)
    with pytest.raises(ValueError, match="between 0 and 0.5"):
        cusum_design(0.6)
