"""Judge calibration statistics: pure functions, no database."""

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_recall_fscore_support

from evaluation.agreement import KAPPA_UNDEFINED_ONE_LABEL, SUPPORT
from evaluation.calibration import (
    CalibrationRefused,
    binary_rates,
    corrected_estimates,
    judge_report,
    ppi_mean,
    rogan_gladen,
    rogan_gladen_interval,
    unsupported_indicator,
)

TRUE_RATE, JUDGE_TPR, JUDGE_TNR = 0.2, 0.8, 0.9


def simulate(rng, n_gold=300, n_target=2000):
    """Claims with a true unsupported share of 0.2, labelled by a judge with TPR 0.8, TNR 0.9."""

    def judge(truth):
        return np.where(
            truth, rng.random(truth.size) < JUDGE_TPR, rng.random(truth.size) >= JUDGE_TNR
        )

    gold = rng.random(n_gold) < TRUE_RATE
    target_truth = rng.random(n_target) < TRUE_RATE
    return gold, judge(gold), judge(target_truth)


def test_judge_report_confusion_kappa_and_scores_match_sklearn():
    rng = np.random.default_rng(2)
    gold = [SUPPORT[i] for i in rng.integers(0, 3, 150)]
    judge = [g if rng.random() < 0.7 else SUPPORT[rng.integers(0, 3)] for g in gold]
    report = judge_report(gold, judge)

    assert report.n == 150
    assert np.array_equal(report.matrix, confusion_matrix(gold, judge, labels=list(SUPPORT)))
    assert report.kappa == pytest.approx(cohen_kappa_score(gold, judge, labels=list(SUPPORT)))
    assert report.accuracy == pytest.approx(np.mean(np.array(gold) == np.array(judge)))
    precision, recall, f1, support = precision_recall_fscore_support(
        gold, judge, labels=list(SUPPORT)
    )
    for i, scores in enumerate(report.per_label):
        assert scores.label == SUPPORT[i]
        assert scores.precision == pytest.approx(precision[i])
        assert scores.recall == pytest.approx(recall[i])
        assert scores.f1 == pytest.approx(f1[i])
        assert scores.support == support[i]


def test_confusion_rows_are_gold_and_columns_are_the_judge():
    report = judge_report(["supported", "supported"], ["contradicted", "supported"])
    assert report.as_dict()["confusion"] == {
        "labels": list(SUPPORT),
        "matrix": [[1, 1, 0], [0, 0, 0], [0, 0, 0]],
    }


def test_undefined_precision_and_recall_are_none_not_zero():
    gold = ["supported", "supported", "insufficient_evidence", "insufficient_evidence"]
    judge = ["supported", "contradicted", "supported", "supported"]
    by_label = {s.label: s for s in judge_report(gold, judge).per_label}
    # The judge never said insufficient_evidence: precision undefined. Recall is a real 0.
    assert by_label["insufficient_evidence"].precision is None
    assert by_label["insufficient_evidence"].recall == 0.0
    # Gold has no contradicted claim: recall undefined; the judge's one call was wrong.
    assert by_label["contradicted"].recall is None
    assert by_label["contradicted"].precision == 0.0
    assert by_label["contradicted"].support == 0
    json.dumps(judge_report(gold, judge).as_dict())


def test_judge_report_kappa_is_none_when_gold_and_judge_use_one_label():
    report = judge_report(["supported"] * 4, ["supported"] * 4)
    assert report.kappa is None
    assert report.kappa_undefined_reason == KAPPA_UNDEFINED_ONE_LABEL
    assert report.accuracy == 1.0


def test_judge_report_on_no_items_is_empty_not_an_error():
    report = judge_report([], [])
    assert report.n == 0
    assert report.accuracy is None
    assert report.kappa is None
    assert report.matrix == ((0, 0, 0),) * 3


def test_unsupported_class_is_contradicted_or_insufficient_evidence():
    assert unsupported_indicator(list(SUPPORT)).tolist() == [False, True, True]
    with pytest.raises(ValueError, match="unclear"):
        unsupported_indicator(["supported", "unclear"])


def test_tpr_and_tnr_by_hand():
    gold = ["contradicted", "insufficient_evidence", "contradicted", "contradicted"]
    gold += ["supported"] * 6
    judge = ["insufficient_evidence", "supported", "contradicted", "contradicted"]
    judge += ["supported"] * 5 + ["contradicted"]
    rates = binary_rates(gold, judge)
    # Gold unsupported: 4, of which the judge calls 3 unsupported (a different unsupported
    # label still counts). Gold supported: 6, of which the judge calls 5 supported.
    assert (rates.positives, rates.true_positives) == (4, 3)
    assert (rates.negatives, rates.true_negatives) == (6, 5)
    assert rates.tpr == pytest.approx(3 / 4)
    assert rates.tnr == pytest.approx(5 / 6)


def test_rates_are_none_when_a_gold_class_is_missing():
    rates = binary_rates(["supported"] * 3, ["supported", "contradicted", "supported"])
    assert rates.tpr is None
    assert rates.tnr == pytest.approx(2 / 3)


def test_rogan_gladen_closed_form_on_exact_numbers():
    assert rogan_gladen(0.3, 0.8, 0.9) == pytest.approx((0.3 + 0.9 - 1) / (0.8 + 0.9 - 1))
    assert rogan_gladen(0.3, 0.8, 0.9) == pytest.approx(2 / 7)
    # A judge with TPR 0.8, TNR 0.9 on a true share of 0.2 observes 0.2·0.8 + 0.8·0.1 = 0.24.
    assert rogan_gladen(0.24, 0.8, 0.9) == pytest.approx(0.2)


def test_rogan_gladen_is_clipped_to_the_unit_interval():
    assert rogan_gladen(0.05, 0.8, 0.9) == 0.0
    assert rogan_gladen(0.95, 0.8, 0.9) == 1.0


@pytest.mark.parametrize(("tpr", "tnr"), [(0.5, 0.5), (0.3, 0.4), (0.0, 1.0)])
def test_rogan_gladen_refuses_a_judge_no_better_than_chance(tpr, tnr):
    with pytest.raises(CalibrationRefused, match="TPR \\+ TNR"):
        rogan_gladen(0.3, tpr, tnr)


def test_rogan_gladen_refuses_when_a_gold_class_is_missing():
    with pytest.raises(CalibrationRefused, match="class is missing"):
        rogan_gladen(0.3, None, 0.9)
    gold = np.zeros(20, dtype=bool)
    with pytest.raises(CalibrationRefused, match="class is missing"):
        rogan_gladen_interval(gold, gold, np.array([True, False, False]))


def test_rogan_gladen_interval_is_reproducible_and_counts_skipped_replicates():
    gold = np.array([True, False, False, False, False, False, False, False])
    judge = np.array([True, False, False, False, False, False, False, True])
    target = np.array([True] * 3 + [False] * 7)
    first = rogan_gladen_interval(gold, judge, target, n_boot=500, seed=4)
    again = rogan_gladen_interval(gold, judge, target, n_boot=500, seed=4)
    assert first == again
    # One positive among eight: it vanishes from about (7/8)^8 ≈ 34% of the resamples.
    assert 100 < first.skipped < 250
    assert first.estimate == pytest.approx(rogan_gladen(0.3, 1.0, 6 / 7))


def test_ppi_estimate_and_interval_by_hand():
    judge_target = np.array([1, 0, 0, 1, 0, 0, 0, 1, 0, 0], dtype=bool)
    judge_gold = np.array([1, 1, 0, 0, 0, 1], dtype=bool)
    gold = np.array([1, 0, 0, 1, 0, 1], dtype=bool)
    result = ppi_mean(judge_target, judge_gold, gold)
    diff = np.array([0, 1, 0, -1, 0, 0])
    estimate = 0.3 - diff.mean()
    half = 1.96 * np.sqrt(
        np.var([1, 0, 0, 1, 0, 0, 0, 1, 0, 0], ddof=1) / 10 + diff.var(ddof=1) / 6
    )
    assert result.estimate == pytest.approx(estimate)
    assert result.ci95[0] == pytest.approx(estimate - half)
    assert result.ci95[1] == pytest.approx(estimate + half)


@pytest.mark.parametrize(("n_target", "n_gold"), [(1, 10), (10, 1), (0, 10)])
def test_ppi_refuses_fewer_than_two_items_on_either_side(n_target, n_gold):
    with pytest.raises(CalibrationRefused, match="at least 2"):
        ppi_mean(np.ones(n_target, bool), np.ones(n_gold, bool), np.ones(n_gold, bool))


def test_corrected_estimates_have_the_spec_shape_and_report_refusals():
    rng = np.random.default_rng(0)
    gold, judge_gold, judge_target = simulate(rng, n_gold=120, n_target=900)
    corrected = corrected_estimates(gold, judge_gold, judge_target, seed=1)
    assert corrected["target_n"] == 900
    assert corrected["p_obs"] == pytest.approx(judge_target.mean())
    assert set(corrected["rogan_gladen"]) >= {"estimate", "ci95"}
    assert set(corrected["ppi"]) == {"estimate", "ci95"}
    json.dumps(corrected)

    coin = corrected_estimates(gold, ~gold, judge_target)  # TPR = TNR = 0
    assert set(coin["rogan_gladen"]) == {"refused"}
    assert "estimate" in coin["ppi"]


def test_both_corrections_cover_a_known_true_rate_in_most_repetitions():
    rg_hits = ppi_hits = 0
    repetitions = 50
    for seed in range(repetitions):
        rng = np.random.default_rng(1000 + seed)
        gold, judge_gold, judge_target = simulate(rng)

        rg = rogan_gladen_interval(gold, judge_gold, judge_target, seed=seed)
        tpr = judge_gold[gold].mean()
        tnr = (~judge_gold[~gold]).mean()
        p_obs = judge_target.mean()
        expected_rg = min(1.0, max(0.0, (p_obs + tnr - 1) / (tpr + tnr - 1)))
        assert rg.estimate == pytest.approx(expected_rg)
        rg_hits += rg.ci95[0] <= TRUE_RATE <= rg.ci95[1]

        ppi = ppi_mean(judge_target, judge_gold, gold)
        expected_ppi = judge_target.mean() - (judge_gold.astype(float) - gold).mean()
        assert ppi.estimate == pytest.approx(expected_ppi)
        ppi_hits += ppi.ci95[0] <= TRUE_RATE <= ppi.ci95[1]

    assert rg_hits >= 0.85 * repetitions
    assert ppi_hits >= 0.85 * repetitions
