"""`evaluate --project SLUG [--k ...] [--json]`: the same numbers as the service, as JSON with
a stable shape and key order, or as tables for people."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.reports import evaluate
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
    assert list(report) == ["project", "corpus_version", "ks", "slices", "definitions", "variants"]
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
