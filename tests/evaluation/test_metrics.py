"""Pure tests of evaluation.metrics: no database, worked checks from the seed documents."""

import random

import numpy as np
import pytest

from evaluation import metrics
from evaluation.metrics import (
    AbstentionRow,
    ClaimCitations,
    NotEligible,
    abstention_summary,
    citation_coverage,
    citation_precision,
    claim_faithfulness,
    cost_summary,
    failure_label_counts,
    generation_variance,
    latency_summary,
    mean_over_eligible,
    paired_bootstrap_diff,
    paired_transitions,
    per_case_mean,
    reciprocal_rank_fusion,
    reciprocal_rank_fusion_scores,
    relevance_distribution,
    retrieval_scores,
    retrieval_scores_at,
    suite_retrieval_scores,
)

DEADLOCK_GRADES = {"deadlock-definition": 3, "deadlock-example": 1}
DEADLOCK_RANKING = ["cpu-scheduling", "deadlock-example", "deadlock-definition"]


# Retrieval: worked checks -----------------------------------------------------------------------


def test_deadlock_example_scores_recall_1_rr_half_ndcg_0_541():
    scores = retrieval_scores(DEADLOCK_RANKING, DEADLOCK_GRADES, 3)

    assert scores.recall == 1.0
    assert scores.reciprocal_rank == 0.5
    assert round(scores.ndcg, 3) == 0.541
    assert scores.precision == pytest.approx(2 / 3)


def test_moving_the_definition_first_keeps_recall_and_improves_ranking_metrics():
    ranking = ["deadlock-definition", "deadlock-example", "cpu-scheduling"]

    scores = retrieval_scores(ranking, DEADLOCK_GRADES, 3)

    assert scores.recall == 1.0
    assert scores.reciprocal_rank == 1.0
    assert scores.ndcg == pytest.approx(1.0)


THREE_QUESTIONS = [
    (["c1", "c7", "c3", "c9", "c2"], {"c1": 1}),
    (["c4", "c8", "c2", "c5", "c6"], {"c2": 1}),
    (["c9", "c8", "c7", "c6", "c5"], {"c1": 1, "c2": 1}),
]


def test_three_question_table_matches_the_lesson_at_k3():
    per_question = [retrieval_scores(ranked, grades, 3) for ranked, grades in THREE_QUESTIONS]

    assert [s.recall for s in per_question] == [1.0, 1.0, 0.0]
    assert [round(s.precision, 2) for s in per_question] == [0.33, 0.33, 0.0]
    assert [round(s.reciprocal_rank, 2) for s in per_question] == [1.0, 0.33, 0.0]


def test_binary_grades_make_exponential_ndcg_equal_the_lessons_binary_ndcg_at_5():
    per_question = [retrieval_scores(ranked, grades, 5) for ranked, grades in THREE_QUESTIONS]

    assert [s.ndcg for s in per_question] == pytest.approx([1.0, 0.5, 0.0])


def test_precision_divides_by_k_even_when_fewer_passages_were_returned():
    scores = retrieval_scores(["a"], {"a": 1}, 5)

    assert scores.precision == 0.2
    assert scores.recall == 1.0


def test_reciprocal_rank_ignores_a_relevant_passage_below_the_cutoff():
    assert retrieval_scores(["x", "y", "a"], {"a": 2}, 2).reciprocal_rank == 0.0


def test_unjudged_ranked_passages_count_as_grade_zero():
    judged_zero = retrieval_scores(["x", "a"], {"a": 1, "x": 0}, 2)
    unjudged = retrieval_scores(["x", "a"], {"a": 1}, 2)

    assert judged_zero == unjudged


# Retrieval: errors ------------------------------------------------------------------------------


def test_duplicate_ids_in_a_ranking_are_an_error():
    with pytest.raises(ValueError, match="duplicate passage ids.*deadlock-example"):
        retrieval_scores(["deadlock-example", "deadlock-example"], DEADLOCK_GRADES, 3)


def test_negative_grade_is_an_error():
    with pytest.raises(ValueError, match="non-negative"):
        retrieval_scores(DEADLOCK_RANKING, {"deadlock-definition": -1, "x": 2}, 3)


def test_case_without_a_positive_grade_is_not_eligible_rather_than_zero():
    with pytest.raises(NotEligible):
        retrieval_scores(DEADLOCK_RANKING, {"cpu-scheduling": 0}, 3)
    with pytest.raises(ValueError):  # callers that only catch ValueError still see it
        retrieval_scores(DEADLOCK_RANKING, {}, 3)


@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_is_an_error(k):
    with pytest.raises(ValueError, match="k must be at least 1"):
        retrieval_scores(DEADLOCK_RANKING, DEADLOCK_GRADES, k)


def test_errors_are_not_mistaken_for_non_eligibility():
    with pytest.raises(ValueError) as excinfo:
        retrieval_scores(["a", "a"], {}, 3)

    assert not isinstance(excinfo.value, NotEligible)


def test_a_single_string_is_refused_as_a_ranking():
    with pytest.raises(TypeError):
        retrieval_scores("abc", {"a": 1}, 3)


# Retrieval: suite means -------------------------------------------------------------------------


def test_suite_means_cover_eligible_cases_and_count_the_others_apart():
    cases = [*THREE_QUESTIONS, (["c1"], {"c1": 0})]

    suite = suite_retrieval_scores(cases, 3)

    assert (suite.eligible, suite.not_eligible) == (3, 1)
    assert suite.recall == pytest.approx(2 / 3)
    assert suite.reciprocal_rank == pytest.approx((1 + 1 / 3) / 3)


def test_suite_with_no_eligible_case_has_no_mean():
    suite = suite_retrieval_scores([(["a"], {})], 3)

    assert suite.recall is None and suite.ndcg is None
    assert (suite.eligible, suite.not_eligible) == (0, 1)


def test_mean_over_eligible_skips_none_and_counts_it():
    assert mean_over_eligible([1.0, None, 0.0]).mean == 0.5
    assert mean_over_eligible([1.0, None, 0.0]).not_eligible == 1
    assert mean_over_eligible([None]).mean is None


# Retrieval: cross-check against ranx ------------------------------------------------------------


def _generated_cases(count: int, seed: int):
    rng = random.Random(seed)
    pool = [f"p{i:02d}" for i in range(30)]
    cases = []
    for index in range(count):
        ranking = rng.sample(pool, rng.randint(1, 15))
        # Judge some ranked and some unranked passages, so recall below 1 and unjudged
        # ranked passages both occur.
        judged = rng.sample(pool, rng.randint(1, 8))
        grades = {pid: rng.choice([0, 0, 1, 2, 3]) for pid in judged}
        cases.append((f"q{index:03d}", ranking, grades))
    return cases


@pytest.mark.parametrize("k", [1, 3, 5, 10])
def test_retrieval_scores_agree_with_ranx_on_generated_cases(k):
    ranx = pytest.importorskip("ranx")
    cases = _generated_cases(300, seed=k)
    ours, qrels_dict, run_dict = {}, {}, {}
    not_eligible = 0
    for query_id, ranking, grades in cases:
        try:
            ours[query_id] = retrieval_scores(ranking, grades, k)
        except NotEligible:
            not_eligible += 1
            continue
        # ranx keeps only positive judgments for these metrics; zeros add no gain either way.
        qrels_dict[query_id] = {pid: g for pid, g in grades.items() if g > 0}
        # Distinct descending scores so ranx's sort reproduces our rank order exactly.
        run_dict[query_id] = {pid: float(len(ranking) - i) for i, pid in enumerate(ranking)}
    assert not_eligible > 0 and len(ours) > 200  # both paths exercised

    run = ranx.Run(run_dict)
    metrics = [f"recall@{k}", f"precision@{k}", f"mrr@{k}", f"ndcg_burges@{k}"]
    ranx.evaluate(ranx.Qrels(qrels_dict), run, metrics, return_mean=False)

    for query_id, scores in ours.items():
        theirs = {m: run.scores[m][query_id] for m in metrics}
        assert scores.recall == pytest.approx(theirs[f"recall@{k}"], abs=1e-9)
        assert scores.precision == pytest.approx(theirs[f"precision@{k}"], abs=1e-9)
        assert scores.reciprocal_rank == pytest.approx(theirs[f"mrr@{k}"], abs=1e-9)
        assert scores.ndcg == pytest.approx(theirs[f"ndcg_burges@{k}"], abs=1e-9)


def test_all_cutoffs_in_one_pass_agree_with_ranx_at_each():
    """A report scores every case at every k in one call; each cutoff's figures must be ranx's
    for that k, also where the ranking or the judged grades are shorter than k."""
    ranx = pytest.importorskip("ranx")
    ks = (1, 2, 3, 5, 10, 20)
    cases = _generated_cases(300, seed=99)
    ours, qrels_dict, run_dict = {}, {}, {}
    for query_id, ranking, grades in cases:
        try:
            ours[query_id] = retrieval_scores_at(ranking, grades, ks)
        except NotEligible:
            continue
        qrels_dict[query_id] = {pid: g for pid, g in grades.items() if g > 0}
        run_dict[query_id] = {pid: float(len(ranking) - i) for i, pid in enumerate(ranking)}
    assert any(len(ranking) < 10 for _, ranking, _ in cases)

    run = ranx.Run(run_dict)
    metrics = [f"{m}@{k}" for k in ks for m in ("recall", "precision", "mrr", "ndcg_burges")]
    ranx.evaluate(ranx.Qrels(qrels_dict), run, metrics, return_mean=False)
    for query_id, by_k in ours.items():
        assert sorted(by_k) == list(ks)
        for k, scores in by_k.items():
            assert scores.recall == pytest.approx(run.scores[f"recall@{k}"][query_id], abs=1e-9)
            assert scores.precision == pytest.approx(
                run.scores[f"precision@{k}"][query_id], abs=1e-9
            )
            assert scores.reciprocal_rank == pytest.approx(
                run.scores[f"mrr@{k}"][query_id], abs=1e-9
            )
            assert scores.ndcg == pytest.approx(run.scores[f"ndcg_burges@{k}"][query_id], abs=1e-9)


def test_all_cutoffs_check_their_input_as_one_cutoff_does():
    with pytest.raises(ValueError, match="k must be at least 1"):
        retrieval_scores_at(DEADLOCK_RANKING, DEADLOCK_GRADES, (0, 3))
    with pytest.raises(ValueError, match="k must be at least 1"):
        retrieval_scores_at(DEADLOCK_RANKING, DEADLOCK_GRADES, ())
    with pytest.raises(NotEligible):
        retrieval_scores_at(DEADLOCK_RANKING, {"cpu-scheduling": 0}, (1, 3))
    # A cutoff far beyond the ranking costs no more than the ranking's length.
    huge = retrieval_scores_at(DEADLOCK_RANKING, DEADLOCK_GRADES, (3, 10**12))
    assert huge[10**12].recall == huge[3].recall == 1.0
    assert huge[10**12].ndcg == huge[3].ndcg


# Reciprocal rank fusion -------------------------------------------------------------------------


def test_rrf_puts_bcnf_first_as_in_the_seed():
    dense_ids = ["overview", "normalization", "bcnf"]
    lexical_ids = ["bcnf", "exam", "normalization"]

    fused = reciprocal_rank_fusion([dense_ids, lexical_ids])

    assert fused == ["bcnf", "normalization", "overview", "exam"]


def test_rrf_breaks_score_ties_by_id_ascending():
    assert reciprocal_rank_fusion([["b", "a"], ["a", "b"]]) == ["a", "b"]
    assert reciprocal_rank_fusion([["zeta"], ["alpha"]]) == ["alpha", "zeta"]


def test_rrf_lets_a_duplicate_within_one_list_vote_once_at_its_first_rank():
    scores = dict(reciprocal_rank_fusion_scores([["a", "a", "b"]], offset=60))

    assert scores == {"a": pytest.approx(1 / 61), "b": pytest.approx(1 / 62)}


def test_rrf_scores_sum_one_over_offset_plus_rank():
    scores = dict(reciprocal_rank_fusion_scores([["a", "b"], ["b"]], offset=10))

    assert scores["b"] == pytest.approx(1 / 12 + 1 / 11)
    assert scores["a"] == pytest.approx(1 / 11)


def test_rrf_refuses_a_negative_offset():
    with pytest.raises(ValueError, match="offset"):
        reciprocal_rank_fusion([["a"]], offset=-1)


# Generation -------------------------------------------------------------------------------------


def test_assignment_2_answer_is_half_faithful_with_the_contradiction_counted_apart():
    faithfulness = claim_faithfulness(["supported", "contradicted"])

    assert faithfulness.rate == 0.5
    assert (faithfulness.n, faithfulness.supported, faithfulness.contradicted) == (2, 1, 1)
    assert faithfulness.insufficient == 0


def test_assignment_2_answer_has_relevance_2():
    relevance = relevance_distribution([2])

    assert relevance.mean == 2
    assert relevance.counts == {0: 0, 1: 0, 2: 1}


def test_relevance_distribution_counts_each_value():
    relevance = relevance_distribution([0, 2, 2, 1])

    assert (relevance.n, relevance.mean) == (4, 1.25)
    assert relevance.counts == {0: 1, 1: 1, 2: 2}


def test_insufficient_evidence_is_not_supported_but_not_contradicted():
    faithfulness = claim_faithfulness(["insufficient_evidence", "supported"])

    assert (faithfulness.rate, faithfulness.contradicted, faithfulness.insufficient) == (0.5, 0, 1)


def test_unresolvable_citation_counts_as_not_supporting():
    precision = citation_precision(["supports", "citation_not_found", "does_not_support"])

    assert precision.rate == pytest.approx(1 / 3)
    assert (precision.links, precision.supports, precision.not_found) == (3, 1, 1)


def test_citation_coverage_needs_one_supporting_citation_per_evidence_requiring_claim():
    claims = [
        ClaimCitations(requires_evidence=True, verdicts=["citation_not_found", "supports"]),
        ClaimCitations(requires_evidence=True, verdicts=["citation_not_found"]),
        ClaimCitations(requires_evidence=True, verdicts=[]),
        ClaimCitations(requires_evidence=False, verdicts=[]),  # a pleasantry
    ]

    coverage = citation_coverage(claims)

    assert (coverage.requiring_evidence, coverage.covered) == (3, 1)
    assert coverage.not_requiring_evidence == 1
    assert coverage.rate == pytest.approx(1 / 3)


def test_rates_are_none_not_zero_on_empty_input():
    assert claim_faithfulness([]).rate is None
    assert citation_precision([]).rate is None
    assert citation_coverage([ClaimCitations(requires_evidence=False)]).rate is None
    assert relevance_distribution([]).mean is None
    assert latency_summary([]).p95 is None
    assert generation_variance({}).rate is None
    summary = abstention_summary([])
    assert summary.abstention_rate is None and summary.false_abstention_rate is None


def test_labels_outside_the_vocabulary_are_refused():
    with pytest.raises(ValueError, match="support label"):
        claim_faithfulness(["Supported"])
    with pytest.raises(ValueError, match="citation verdict"):
        citation_precision(["supported"])
    with pytest.raises(ValueError, match="relevance"):
        relevance_distribution([3])
    with pytest.raises(ValueError, match="failure label"):
        failure_label_counts([["hallucination"]])


def test_abstention_summary_keeps_answerable_and_unanswerable_apart():
    rows = [
        AbstentionRow(answerable=False, abstained=True, unsupported=False),
        AbstentionRow(answerable=False, abstained=True, unsupported=False),
        AbstentionRow(answerable=False, abstained=False, unsupported=True),
        AbstentionRow(answerable=False, abstained=True, unsupported=True),  # hedged fabrication
        AbstentionRow(answerable=False, abstained=False, unsupported=False),
        AbstentionRow(answerable=True, abstained=True, unsupported=False),
        AbstentionRow(answerable=True, abstained=False, unsupported=False),
    ]

    summary = abstention_summary(rows)

    assert (summary.unanswerable, summary.abstained, summary.unsupported, summary.other) == (
        5,
        2,
        2,
        1,
    )
    assert summary.abstention_rate == 0.4 and summary.unsupported_rate == 0.4
    assert (summary.answerable, summary.false_abstentions) == (2, 1)
    assert summary.false_abstention_rate == 0.5


def test_failure_labels_count_answers_once_per_label():
    counts = failure_label_counts(
        [["unsupported_claim", "unsupported_claim"], ["wrong_citation"], []]
    )

    assert counts.answers == 3
    assert counts.counts["unsupported_claim"] == 1
    assert counts.counts["false_abstention"] == 0


def test_latency_p95_is_numpys_linear_percentile_and_missing_values_are_counted():
    elapsed = [120.0, 340.0, 95.0, 1510.0, 410.0, 388.0, 260.0, 2200.0, 150.0, 305.0]

    summary = latency_summary([*elapsed, None])

    assert summary.p95 == pytest.approx(np.percentile(elapsed, 95, method="linear"))
    assert summary.mean == pytest.approx(np.mean(elapsed))
    assert (summary.n, summary.missing) == (10, 1)


def test_negative_latency_is_refused():
    with pytest.raises(ValueError, match="elapsed_ms"):
        latency_summary([-1])


def test_cost_summary_totals_recorded_costs():
    summary = cost_summary([0.002, None, 0.004])

    assert summary.total == pytest.approx(0.006)
    assert summary.mean == pytest.approx(0.003)
    assert summary.missing == 1


def test_per_case_mean_averages_repeated_samples():
    assert per_case_mean({"a": [1.0, 0.0], "b": [1.0], "c": []}) == {"a": 0.5, "b": 1.0}


def test_generation_variance_is_the_share_of_repeated_cases_whose_outcome_differs():
    variance = generation_variance(
        {"a": [True, True, True], "b": [True, False], "c": [False, False], "d": [True]}
    )

    assert (variance.repeated, variance.differing, variance.single_sample) == (3, 1, 1)
    assert variance.rate == pytest.approx(1 / 3)
    assert variance.differing_case_ids == ("b",)


# Paired comparison ------------------------------------------------------------------------------


def test_paired_transitions_list_fixed_broken_and_unchanged_cases():
    before = {"a": False, "b": True, "c": True, "d": False, "only-before": True}
    after = {"a": True, "b": False, "c": True, "d": False, "only-after": False}

    transitions = paired_transitions(before, after)

    assert transitions.fixed == ("a",)
    assert transitions.broken == ("b",)
    assert transitions.unchanged_pass == ("c",)
    assert transitions.unchanged_fail == ("d",)
    assert transitions.only_before == ("only-before",)
    assert transitions.only_after == ("only-after",)
    assert transitions.counts["paired"] == 4


def test_paired_bootstrap_is_reproducible_with_a_seed_and_ignores_mapping_order():
    rng = np.random.default_rng(1)
    before = {f"q{i}": float(rng.random()) for i in range(40)}
    after = {case_id: value + 0.1 for case_id, value in before.items()}
    shuffled_after = dict(reversed(list(after.items())))

    first = paired_bootstrap_diff(before, after, seed=7)
    again = paired_bootstrap_diff(before, shuffled_after, seed=7)

    assert first == again
    assert first.n == 40 and first.mean_diff == pytest.approx(0.1)
    assert first.ci95 == pytest.approx((0.1, 0.1))


def test_paired_bootstrap_interval_brackets_the_mean_and_depends_on_the_seed():
    gains = np.random.default_rng(3).normal(0.05, 0.2, size=30)
    before = {f"q{i}": 0.5 for i in range(30)}
    after = {f"q{i}": 0.5 + float(gain) for i, gain in enumerate(gains)}
    after["extra"] = 1.0

    result = paired_bootstrap_diff(before, after, n_boot=500, seed=0)
    other_seed = paired_bootstrap_diff(before, after, n_boot=500, seed=1)

    assert result.unpaired == 1
    assert result.mean_diff == pytest.approx(gains.mean())
    low, high = result.ci95
    assert low < result.mean_diff < high
    assert result.ci95 != other_seed.ci95


@pytest.mark.parametrize("block_entries", [1, 37 * 3, 37 * 500, 10**9])
def test_paired_bootstrap_in_blocks_gives_the_numbers_of_one_whole_draw(monkeypatch, block_entries):
    # The definition written out whole: one (n_boot × n) draw of case indices.
    gains = np.random.default_rng(11).normal(0.02, 0.3, size=37)
    before = {f"q{i:02}": 0.4 for i in range(37)}
    after = {f"q{i:02}": 0.4 + float(gain) for i, gain in enumerate(gains)}
    diffs = np.array([after[c] - before[c] for c in sorted(before)])
    whole = diffs[np.random.default_rng(5).integers(0, 37, size=(1000, 37))].mean(axis=1)
    expected = tuple(float(x) for x in np.percentile(whole, [2.5, 97.5]))

    monkeypatch.setattr(metrics, "BOOTSTRAP_BLOCK_ENTRIES", block_entries)
    result = paired_bootstrap_diff(before, after, n_boot=1000, seed=5)

    assert result.ci95 == expected


def test_paired_bootstrap_without_common_cases_has_no_estimate():
    result = paired_bootstrap_diff({"a": 1.0}, {"b": 0.0})

    assert (result.n, result.mean_diff, result.ci95, result.unpaired) == (0, None, None, 2)
