"""PPI++, strata, three-way shares and the judge gate: pure functions, no database.

Cross-checked against the reference implementations: ppi_py itself (PPI++), a closed-form
recomputation (λ and the strata), and statsmodels' exact McNemar test (the gate).
"""

import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy.stats import norm
from statsmodels.stats.contingency_tables import mcnemar

from evaluation.calibration import CalibrationRefused, ppi_mean
from evaluation.estimators import (
    StratumSample,
    clip_share,
    judge_gate,
    label_indicator,
    mcnemar_exact,
    ppi_plus_plus,
    stratified_ppi_plus_plus,
    three_way_shares,
)
from tests.evaluation.calibration_world import demo_shaped, from_cells, judged_sample

ROOT = Path(__file__).resolve().parents[2]


DATA_SETS = {
    "demo-shaped (52 gold, 23 target)": demo_shaped(),
    "hundred gold, three hundred target": judged_sample(7, n=100, big_n=300),
    "tiny (3 gold, 2 target)": (
        np.array([1, 0, 0], dtype=bool),
        np.array([1, 1, 0], dtype=bool),
        np.array([0, 1], dtype=bool),
    ),
    # A judge that agrees perfectly on a balanced gold, and a target it calls almost all
    # supported: Cov(Y, Ŷ) far exceeds the pooled variance, so λ is clipped to 1.
    "lambda clipped to 1": (
        np.array([1] * 5 + [0] * 5, dtype=bool),
        np.array([1] * 5 + [0] * 5, dtype=bool),
        np.array([1] * 20 + [0] * 980, dtype=bool),
    ),
    # A judge that says the opposite of gold: the covariance is negative, λ is clipped to 0.
    "lambda clipped to 0": (
        np.array([1] * 6 + [0] * 14, dtype=bool),
        np.array([0] * 6 + [1] * 14, dtype=bool),
        judged_sample(3, n=2, big_n=200)[2],
    ),
}


def keywords(data_set) -> dict:
    return dict(zip(("gold", "judge_gold", "judge_target"), data_set, strict=True))


def reference(gold, judge, target, lam=None):
    y, yhat, yu = (np.asarray(a, dtype=float) for a in (gold, judge, target))
    estimate = ppi_mean_pointestimate(y, yhat, yu, lam=lam)
    low, high = ppi_mean_ci(y, yhat, yu, alpha=0.05, lam=lam)
    return float(np.ravel(estimate)[0]), float(np.ravel(low)[0]), float(np.ravel(high)[0])


def independent_lambda(gold, judge, target) -> float:
    """λ = Cov(Y, Ŷ) / ((1 + n/N)·Var(Ŷ ∪ Ŷ_target)), written independently of the module."""
    y, yhat = np.asarray(gold, dtype=float), np.asarray(judge, dtype=float)
    pooled = [float(v) for v in np.concatenate([judge, target])]
    cov = np.cov(y, yhat, bias=True)[0, 1]  # divided by n
    return min(1.0, max(0.0, cov / ((1 + len(gold) / len(target)) * statistics.variance(pooled))))


# --- PPI++ ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", DATA_SETS)
def test_ppi_plus_plus_equals_ppi_py_with_tuned_lambda(name):
    gold, judge, target = DATA_SETS[name]
    result = ppi_plus_plus(gold=gold, judge_gold=judge, judge_target=target)
    estimate, low, high = reference(gold, judge, target)

    assert result.share.estimate_unclipped == pytest.approx(estimate, abs=1e-9)
    assert result.ci95_unclipped == pytest.approx((low, high), abs=1e-9)
    assert (result.n, result.target_n) == (len(gold), len(target))
    # The λ it reports is the one ppi_py tuned: passing it back reproduces the interval.
    assert reference(gold, judge, target, lam=result.lam) == pytest.approx(
        (estimate, low, high), abs=1e-12
    )


@pytest.mark.parametrize("name", DATA_SETS)
def test_ppi_lambda_matches_an_independent_closed_form(name):
    gold, judge, target = DATA_SETS[name]
    lam = ppi_plus_plus(gold=gold, judge_gold=judge, judge_target=target).lam
    assert lam == pytest.approx(independent_lambda(gold, judge, target), abs=1e-12)


def test_lambda_is_clipped_into_the_unit_interval():
    assert ppi_plus_plus(**keywords(DATA_SETS["lambda clipped to 1"])).lam == 1.0
    assert ppi_plus_plus(**keywords(DATA_SETS["lambda clipped to 0"])).lam == 0.0
    # λ = 0 is the gold-only mean; its interval ignores the judge.
    gold, judge, target = DATA_SETS["lambda clipped to 0"]
    assert ppi_plus_plus(
        gold=gold, judge_gold=judge, judge_target=target
    ).share.estimate_unclipped == pytest.approx(gold.mean())


def test_a_judge_with_one_label_gets_lambda_zero_and_the_gold_mean():
    gold = np.array([1, 0, 0, 1, 0], dtype=bool)
    result = ppi_plus_plus(
        gold=gold, judge_gold=np.zeros(5, dtype=bool), judge_target=np.zeros(40, dtype=bool)
    )
    assert result.lam == 0.0
    assert result.estimate == pytest.approx(0.4)
    # ppi_py's λ is rounding noise here, but the estimate and interval do not depend on it.
    assert result.ci95_unclipped == pytest.approx(
        reference(gold, np.zeros(5), np.zeros(40))[1:], abs=1e-9
    )


def test_ppi_plus_plus_is_refused_below_two_items_on_either_side():
    with pytest.raises(CalibrationRefused, match="2 gold claims, got 1"):
        ppi_plus_plus(gold=[True], judge_gold=[True], judge_target=[False, True])
    with pytest.raises(CalibrationRefused, match="2 target claims, got 0"):
        ppi_plus_plus(gold=[True, False], judge_gold=[True, False], judge_target=[])
    with pytest.raises(ValueError, match="aligned"):
        ppi_plus_plus(gold=[True, False], judge_gold=[True], judge_target=[False, True])


def test_an_interval_leaving_the_unit_interval_is_clipped_and_says_so():
    # A share near 0 on little gold: the normal interval's lower end falls below 0.
    gold, judge = from_cells(tn=18, tp=1, fp=1, fn=0)
    result = ppi_plus_plus(
        gold=gold, judge_gold=judge, judge_target=np.array([1] + [0] * 29, dtype=bool)
    )
    assert result.clipped
    assert result.ci95[0] == 0.0 and result.ci95_unclipped[0] < 0.0
    assert result.ci95[1] == result.ci95_unclipped[1]
    block = result.as_dict()
    assert block["clipped"] is True
    assert block["unclipped"]["ci95"][0] == result.ci95_unclipped[0]
    assert set(block) >= {"estimate", "ci95", "lambda"}


def test_clip_share_keeps_inside_values_and_flags_outside_ones():
    inside = clip_share(0.2, 0.1, 0.3)
    assert not inside.clipped and inside.ci95 == (0.1, 0.3)
    outside = clip_share(-0.01, -0.05, 0.03)
    assert outside.clipped
    assert (outside.estimate, outside.ci95) == (0.0, (0.0, 0.03))
    assert outside.estimate_unclipped == -0.01


def test_ppi_plus_plus_is_narrower_than_classic_ppi_on_the_demo_shaped_data():
    gold, judge, target = demo_shaped()
    plus = ppi_plus_plus(gold=gold, judge_gold=judge, judge_target=target)
    classic = ppi_mean(target, judge, gold)
    width_plus = plus.ci95_unclipped[1] - plus.ci95_unclipped[0]
    width_classic = classic.ci95[1] - classic.ci95[0]
    assert width_plus < width_classic


def test_importing_the_estimators_does_not_load_ppi_py_or_numba():
    code = (
        "import sys, evaluation.estimators, evaluation.sampling_design; "
        "print(sorted(m for m in ('ppi_py', 'numba') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


# --- Strata -----------------------------------------------------------------------------------


def independent_stratum(gold, judge, target) -> tuple[float, float]:
    """θ_h and Var_h of PPI++ from the formulas, without ppi_py."""
    y, yhat, yu = (np.asarray(a, dtype=float) for a in (gold, judge, target))
    lam = independent_lambda(gold, judge, target)
    theta = lam * yu.mean() + (y - lam * yhat).mean()
    var = lam**2 * yu.var() / yu.size + (y - lam * yhat).var() / y.size
    return theta, var


STRATA = {
    "baseline": StratumSample(*judged_sample(11, n=60, big_n=400, share=0.35)),
    "verifier": StratumSample(*judged_sample(12, n=45, big_n=250, share=0.15)),
    "reranker": StratumSample(*judged_sample(13, n=30, big_n=150, share=0.25, tpr=0.6)),
}


def test_stratified_estimate_matches_an_independent_computation():
    result = stratified_ppi_plus_plus(STRATA)
    big_n = sum(len(s.judge_target) for s in STRATA.values())
    parts = [
        (len(s.judge_target) / big_n, *independent_stratum(s.gold, s.judge_gold, s.judge_target))
        for s in STRATA.values()
    ]
    theta = sum(w * t for w, t, _ in parts)
    half = norm.ppf(0.975) * np.sqrt(sum(w**2 * v for w, _, v in parts))

    assert result.refused is None
    assert result.share.estimate_unclipped == pytest.approx(theta, abs=1e-9)
    assert result.share.ci95_unclipped == pytest.approx((theta - half, theta + half), abs=1e-9)
    rows = result.as_dict()["strata"]
    assert [r["name"] for r in rows] == list(STRATA)
    assert [(r["n"], r["target_n"]) for r in rows] == [
        (len(s.gold), len(s.judge_target)) for s in STRATA.values()
    ]
    for row, (_, t, _) in zip(rows, parts, strict=True):
        assert row["estimate"] == pytest.approx(t, abs=1e-9)


def test_a_single_stratum_gives_back_its_ppi_plus_plus_interval():
    sample = STRATA["baseline"]
    alone = ppi_plus_plus(
        gold=sample.gold, judge_gold=sample.judge_gold, judge_target=sample.judge_target
    )
    result = stratified_ppi_plus_plus({"all": sample})
    assert result.share.estimate == pytest.approx(alone.estimate, abs=1e-12)
    assert result.share.ci95_unclipped == pytest.approx(alone.ci95_unclipped, abs=1e-12)


def test_a_stratum_too_small_refuses_the_stratified_estimate_and_names_it():
    strata = {**STRATA, "tiny": StratumSample([True], [True], [False, True, False])}
    result = stratified_ppi_plus_plus(strata)
    tiny = result.strata[-1]
    assert tiny.result is None and "at least 2 gold claims, got 1" in tiny.refused
    assert result.share is None
    assert "'tiny'" in result.refused
    block = result.as_dict()
    assert block["stratified"]["estimate"] is None and "'tiny'" in block["stratified"]["refused"]
    assert block["strata"][-1]["refused"] == tiny.refused
    # The other strata are still reported.
    assert all(row.result is not None for row in result.strata[:-1])


def test_a_stratum_without_target_claims_weighs_nothing_and_blocks_nothing():
    strata = {**STRATA, "no target": StratumSample([True, False, False], [True, False, True], [])}
    with_empty = stratified_ppi_plus_plus(strata)
    assert with_empty.strata[-1].refused is not None
    assert with_empty.refused is None
    assert with_empty.share == stratified_ppi_plus_plus(STRATA).share


# --- Three-way shares ---------------------------------------------------------------------------


def test_three_way_shares_are_ppi_plus_plus_of_each_label_indicator():
    rng = np.random.default_rng(5)
    labels = np.array(["supported", "contradicted", "insufficient_evidence"])
    gold = list(labels[rng.choice(3, 80, p=[0.6, 0.15, 0.25])])
    judge = [g if rng.random() < 0.8 else str(labels[rng.integers(3)]) for g in gold]
    target = list(labels[rng.choice(3, 300, p=[0.55, 0.2, 0.25])])
    shares = three_way_shares(gold=gold, judge_gold=judge, judge_target=target)

    assert list(shares) == ["contradicted", "insufficient_evidence"]
    for label, result in shares.items():
        by_hand = [np.array([v == label for v in side]) for side in (gold, judge, target)]
        assert result.share.estimate_unclipped == pytest.approx(reference(*by_hand)[0], abs=1e-9)


def test_three_way_shares_refuse_a_binary_label():
    with pytest.raises(CalibrationRefused, match="'unsupported'"):
        label_indicator(["supported", "unsupported"], "contradicted")
    with pytest.raises(ValueError, match="not a three-way support label"):
        label_indicator(["supported"], "unsupported")


# --- Judge gate ---------------------------------------------------------------------------------


def paired(both_right: int, candidate_only: int, baseline_only: int, both_wrong: int):
    cand = [True] * both_right + [True] * candidate_only + [False] * baseline_only
    base = [True] * both_right + [False] * candidate_only + [True] * baseline_only
    return cand + [False] * both_wrong, base + [False] * both_wrong


def test_mcnemar_matches_statsmodels_exact_test():
    for cells in [(50, 3, 12, 5), (40, 9, 4, 7), (20, 0, 6, 2), (30, 5, 5, 0)]:
        cand, base = paired(*cells)
        table = [[cells[0], cells[1]], [cells[2], cells[3]]]
        assert mcnemar_exact(cand, base).p_value == pytest.approx(
            mcnemar(table, exact=True).pvalue, abs=1e-12
        )


def test_gate_fails_when_the_kappa_interval_reaches_under_the_bound():
    result = judge_gate(kappa_lower=0.52, min_kappa=0.6)
    assert not result.passed
    assert result.reasons == (
        "the lower end of the judge's kappa interval, 0.520, is under the minimum 0.60",
    )
    assert judge_gate(kappa_lower=0.6, min_kappa=0.6).passed


def test_gate_fails_when_kappa_is_undefined():
    result = judge_gate(kappa_lower=None, min_kappa=0.6)
    assert not result.passed and "undefined" in result.reasons[0]


def test_gate_fails_a_candidate_significantly_worse_than_its_baseline():
    cand, base = paired(50, 3, 14, 5)  # p ≈ 0.013, the candidate alone right less often
    result = judge_gate(
        kappa_lower=0.7,
        min_kappa=0.6,
        candidate_correct=cand,
        baseline_correct=base,
        candidate="strict-judge-v2",
        baseline="strict-judge-v1",
    )
    assert not result.passed
    assert result.mcnemar.p_value < 0.05
    assert result.reasons[1].startswith(
        "on the 72 gold items both judges scored, strict-judge-v2 alone is right on 3 and "
        "strict-judge-v1 alone on 14: an exact McNemar test finds strict-judge-v2 worse"
    )
    assert result.as_dict() == {"passed": False, "reasons": list(result.reasons)}


def gate_with_baseline(*cells: int):
    cand, base = paired(*cells)
    return judge_gate(kappa_lower=0.7, min_kappa=0.6, candidate_correct=cand, baseline_correct=base)


def test_gate_passes_a_candidate_that_is_significantly_better_or_not_different():
    better = gate_with_baseline(50, 14, 3, 5)
    assert better.passed and better.mcnemar.p_value < 0.05
    close = gate_with_baseline(50, 5, 9, 5)
    assert close.passed and close.mcnemar.p_value > 0.05
    same = gate_with_baseline(40, 0, 0, 3)
    assert same.passed and same.mcnemar.p_value is None
    assert "right on the same items" in same.reasons[1]


def test_gate_lists_every_failed_check():
    cand, base = paired(50, 3, 14, 5)
    result = judge_gate(
        kappa_lower=0.4, min_kappa=0.6, candidate_correct=cand, baseline_correct=base
    )
    assert not result.passed and len(result.reasons) == 2
    assert "under the minimum" in result.reasons[0] and "worse" in result.reasons[1]


def test_gate_needs_both_judges_paired():
    with pytest.raises(ValueError, match="both judges"):
        judge_gate(kappa_lower=0.7, min_kappa=0.6, candidate_correct=[True])
    with pytest.raises(ValueError, match="paired"):
        judge_gate(kappa_lower=0.7, min_kappa=0.6, candidate_correct=[True], baseline_correct=[])
