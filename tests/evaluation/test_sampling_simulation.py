"""Issue #31's "Done when", by simulation: the design estimate's interval covers, active sampling
narrows it, and the budget planner predicts it.

The world is described in tests/evaluation/calibration_world.py: a frame of 5,000 answers with
1–6 claims each (about 17,500 claims); a fifth of the answers are hard and hold most of the
uncertain claims (judge confidence p ~ Beta(2, 2)); every other claim is clear-cut
(p ~ Beta(0.5, 30) or its mirror). The truth is drawn so the judge is calibrated —
P(unsupported) = p — and the judge calls a claim unsupported when p > 0.5, so it errs with
probability min(p, 1 − p), mostly on the hard answers (about 5% of claims wrong, a third
unsupported). The chance judge's confidences come from the same mixture but independently of
the truth. Each repetition redraws the truth of every claim and a fresh Poisson sample; the
estimate's target is that repetition's true share of the frame.

The fast tests use one world and 2,000 repetitions per design (about 1 s each); the slow one
repeats them over more worlds and budgets (``-m slow``). bench/calibration_simulation.py prints
the same numbers.
"""

import numpy as np
import pytest

from evaluation.sampling_design import (
    design_estimate,
    draw_sample,
    inclusion_probabilities,
    plan_budget,
    planner_curve,
)
from tests.evaluation.calibration_world import (
    draw_truth,
    estimate_batch,
    make_world,
    pilot_gold,
    replicate,
)

BUDGET = 300  # expected answers sampled
REPS = 2000
MIN_COVERAGE = 0.93


@pytest.fixture(scope="module")
def world():
    return make_world(0)


@pytest.fixture(scope="module")
def chance_world():
    return make_world(0, chance=True)


def test_vectorised_replications_equal_the_design_estimate(world):
    """The simulation's batch formula is the module's design_estimate, repetition by repetition."""
    pi = inclusion_probabilities(design="active", budget=BUDGET, frame=world.frame_confidences()).pi
    residuals, _ = draw_truth(world, np.random.default_rng(9), 3)
    drawn = np.array([draw_sample(pi, seed=s) for s in range(3)])
    estimates, half_widths = estimate_batch(world, pi, residuals, drawn)
    for row in range(3):
        result = design_estimate(
            frame_claims=world.frame_claims,
            frame_judge_unsupported=int(world.judge.sum()),
            sampled_pi=pi[drawn[row]].tolist(),
            sampled_residuals=residuals[row, drawn[row]].tolist(),
        )
        assert result.share.estimate_unclipped == pytest.approx(estimates[row], abs=1e-12)
        lo, hi = result.share.ci95_unclipped
        assert (hi - lo) / 2 == pytest.approx(half_widths[row], abs=1e-12)


@pytest.mark.parametrize("design", ["uniform", "active"])
def test_design_interval_covers_the_true_share(world, design):
    result = replicate(world, design=design, budget=BUDGET, reps=REPS, seed=1)
    assert result.coverage >= MIN_COVERAGE
    assert result.sampled.mean() == pytest.approx(BUDGET, abs=2)


@pytest.mark.parametrize("design", ["uniform", "active"])
def test_design_interval_covers_the_true_share_with_a_chance_judge(chance_world, design):
    """Unbiased whatever the judge: a judge whose calls say nothing still gets an honest
    (wide) interval."""
    result = replicate(chance_world, design=design, budget=BUDGET, reps=REPS, seed=2)
    assert result.coverage >= MIN_COVERAGE


def test_active_design_is_at_least_a_fifth_narrower_at_the_same_budget(world):
    uniform = replicate(world, design="uniform", budget=BUDGET, reps=REPS, seed=3)
    active = replicate(world, design="active", budget=BUDGET, reps=REPS, seed=3)
    assert active.sampled.mean() == pytest.approx(uniform.sampled.mean(), rel=0.01)
    assert active.mean_half_width <= 0.8 * uniform.mean_half_width


def test_planner_predicts_the_realised_half_width_within_15_percent(world):
    """Plan for a 95% half-width of 0.015 from a gold of 2,000 labelled answers of the same
    world (large enough that the plan's error is the planner's, not the gold's sampling noise:
    bench/calibration_simulation.py shows how that noise grows on a small gold), then draw
    the planned samples: the mean realised half-width is within ±15% of the prediction."""
    residuals, confidences = pilot_gold(50, answers=2000)
    plan = plan_budget(
        frame=world.frame_confidences(),
        gold_residuals=residuals,
        gold_confidences=confidences,
        half_width=0.015,
    )
    for planned in (plan.uniform, plan.active):
        realised = replicate(
            world, design=planned.design, budget=planned.answers, reps=REPS, seed=4
        )
        assert planned.half_width == pytest.approx(realised.mean_half_width, rel=0.15)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [11, 12, 13])
@pytest.mark.parametrize("budget", [60, 300, 1500])
def test_coverage_width_and_plan_hold_over_more_worlds_and_budgets(seed, budget):
    calibrated, chance = make_world(seed), make_world(seed, chance=True)
    residuals, confidences = pilot_gold(seed + 100, answers=3000)
    (expected,) = planner_curve(
        frame=calibrated.frame_confidences(),
        gold_residuals=residuals,
        gold_confidences=confidences,
        budgets=[budget],
    )
    widths = {}
    for design in ("uniform", "active"):
        result = replicate(calibrated, design=design, budget=budget, reps=3000, seed=seed)
        assert result.coverage >= MIN_COVERAGE
        assert getattr(expected, design) == pytest.approx(result.mean_half_width, rel=0.15)
        widths[design] = result.mean_half_width
        with_chance = replicate(chance, design=design, budget=budget, reps=3000, seed=seed)
        assert with_chance.coverage >= MIN_COVERAGE
    assert widths["active"] <= 0.8 * widths["uniform"]


@pytest.mark.parametrize("pilot_design", ["uniform", "active"])
def test_planner_learns_from_the_team_s_own_calibration_sample(world, pilot_design):
    """The path docs/calibration.md follows: label one calibration sample of B = 300 expected
    answers, then plan from its gold alone, each answer weighted 1/π (as
    evaluation.reports.calibration_plan does when all gold came from samples). Over 40 such
    samples -- each a fresh truth and a fresh draw -- the mean predicted half-width at B = 300
    is within ±15% of the realised mean for both designs, and so is the median; an active
    sample's gold read unweighted would overstate the frame's errors, and the uniform plan
    with it."""
    frame = world.frame_confidences()
    pi = inclusion_probabilities(design=pilot_design, budget=BUDGET, frame=frame).pi
    realised = {
        d: replicate(world, design=d, budget=BUDGET, reps=REPS, seed=4).mean_half_width
        for d in ("uniform", "active")
    }
    predicted: dict[str, list[float]] = {"uniform": [], "active": [], "unweighted": []}
    for pilot in range(40):
        residuals, _ = draw_truth(world, np.random.default_rng(100 + pilot), 1)
        drawn = np.flatnonzero(draw_sample(pi, seed=200 + pilot))
        gold = {
            "frame": frame,
            "gold_residuals": residuals[0, drawn].tolist(),
            "gold_confidences": [frame[i] for i in drawn],
            "budgets": [BUDGET],
        }
        (point,) = planner_curve(**gold, gold_pi=pi[drawn].tolist())
        (unweighted,) = planner_curve(**gold)
        predicted["uniform"].append(point.uniform)
        predicted["active"].append(point.active)
        predicted["unweighted"].append(unweighted.uniform)
    for design in ("uniform", "active"):
        assert np.mean(predicted[design]) == pytest.approx(realised[design], rel=0.15)
        assert np.median(predicted[design]) == pytest.approx(realised[design], rel=0.15)
    weighted_error = abs(np.mean(predicted["uniform"]) / realised["uniform"] - 1)
    unweighted_error = abs(np.mean(predicted["unweighted"]) / realised["uniform"] - 1)
    if pilot_design == "active":
        assert unweighted_error > 0.15 > weighted_error
