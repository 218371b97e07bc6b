"""The evaluation report on a project built so that every number is known in advance.

fixtures/stages.jsonl holds nine cases; under the `baseline` variant each answerable case's
answer fails at a different stage of the pipeline (one per stage, plus one ok and one whose
label is still pending), and the `hybrid` variant changes them in known ways. Two reviewers
label every answer identically (so gold is `agreed`) except one claim they disagree on. The
passage `p-gone` is then removed from the corpus, which leaves case `c-index` without any
evidence passage: the index stage.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Passage, Project, Role
from annotate.projects.opening import open_labelling
from evaluation.metrics import (
    NDCG_GAIN,
    claim_faithfulness,
    reciprocal_rank_fusion,
    retrieval_scores,
    suite_retrieval_scores,
)
from evaluation.reports.comparison import compare
from evaluation.reports.dataset import load
from evaluation.reports.evaluation import STAGE_ROWS, evaluate
from evaluation.reports.limits import variant_limits
from tests.conftest import import_fixture

LOG3 = math.log2(3)


def claim(support, evidence=None, quote="", citations=None):
    severity = {"supported": "none", "contradicted": "major"}.get(support, "minor")
    return {
        "support": support,
        "severity": severity,
        "requires_evidence": True,
        "evidence_ids": [evidence] if evidence else [],
        "evidence_quote": quote,
        "citations": citations or {},
        "note": "",
    }


INSUFFICIENT = claim("insufficient_evidence")
# answer_id: (relevance, abstention, failure_labels, claims)
LABELS = {
    "c-index/baseline": (1, None, ["unsupported_claim"], [INSUFFICIENT]),
    "c-retrieval/baseline": (1, None, ["missing_evidence"], [INSUFFICIENT]),
    "c-prompt/baseline": (1, None, ["missing_evidence"], [INSUFFICIENT]),
    "c-generation/baseline": (
        2,
        None,
        ["unsupported_claim", "wrong_citation"],
        [
            claim("supported", "p-g", "batch size 32"),
            claim("contradicted", "p-g", "batch size 32", {"p-g": "does_not_support"}),
        ],
    ),
    "c-abstain/baseline": (0, "unnecessary", ["false_abstention"], []),
    "c-ok/baseline": (
        2,
        None,
        [],
        [claim("supported", "p-o", "four assignments", {"p-o": "supports"})],
    ),
    "c-pending/baseline": (2, None, [], [claim("supported", "p-pend", "ten percent")]),
    "c-unans-abstain/baseline": (2, "appropriate", [], []),
    "c-unans-fabricate/baseline": (1, None, ["unsupported_claim"], [INSUFFICIENT]),
    "c-index/hybrid": (1, None, ["unsupported_claim"], [INSUFFICIENT]),
    "c-retrieval/hybrid": (2, None, [], [claim("supported", "p-r", "3 June")]),
    "c-prompt/hybrid": (2, None, [], [claim("supported", "p-p", "1800 tokens")]),
    "c-generation/hybrid": (
        2,
        None,
        ["unsupported_claim"],
        [claim("contradicted", "p-g", "batch size 32")],
    ),
    "c-generation/hybrid/1": (2, None, [], [claim("supported", "p-g", "batch size 32")]),
    "c-abstain/hybrid": (2, None, [], [claim("supported", "p-f", "Tuesdays")]),
    "c-ok/hybrid": (1, None, ["missing_evidence"], [INSUFFICIENT]),
    "c-unans-abstain/hybrid": (2, "appropriate", [], []),
    "c-unans-fabricate/hybrid": (2, "appropriate", [], []),
}
# Bob reads the one pending claim the other way: reviewers disagree, no lead has decided.
BOB_DIFFERS = {"c-pending/baseline": [claim("contradicted", "p-pend", "ten percent")]}


def label_lines() -> list[str]:
    lines = []
    for answer_id, (relevance, abstention, failures, claims) in LABELS.items():
        for reviewer in ("alice", "bob"):
            chosen = BOB_DIFFERS.get(answer_id, claims) if reviewer == "bob" else claims
            lines.append(
                json.dumps(
                    {
                        "answer_id": answer_id,
                        "reviewer": reviewer,
                        "relevance": relevance,
                        "abstention": abstention,
                        "failure_labels": failures,
                        "note": "",
                        "claims": [{"index": i, **c} for i, c in enumerate(chosen)],
                    }
                )
            )
    return lines


def build_stages_project(slug: str = "stages") -> Project:
    """Import, two reviewers, open, import their labels, then drop p-gone from the corpus.
    The users alice and bob must exist already (the reviewer_a/reviewer_b fixtures)."""
    project = import_fixture("stages.jsonl", slug)
    add_member(project=project, username="alice", role=Role.REVIEWER)
    add_member(project=project, username="bob", role=Role.REVIEWER)
    project = open_labelling(project=project)
    import_labels(lines=label_lines(), project=project)
    Passage.objects.get(project=project, passage_id="p-gone").delete()
    return project


@pytest.fixture
def stages(reviewer_a, reviewer_b) -> Project:
    return build_stages_project()


@pytest.fixture
def report(stages) -> dict:
    return evaluate(stages, ks=(1, 3, 5, 10))


def stage_ids(report, variant, slice_="answerable"):
    rows = report["variants"][variant]["stages"][slice_]["rows"]
    return {stage: rows[stage]["answer_ids"] for stage in STAGE_ROWS}


# --- stage diagnosis -------------------------------------------------------------------------


@pytest.mark.django_db
def test_each_constructed_failure_is_diagnosed_at_the_stage_that_broke_first(report):
    assert stage_ids(report, "baseline") == {
        "not_in_corpus": ["c-index/baseline"],
        "not_retrieved": ["c-retrieval/baseline"],
        "not_in_prompt": ["c-prompt/baseline"],
        "generation": ["c-generation/baseline"],
        "false_abstention": ["c-abstain/baseline"],
        "no_evidence": [],
        "ok": ["c-ok/baseline"],
        "pending": ["c-pending/baseline"],
        "unlabelled": [],
    }
    block = report["variants"]["baseline"]["stages"]["answerable"]
    assert (block["answers"], block["failing"]) == (7, 5)
    assert block["rows"]["not_in_prompt"]["case_ids"] == ["c-prompt"]


@pytest.mark.django_db
def test_the_second_variant_moves_answers_between_stages_sample_by_sample(report):
    assert stage_ids(report, "hybrid") == {
        "not_in_corpus": ["c-index/hybrid"],
        "not_retrieved": ["c-ok/hybrid"],
        "not_in_prompt": [],
        "generation": ["c-generation/hybrid"],
        "false_abstention": [],
        "no_evidence": [],
        "ok": [
            "c-abstain/hybrid",
            "c-generation/hybrid/1",
            "c-prompt/hybrid",
            "c-retrieval/hybrid",
        ],
        "pending": [],
        "unlabelled": [],
    }
    rows = report["variants"]["hybrid"]["stages"]["answerable"]["rows"]
    assert rows["ok"]["cases"] == 4 and rows["ok"]["answers"] == 4


@pytest.mark.django_db
def test_stage_slices_keep_adversarial_and_splits_apart(report):
    assert stage_ids(report, "baseline", "adversarial")["generation"] == ["c-generation/baseline"]
    heldout = report["variants"]["baseline"]["stages"]["heldout"]
    assert heldout["answers"] == 1 and heldout["rows"]["ok"]["answer_ids"] == ["c-ok/baseline"]
    assert report["variants"]["baseline"]["stages"]["dev"]["answers"] == 6


@pytest.mark.django_db
def test_unanswerable_answers_are_not_diagnosed(report):
    diagnosed = {d["answer_id"] for d in report["variants"]["baseline"]["diagnosis"]}
    assert "c-unans-abstain/baseline" not in diagnosed
    assert len(diagnosed) == 7


@pytest.mark.django_db
def test_unlabelled_answers_are_counted_apart_not_called_ok(reviewer_a, reviewer_b):
    project = import_fixture("stages.jsonl", "fresh")
    report = evaluate(project)
    rows = report["variants"]["baseline"]["stages"]["answerable"]["rows"]
    # Without labels only the abstention is known to fail; everything else waits for labels.
    assert rows["false_abstention"]["answer_ids"] == ["c-abstain/baseline"]
    assert rows["unlabelled"]["answers"] == 6
    assert rows["ok"]["answers"] == 0


# --- retrieval -------------------------------------------------------------------------------


def approx(value):
    return pytest.approx(value, abs=1e-12)


@pytest.mark.django_db
def test_retrieval_at_3_matches_hand_computed_values(report):
    full = report["variants"]["baseline"]["retrieval"]["all"]["full"]["3"]
    ndcg_prompt_case = (1 + 7 / LOG3) / (7 + 1 / LOG3)
    assert full["recall"] == approx(5 / 6)
    assert full["precision"] == approx(1 / 3)
    assert full["mrr"] == approx(0.75)
    assert full["ndcg"] == approx((0 + ndcg_prompt_case + 1 + 1 / LOG3 + 1 + 1) / 6)
    assert (full["eligible"], full["not_eligible"], full["no_ranking"]) == (6, 3, 0)


@pytest.mark.django_db
def test_in_prompt_ranking_differs_where_a_relevant_passage_was_trimmed(report):
    retrieval = report["variants"]["baseline"]["retrieval"]["all"]
    prompt, full = retrieval["in_prompt"]["3"], retrieval["full"]["3"]
    # c-prompt: p-p (grade 3) was retrieved at rank 2 but never reached the prompt, so only
    # n2 (grade 1) counts there.
    assert prompt["recall"] == approx((0 + 0.5 + 1 + 1 + 1 + 1) / 6)
    assert prompt["recall"] < full["recall"]
    assert prompt["ndcg"] == approx((0 + 1 / (7 + 1 / LOG3) + 1 + 1 / LOG3 + 1 + 1) / 6)
    assert prompt["mrr"] == full["mrr"]  # n2 is relevant and first in both


@pytest.mark.django_db
def test_retrieval_agrees_with_the_pure_metrics_on_the_same_rankings(stages, report):
    data = load(stages)
    for k in (1, 3, 5, 10):
        for ranking in ("full", "in_prompt"):
            pairs = [(a.ranked(ranking), a.case.grades) for a in data.answers_of("baseline")]
            expected = suite_retrieval_scores(pairs, k)
            got = report["variants"]["baseline"]["retrieval"]["all"][ranking][str(k)]
            assert got["recall"] == approx(expected.recall)
            assert got["precision"] == approx(expected.precision)
            assert got["mrr"] == approx(expected.reciprocal_rank)
            assert got["ndcg"] == approx(expected.ndcg)
            assert (got["eligible"], got["not_eligible"]) == (
                expected.eligible,
                expected.not_eligible,
            )


@pytest.mark.django_db
def test_unanswerable_cases_are_not_eligible_never_scored_zero(report):
    for variant in ("baseline", "hybrid"):
        row = report["variants"][variant]["retrieval"]["unanswerable"]["full"]["5"]
        assert row["recall"] is None and row["mrr"] is None and row["ndcg"] is None
        assert (row["eligible"], row["not_eligible"]) == (0, 2)


@pytest.mark.django_db
def test_repeated_samples_are_averaged_within_the_case_first(report):
    # hybrid: c-generation has RR 1 (sample 0) and 1/2 (sample 1) -> 0.75 for the case.
    row = report["variants"]["hybrid"]["retrieval"]["all"]["full"]["3"]
    assert row["mrr"] == approx((1 + 1 + 0.75 + 1 + 0) / 5)
    assert row["eligible"] == 5
    assert report["variants"]["hybrid"]["repeated_samples"] is True


# --- generation ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_generation_metrics_use_decided_gold_only_and_count_the_pending(report):
    g = report["variants"]["baseline"]["generation"]["all"]
    faith = g["faithfulness"]
    assert (faith["n"], faith["supported"], faith["contradicted"], faith["insufficient"]) == (
        7,
        2,
        1,
        4,
    )
    gold = ["insufficient_evidence"] * 4 + ["supported"] * 2 + ["contradicted"]
    assert faith["rate"] == approx(claim_faithfulness(gold).rate) == approx(2 / 7)
    assert (faith["pending"], faith["unlabelled"]) == (1, 0)
    # the unresolvable citation notes-404 counts as not supporting
    assert g["citation_precision"] == {
        "links": 3,
        "supports": 1,
        "does_not_support": 1,
        "not_found": 1,
        "rate": approx(1 / 3),
        "pending": 0,
    }
    assert g["citation_coverage"]["covered"] == 1
    assert g["citation_coverage"]["requiring_evidence"] == 8
    assert g["unsupported_answers"] == {
        "n": 8,
        "unsupported": 5,
        "rate": approx(5 / 8),
        "pending": 1,
        "unlabelled": 0,
    }
    assert g["relevance"]["counts"] == {"0": 1, "1": 4, "2": 4}
    assert g["relevance"]["mean"] == approx(12 / 9)


@pytest.mark.django_db
def test_abstention_splits_unanswerable_from_false_abstentions(report):
    ab = report["variants"]["baseline"]["generation"]["all"]["abstention"]
    assert (ab["unanswerable"], ab["abstained"], ab["unsupported"]) == (2, 1, 1)
    assert (ab["answerable"], ab["false_abstentions"]) == (7, 1)
    assert ab["false_abstention_rate"] == approx(1 / 7)
    assert ab["gold"] == {"n": 2, "appropriate": 1, "unnecessary": 1, "pending": 0}
    hybrid = report["variants"]["hybrid"]["generation"]["unanswerable"]["abstention"]
    assert (hybrid["abstained"], hybrid["unsupported"], hybrid["abstention_rate"]) == (2, 0, 1.0)


@pytest.mark.django_db
def test_latency_cost_failure_labels_and_generation_variance(report):
    g = report["variants"]["baseline"]["generation"]["all"]
    elapsed = [100, 200, 300, 400, 500, 600, 700, 800, 900]
    assert g["latency"]["mean"] == approx(500)
    assert g["latency"]["p95"] == approx(float(np.percentile(elapsed, 95)))
    assert g["cost"]["total"] == approx(0.009)
    assert g["failure_labels"]["counts"]["missing_evidence"] == 2
    assert g["generation_variance"] is None
    variance = report["variants"]["hybrid"]["generation"]["all"]["generation_variance"]
    assert (variance["repeated"], variance["differing"]) == (1, 1)
    assert variance["differing_case_ids"] == ["c-generation"]


@pytest.mark.django_db
def test_report_states_its_definitions(report):
    assert report["definitions"]["ndcg_gain"] == NDCG_GAIN
    assert "exponential" in report["definitions"]["ndcg_gain"]
    assert report["definitions"]["stage_order"] == [
        "not_in_corpus",
        "not_retrieved",
        "not_in_prompt",
        "generation",
        "false_abstention",
    ]
    assert report["variants"]["hybrid"]["settings"]["retriever"] == "hybrid"


@pytest.mark.django_db
def test_only_the_requested_variants_and_ks(stages):
    report = evaluate(stages, ks=(2,), variants=["hybrid"])
    assert list(report["variants"]) == ["hybrid"]
    assert list(report["variants"]["hybrid"]["retrieval"]["all"]["full"]) == ["2"]
    with pytest.raises(ValueError):
        evaluate(stages, variants=["nope"])
    with pytest.raises(ValueError):
        evaluate(stages, ks=(0,))


# --- comparison ------------------------------------------------------------------------------


@pytest.fixture
def comparison(stages) -> dict:
    return compare(stages, "baseline", "hybrid", k=3, seed=0)


@pytest.mark.django_db
def test_transitions_are_exact_case_by_case(comparison):
    t = {name: m["transitions"] for name, m in comparison["metrics"].items()}
    assert t["recall"] == {
        "fixed": ["c-retrieval"],
        "broken": ["c-ok"],
        "unchanged_pass": ["c-abstain", "c-generation", "c-prompt"],
        "unchanged_fail": [],
        "only_a": ["c-pending"],
        "only_b": [],
    }
    assert t["reciprocal_rank"]["fixed"] == ["c-abstain", "c-retrieval"]
    assert t["reciprocal_rank"]["broken"] == ["c-generation", "c-ok"]
    assert t["faithfulness"] == {
        "fixed": ["c-prompt", "c-retrieval"],
        "broken": ["c-ok"],
        "unchanged_pass": [],
        "unchanged_fail": ["c-generation", "c-index"],
        "only_a": ["c-unans-fabricate"],
        "only_b": ["c-abstain"],
    }
    assert t["unsupported"] == {
        "fixed": ["c-prompt", "c-retrieval", "c-unans-fabricate"],
        "broken": ["c-ok"],
        "unchanged_pass": ["c-abstain", "c-unans-abstain"],
        "unchanged_fail": ["c-generation", "c-index"],
        "only_a": [],
        "only_b": [],
    }
    assert t["abstention"]["fixed"] == ["c-abstain", "c-unans-fabricate"]
    assert t["abstention"]["broken"] == []
    assert t["abstention"]["only_a"] == ["c-pending"]


@pytest.mark.django_db
def test_paired_differences_latency_added_and_settings_changed(comparison):
    faith = comparison["metrics"]["faithfulness"]
    assert faith["diff"]["n"] == 5
    assert faith["diff"]["mean_diff"] == approx(0.2)
    low, high = faith["diff"]["ci95"]
    assert low <= 0.2 <= high
    assert comparison["latency_added_ms"]["mean_diff"] == approx(7900 / 8)
    assert comparison["latency_added_ms"]["unpaired"] == 1
    assert comparison["settings_changed"] == ["reranker", "retriever"]


@pytest.mark.django_db
def test_fused_rankings_are_scored_as_an_extra_row(stages, comparison):
    rows = comparison["fusion"]["rows"]
    assert list(rows) == ["baseline", "hybrid", "fuse(baseline, hybrid)"]
    fused = rows["fuse(baseline, hybrid)"]
    assert fused["eligible"] == 5
    assert fused["recall"] == approx(1.0)
    assert fused["mrr"] == approx((0.5 + 1 + 1 + 1 + 0.5) / 5)
    # the same number straight from the pure functions for one case
    fused_ranking = reciprocal_rank_fusion([["n1", "n2", "n3"], ["p-r", "n1"]])
    assert fused_ranking == ["n1", "p-r", "n2", "n3"]
    assert retrieval_scores(fused_ranking, {"p-r": 3, "n1": 0}, 3).reciprocal_rank == 0.5


@pytest.mark.django_db
def test_limits_mark_the_variants_that_meet_both(report):
    rows = {
        r["variant"]: r
        for r in variant_limits(report, latency_budget_ms=1000, unsupported_limit=0.3)
    }
    assert rows["baseline"]["meets_latency"] is True
    assert rows["baseline"]["meets_unsupported"] is False  # 5 of 8
    assert rows["baseline"]["meets_both"] is False
    assert rows["hybrid"]["meets_latency"] is False
    unset = variant_limits(report)
    assert all(r["meets_both"] is None for r in unset)


# --- query count -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_query_count_is_fixed_up_to_a_chunk_of_answers(stages, django_assert_num_queries):
    # eleven, and the chunk's imported gold (none here: one query)
    with django_assert_num_queries(12):
        evaluate(stages)
    from annotate.management.commands.load_demo import load as load_demo

    demo = load_demo()
    with django_assert_num_queries(12):
        data = load(demo)
        evaluate(demo, data=data)
        compare(demo, "baseline", "verifier", data=data)


@pytest.mark.django_db
def test_labels_derived_a_few_answers_at_a_time_give_the_same_report(
    stages, monkeypatch, django_assert_num_queries
):
    from annotate.gold import imported
    from annotate.management.commands.load_demo import load as load_demo

    demo = load_demo()
    whole = [evaluate(stages), evaluate(demo), compare(demo, "baseline", "verifier")]
    answers = demo.answers.count()
    monkeypatch.setattr(imported, "PAIR_CHUNK", 3)
    # assignments, labels, decisions and imported gold (none here: one query) a chunk
    with django_assert_num_queries(8 + 4 * math.ceil(answers / 3)):
        data = load(demo)
    assert [
        evaluate(stages),
        evaluate(demo, data=data),
        compare(demo, "baseline", "verifier"),
    ] == whole


def test_small_costs_keep_their_digits_and_differences_read_to_three_decimals():
    from evaluation.reports.tables import text_value

    assert text_value(0.0012, "float") == "0.0012"  # a cost, not 0.001
    assert text_value(0.0625, "diff") == "0.062"
    assert text_value([0.03125, 0.25], "ci") == "[0.031, 0.250]"
