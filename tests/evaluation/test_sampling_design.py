"""Calibration-sample designs, their estimate and the budget planner: pure functions, no database.

The simulations over a large synthetic frame live in test_sampling_simulation.py; these tests
check each function on frames small enough to verify by hand or by full enumeration.
"""

import itertools

import numpy as np
import pytest

from evaluation.calibration import Z_95, CalibrationRefused
from evaluation.sampling_design import (
    answer_residual,
    answer_uncertainty,
    design_estimate,
    draw_sample,
    expected_half_width,
    fit_residual_model,
    inclusion_probabilities,
    plan_budget,
    planner_curve,
)
from tests.evaluation.calibration_world import make_world, pilot_gold

# Ten answers: three sure of themselves, the rest increasingly unsure.
FRAME = [
    [0.0],
    [1.0, 0.0],
    [0.01],
    [0.1, 0.9],
    [0.2],
    [0.3, 0.05],
    [0.5],
    [0.45, 0.6, 0.02],
    [0.5, 0.5],
    [0.4, 0.5, 0.6],
]


def assert_clamped_proportional(pi, scores, budget, floor):
    """π = clip(c·s, floor, 1) for one c: free answers share one ratio π/s, floored ones have
    c·s ≤ floor, capped ones c·s ≥ 1; and Σ π = B."""
    assert pi.sum() == pytest.approx(budget, abs=1e-9)
    assert (pi >= floor - 1e-15).all() and (pi <= 1.0).all()
    free = (pi > floor + 1e-12) & (pi < 1.0 - 1e-12)
    assert free.any()
    c = pi[free] / scores[free]
    assert np.ptp(c) == pytest.approx(0.0, abs=1e-12)
    assert (c[0] * scores[pi <= floor + 1e-12] <= floor + 1e-12).all()
    assert (c[0] * scores[pi >= 1.0 - 1e-12] >= 1.0 - 1e-12).all()


# --- Inclusion probabilities ----------------------------------------------------------------


def test_answer_uncertainty_sums_the_chance_each_claim_is_misjudged():
    assert answer_uncertainty([0.1, 0.9, 0.5]) == pytest.approx(0.7)
    assert answer_uncertainty([]) == 0.0
    assert answer_uncertainty([0.2, None]) is None
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        answer_uncertainty([1.2])


def test_uniform_design_gives_every_answer_b_over_the_frame():
    design = inclusion_probabilities(design="uniform", budget=4, frame=FRAME)
    assert design.kind == "uniform"
    assert np.allclose(design.pi, 0.4)


def test_active_design_is_proportional_to_root_uncertainty_with_floor_and_sum_b():
    design = inclusion_probabilities(design="active", budget=4, frame=FRAME)
    scores = np.sqrt([answer_uncertainty(c) for c in FRAME])
    assert design.kind == "active" and design.fallback is None
    assert_clamped_proportional(design.pi, scores, 4, 0.1 * 4 / len(FRAME))
    # The sure answers sit at the floor, a tenth of the uniform rate: still drawable.
    assert design.pi[0] == pytest.approx(0.04) and design.pi[1] == pytest.approx(0.04)


def test_active_design_caps_at_one_and_rescales_the_rest():
    design = inclusion_probabilities(design="active", budget=8, frame=FRAME)
    scores = np.sqrt([answer_uncertainty(c) for c in FRAME])
    assert (design.pi == 1.0).sum() >= 2
    assert_clamped_proportional(design.pi, scores, 8, 0.08)


def test_active_design_on_a_large_frame_holds_its_sum_to_1e9():
    world = make_world(4, answers=3000)
    for budget in (1, 30, 300, 2900):
        pi = inclusion_probabilities(
            design="active", budget=budget, frame=world.frame_confidences()
        ).pi
        assert_clamped_proportional(pi, np.sqrt(world.uncertainty()), budget, 0.1 * budget / 3000)


def test_answers_the_judge_is_sure_of_share_what_the_unsure_cannot_take():
    # Two unsure answers can take at most 1 each; the eight sure ones share the other 3.
    frame = [[0.5], [0.4]] + [[0.0]] * 8
    pi = inclusion_probabilities(design="active", budget=5, frame=frame).pi
    assert pi.sum() == pytest.approx(5.0)
    assert pi[:2] == pytest.approx([1.0, 1.0])
    assert pi[2:] == pytest.approx([3 / 8] * 8)


def test_active_design_falls_back_to_uniform_without_confidences():
    frame = [[0.2, None], [0.4], [0.5]]
    design = inclusion_probabilities(design="active", budget=2, frame=frame)
    assert design.requested == "active" and design.kind == "uniform"
    assert design.fallback == "1 of 4 judged claims have no confidence"
    assert np.allclose(design.pi, 2 / 3)
    sure = inclusion_probabilities(design="active", budget=2, frame=[[0.0], [1.0], [0.0]])
    assert sure.kind == "uniform" and "certain" in sure.fallback


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        (11, "the budget of 11 answers exceeds the frame of 10 unlabelled answers"),
        (0, "must be a positive number of answers, got 0"),
        (-3, "must be a positive number of answers, got -3"),
    ],
)
def test_a_budget_outside_the_frame_is_an_error(budget, message):
    for design in ("uniform", "active"):
        with pytest.raises(ValueError, match=message):
            inclusion_probabilities(design=design, budget=budget, frame=FRAME)


def test_an_empty_frame_or_unknown_design_is_an_error():
    with pytest.raises(ValueError, match="the frame is empty"):
        inclusion_probabilities(design="uniform", budget=1, frame=[])
    with pytest.raises(ValueError, match="unknown design 'stratified'"):
        inclusion_probabilities(design="stratified", budget=1, frame=FRAME)


def test_a_budget_equal_to_the_frame_takes_every_answer():
    for design in ("uniform", "active"):
        pi = inclusion_probabilities(design=design, budget=10, frame=FRAME).pi
        assert np.allclose(pi, 1.0)
        assert draw_sample(pi, seed=0).all()


def test_draw_is_seeded_and_independent_per_answer():
    pi = inclusion_probabilities(
        design="active", budget=300, frame=make_world(1).frame_confidences()
    ).pi
    first, again = draw_sample(pi, seed=42), draw_sample(pi, seed=42)
    assert np.array_equal(first, again)
    assert not np.array_equal(first, draw_sample(pi, seed=43))
    counts = [draw_sample(pi, seed=s).sum() for s in range(200)]
    assert np.mean(counts) == pytest.approx(300, abs=3)  # Σ π = 300, sd ≈ 17 / √200
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        draw_sample([0.5, 0.0], seed=0)


# --- The design estimate ------------------------------------------------------------------------


def test_answer_residual_is_gold_minus_judge():
    assert answer_residual([True, False, True], [False, False, False]) == 2
    assert answer_residual([False, False], [True, True]) == -2
    assert answer_residual([True], [True]) == 0


def test_design_estimate_by_hand():
    # M = 20 claims, the judge calls 5 unsupported; two sampled answers.
    result = design_estimate(
        frame_claims=20,
        frame_judge_unsupported=5,
        sampled_pi=[0.5, 0.25],
        sampled_residuals=[1, -1],
    )
    theta = 5 / 20 + (1 / 0.5 - 1 / 0.25) / 20  # 0.15
    variance = (0.5 * 1 / 0.25 + 0.75 * 1 / 0.0625) / 400
    assert result.share.estimate == pytest.approx(theta)
    assert result.variance == pytest.approx(variance)
    half = Z_95 * np.sqrt(variance)
    assert result.share.ci95_unclipped == pytest.approx((theta - half, theta + half))
    assert result.share.clipped and result.share.ci95[0] == 0.0
    assert not result.provisional and result.answers_sampled == 2


def test_design_estimate_is_unbiased_and_its_variance_too_by_enumeration():
    """Every one of the 2⁴ Poisson samples of a four-answer frame, weighted by its probability:
    E[θ] is the frame's true share and E[Var̂] the true variance of θ, for any judge."""
    pi = np.array([0.9, 0.2, 0.5, 0.35])
    residuals = np.array([1, -2, 0, 3])
    claims, judged = 12, 4
    truth = (judged + residuals.sum()) / claims
    thetas, variances, weights = [], [], []
    for drawn in itertools.product([False, True], repeat=4):
        drawn = np.array(drawn)
        weights.append(np.prod(np.where(drawn, pi, 1 - pi)))
        result = design_estimate(
            frame_claims=claims,
            frame_judge_unsupported=judged,
            sampled_pi=pi[drawn].tolist(),
            sampled_residuals=residuals[drawn].tolist(),
        )
        thetas.append(result.share.estimate_unclipped)
        variances.append(result.variance)
    weights, thetas = np.array(weights), np.array(thetas)
    assert weights.sum() == pytest.approx(1.0)
    assert weights @ thetas == pytest.approx(truth, abs=1e-12)
    true_variance = weights @ (thetas - truth) ** 2
    assert weights @ np.array(variances) == pytest.approx(true_variance, abs=1e-12)


def test_design_estimate_is_provisional_while_sampled_answers_wait():
    result = design_estimate(
        frame_claims=40,
        frame_judge_unsupported=10,
        sampled_pi=[0.5, 0.5, 0.5],
        sampled_residuals=[1, None, None],
    )
    assert result.provisional and result.waiting == 2 and result.answers_labelled == 1
    assert result.share.estimate == pytest.approx(10 / 40 + 2 / 40)
    assert result.provisional_reason.startswith("2 sampled answers still wait")
    block = result.as_dict()
    assert block["provisional"] is True and block["answers_sampled"] == 3


def test_design_estimate_rejects_bad_input():
    with pytest.raises(CalibrationRefused, match="no judged claims"):
        design_estimate(
            frame_claims=0, frame_judge_unsupported=0, sampled_pi=[], sampled_residuals=[]
        )
    with pytest.raises(ValueError, match="between 0 and"):
        design_estimate(
            frame_claims=5, frame_judge_unsupported=6, sampled_pi=[], sampled_residuals=[]
        )
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        design_estimate(
            frame_claims=5, frame_judge_unsupported=1, sampled_pi=[0], sampled_residuals=[1]
        )
    with pytest.raises(ValueError, match="aligned"):
        design_estimate(
            frame_claims=5, frame_judge_unsupported=1, sampled_pi=[0.5], sampled_residuals=[]
        )


# --- The budget planner -------------------------------------------------------------------------


def test_uniform_plan_matches_the_closed_form():
    """With E[d²] = σ² everywhere, h(B) = 1.96·sqrt(K σ² (K/B − 1)) / M; the plan is the
    smallest whole B with h(B) ≤ the target."""
    world = make_world(2, answers=2000)
    residuals, confidences = pilot_gold(20, answers=300)
    sigma2 = np.mean(np.square(residuals))
    k, m = world.answers, world.frame_claims
    target = 0.02
    exact = k / (1 + (target * m / Z_95) ** 2 / (k * sigma2))
    plan = plan_budget(
        frame=world.frame_confidences(),
        gold_residuals=residuals,
        gold_confidences=confidences,
        half_width=target,
        planned_answers=50,
    )
    assert plan.uniform.answers == int(np.ceil(exact))
    assert plan.uniform.claims == pytest.approx(plan.uniform.answers * m / k)
    assert plan.uniform.half_width <= target
    h50 = Z_95 * np.sqrt(k * sigma2 * (k / 50 - 1)) / m
    assert plan.uniform.planned_half_width == pytest.approx(h50)


def test_active_plan_needs_fewer_answers_where_errors_concentrate():
    world = make_world(2, answers=2000)
    residuals, confidences = pilot_gold(20, answers=300)
    plan = plan_budget(
        frame=world.frame_confidences(),
        gold_residuals=residuals,
        gold_confidences=confidences,
        half_width=0.02,
    )
    assert plan.active is not None and plan.active_unavailable is None
    assert plan.active.answers < plan.uniform.answers
    assert plan.active.half_width <= 0.02
    block = plan.as_dict()
    assert block["half_width"] == 0.02
    assert set(block["uniform"]) >= {"answers", "claims"}
    assert block["active"]["answers"] == plan.active.answers


def test_plan_has_no_active_design_without_confidences():
    frame = [[None, None], [None]] * 50
    plan = plan_budget(
        frame=frame, gold_residuals=[1, 0, -1, 0], gold_confidences=[[None]] * 4, half_width=0.3
    )
    assert plan.active is None
    assert plan.active_unavailable == "in the frame, 150 of 150 judged claims have no confidence"
    assert plan.as_dict()["active"] is None


def test_plan_is_refused_when_the_gold_shows_no_judge_error():
    with pytest.raises(CalibrationRefused, match="no error on the 3 labelled answers"):
        plan_budget(frame=FRAME, gold_residuals=[0, 0, 0], gold_confidences=[[0.1]] * 3)
    with pytest.raises(CalibrationRefused, match="at least 2 labelled answers"):
        plan_budget(frame=FRAME, gold_residuals=[1], gold_confidences=[[0.1]])


def test_residual_model_weights_gold_from_a_design_by_one_over_pi():
    model = fit_residual_model(
        residuals=[2, 0, 1], uncertainties=[1.0, 0.5, 0.5], pi=[0.5, 1.0, 0.25]
    )
    w = np.array([2.0, 1.0, 4.0])
    assert model.mean_square == pytest.approx((w @ [4, 0, 1]) / w.sum())
    assert model.slope == pytest.approx((w @ [4, 0, 1]) / (w @ [1.0, 0.5, 0.5]))


def test_expected_half_width_formula():
    pi = np.array([0.5, 0.25, 1.0])
    e = np.array([1.0, 2.0, 3.0])
    variance = (0.5 * 1 / 0.5 + 0.75 * 2 / 0.25 + 0) / 100
    assert expected_half_width(pi=pi, expected_sq=e, frame_claims=10) == pytest.approx(
        Z_95 * np.sqrt(variance)
    )


def test_planner_curve_falls_with_the_budget_and_active_sits_below_uniform():
    world = make_world(2, answers=2000)
    residuals, confidences = pilot_gold(20, answers=300)
    curve = planner_curve(
        frame=world.frame_confidences(), gold_residuals=residuals, gold_confidences=confidences
    )
    assert curve[0].answers == 1 and curve[-1].answers == 2000
    assert curve[-1].uniform == 0.0 and curve[-1].active == 0.0
    uniform = [p.uniform for p in curve]
    active = [p.active for p in curve]
    assert uniform == sorted(uniform, reverse=True)
    assert active == sorted(active, reverse=True)
    assert all(a < u for a, u in zip(active[:-1], uniform[:-1], strict=True))
