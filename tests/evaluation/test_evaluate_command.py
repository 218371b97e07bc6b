"""`evaluate --project SLUG [--k ...] [--json]`: the same numbers as the service, as JSON with
a stable shape and key order, or as tables for people."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.reports.evaluation import evaluate
from tests.evaluation.test_reports import build_stages_project

pytestmark = pytest.mark.django_db


@pytest.fixture
def stages(reviewer_a, reviewer_b):
    return build_stages_project()


def run(*args) -> str:
    out = StringIO()
    call_command("evaluate", *args, stdout=out)
    return out.getvalue()


def test_json_is_the_service_dict_in_a_stable_key_order(stages):
    text = run("--project", "stages", "--json")
    report = json.loads(text)
    assert report == json.loads(json.dumps(evaluate(stages)))
    assert list(report) == [
        "project",
        "corpus_version",
        "label_schema",
        "not_available",
        "ks",
        "slices",
        "definitions",
        "variants",
        "latency_histogram",
    ]
    assert report["ks"] == [1, 3, 5, 10]
    assert list(report["variants"]) == ["baseline", "hybrid"]
    baseline = report["variants"]["baseline"]
    assert list(baseline) == [
        "name",
        "description",
        "model",
        "settings",
        "answers",
        "cases",
        "repeated_samples",
        "retrieval",
        "generation",
        "stages",
        "diagnosis",
    ]
    assert list(baseline["retrieval"]) == list(report["slices"])
    assert list(baseline["retrieval"]["all"]) == ["full", "in_prompt"]
    assert list(baseline["retrieval"]["all"]["full"]["5"]) == [
        "recall",
        "precision",
        "mrr",
        "ndcg",
        "eligible",
        "not_eligible",
        "no_ranking",
    ]
    assert (
        list(baseline["stages"]["answerable"]["rows"])[:5] == report["definitions"]["stage_order"]
    )
    assert baseline["stages"]["answerable"]["rows"]["not_in_prompt"]["answer_ids"] == [
        "c-prompt/baseline"
    ]
    assert "exponential" in report["definitions"]["ndcg_gain"]
    assert run("--project", "stages", "--json") == text  # byte for byte


def test_k_chooses_the_cutoffs(stages):
    report = json.loads(run("--project", "stages", "--k", "3,1", "--json"))
    assert report["ks"] == [1, 3]
    assert list(report["variants"]["hybrid"]["retrieval"]["all"]["in_prompt"]) == ["1", "3"]
    assert report["definitions"]["stage_k"] == 3


def test_text_output_shows_the_tables_slice_by_slice(stages):
    text = run("--project", "stages", "--k", "3")
    assert "nDCG gain: exponential" in text
    for title in ("Retrieval", "Generation", "Abstention", "Stage diagnosis", "Latency"):
        assert title in text
    for slice_ in ("[all]", "[unanswerable]", "[adversarial]", "[heldout]"):
        assert slice_ in text
    assert "0.833" in text  # recall@3 of baseline over 6 eligible cases, 5/6
    assert "c-index/baseline" in text


@pytest.mark.parametrize("k", ["0", "x", ""])
def test_bad_k_is_refused(stages, k):
    with pytest.raises(CommandError):
        run("--project", "stages", "--k", k)


def test_unknown_project_is_refused(db):
    with pytest.raises(CommandError, match="No project"):
        run("--project", "nope")


def test_compare_adds_the_paired_comparison_of_the_report_page(stages):
    from evaluation.reports.comparison import compare

    report = json.loads(run("--project", "stages", "--compare", "baseline", "hybrid", "--json"))
    assert list(report)[-1] == "comparison"
    expected = json.loads(json.dumps(compare(stages, "baseline", "hybrid", k=5)))
    assert report["comparison"] == expected
    assert report["comparison"]["k"] == 5
    assert "comparison" not in json.loads(run("--project", "stages", "--json"))
    k3 = json.loads(
        run("--project", "stages", "--compare", "hybrid", "baseline", "--compare-k", "3", "--json")
    )
    assert (k3["comparison"]["a"], k3["comparison"]["b"], k3["comparison"]["k"]) == (
        "hybrid",
        "baseline",
        3,
    )


def test_compare_in_text_shows_the_differences_fusion_and_transitions(stages):
    text = run("--project", "stages", "--compare", "baseline", "hybrid")
    assert "a = baseline → b = hybrid, cases paired by case id (k = 5" in text
    assert "fuse(baseline, hybrid)" in text
    assert "Transitions baseline → hybrid, case by case" in text


@pytest.mark.parametrize(
    "pair, message",
    [(("baseline", "nope"), "unknown variant"), (("hybrid", "hybrid"), "two different")],
)
def test_compare_refuses_unknown_or_identical_variants(stages, pair, message):
    with pytest.raises(CommandError, match=message):
        run("--project", "stages", "--compare", *pair)
