"""The whole pipeline on data shaped like a public summarisation-hallucination benchmark
(fixtures/halu, written by fixtures/make_halu.py): one source per case, summaries by four
models, a binary support-only label schema, two annotators on most summaries, one on a few,
none on the rest, and two binary judges. Nothing is invented to fit the demo's shape (no
required facts, evidence, relevance or severity), and no report shows a figure for a field
the schema leaves out."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotate.adjudication.services import DecisionInput, adjudicate
from annotate.gold.exports import gold_rows
from annotate.gold.pairs import pairs_for_project
from annotate.imports.bundle_import import import_bundle
from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Answer, Role
from annotate.projects.opening import open_labelling
from evaluation.judges.runs import import_judge_run
from evaluation.models import JudgeRun
from evaluation.reports.agreement import agreement_report
from evaluation.reports.calibration import calibration_report
from evaluation.reports.evaluation import evaluate
from tests.conftest import FIXTURES, PASSWORD

HALU = FIXTURES / "halu"
OFF_CLAIM_FIELDS = ("severity", "requires_evidence", "citations", "evidence", "citation")
OFF_ANSWER_FIELDS = ("relevance", "abstention", "failure_labels")


def read(name: str) -> list[dict]:
    return [json.loads(line) for line in (HALU / name).read_text().splitlines()]


@pytest.fixture
def halu(db, lead, reviewer_a):
    project = import_bundle(lines=(HALU / "bundle.jsonl").open("rb"), project_slug="halu").project
    for name in ("ann1", "ann2"):
        add_member(project=project, username=name, role=Role.REVIEWER, password=PASSWORD)
    add_member(project=project, username=reviewer_a.username, role=Role.REVIEWER)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    project = open_labelling(project=project)
    import_labels(lines=(HALU / "labels.jsonl").open("rb"), project=project)
    for name in ("strict-binary", "lenient-binary"):
        import_judge_run(lines=(HALU / f"judge_{name}.jsonl").open("rb"), project=project)
    return project


def test_the_fixture_invents_nothing():
    rows = read("bundle.jsonl")
    cases = [r for r in rows if r["type"] == "case"]
    assert cases and not any({"required_facts", "evidence"} & set(c) for c in cases)
    assert not any(r["type"] == "judgment" for r in rows)
    labels = read("labels.jsonl")
    assert all(set(line) == {"answer_id", "reviewer", "claims"} for line in labels)
    assert all(set(c) == {"index", "support"} for line in labels for c in line["claims"])
    answers = [r for r in rows if r["type"] == "answer"]
    assert any("elapsed_ms" not in a for a in answers)  # optional fields missing


def test_agreement_has_support_on_its_binary_scale_and_no_field_the_schema_leaves_out(halu):
    report = agreement_report(halu, n_boot=200)
    for section in report["slices"].values():
        assert set(section) == {"support", "support_binary"}
    support = report["slices"]["all"]["support"]
    assert support["confusion"]["labels"] == ["supported", "unsupported"]
    assert support["n"] == report["slices"]["all"]["support_binary"]["n"] > 0
    out = io.StringIO()
    call_command("agreement", "--project", "halu", stdout=out)
    for name in (*OFF_CLAIM_FIELDS, *OFF_ANSWER_FIELDS):
        assert name not in out.getvalue()


def test_adjudication_gold_and_calibration_follow_the_binary_schema(halu, lead, client):
    _, claim_pairs = pairs_for_project(halu)
    disputed = [p for p in claim_pairs if p.pending]
    assert disputed, "the fixture has disputes"
    assert all(set(p.gold) == {"support", "support_binary"} for p in claim_pairs)
    before = calibration_report(run=JudgeRun.objects.get(project=halu, name="strict-binary"))
    assert before["scale"] == "binary" and before["corrected"]["provisional"]
    assert before["corrected"]["excluded"]["single_reviewer"] > 0
    assert before["corrected"]["excluded"]["pending_dispute"] > 0
    assert before["confusion"]["labels"] == ["supported", "unsupported"]
    assert "relevance" not in json.dumps(before["bias"])
    # Relevance and evidence are off: no figure for them, not even an undefined one.
    assert "relevance" not in before and "evidence_overlap" not in before["bias"]
    client.login(username=lead.username, password=PASSWORD)
    run = JudgeRun.objects.get(project=halu, name="strict-binary")
    page = client.get(reverse("judge_run", args=[halu.slug, run.pk])).content.decode()
    assert "Answer relevance" not in page and "Evidence overlap" not in page
    assert "no gold evidence to compare with" in page

    for pair in disputed:
        answer = Answer.objects.get(pk=pair.answer_id)
        with pytest.raises(
            Exception, match='"contradicted" is not a valid support: supported, unsupported'
        ):
            adjudicate(
                answer=answer,
                lead=lead,
                version=answer.adjudication.version if hasattr(answer, "adjudication") else 0,
                decisions=[
                    DecisionInput(answer.claims.get(pk=pair.claim_id), "support", "contradicted")
                ],
                rationale="r",
            )
        lock_version = getattr(getattr(answer, "adjudication", None), "version", 0)
        adjudicate(
            answer=answer,
            lead=lead,
            version=lock_version,
            decisions=[
                DecisionInput(answer.claims.get(pk=pair.claim_id), "support", "unsupported")
            ],
            rationale="The article says otherwise.",
        )
    after = calibration_report(run=JudgeRun.objects.get(project=halu, name="strict-binary"))
    assert not after["corrected"]["provisional"]
    assert after["corrected"]["excluded"]["pending_dispute"] == 0
    assert after["n"] > before["n"]

    rows = list(gold_rows(halu))
    claims = [r for r in rows if r["item"] == "claim"]
    answers = [r for r in rows if r["item"] == "answer"]
    assert claims and all(set(r["gold"]) == {"support", "support_binary"} for r in claims)
    assert all(r["reviewer_a"].keys() == {"reviewer", "note"} for r in answers)
    # No answer field is on: an answer row's gold is its claims' support_binary alone.
    unsupported = {r["answer_id"] for r in claims if r["gold"]["support_binary"] == "unsupported"}
    assert {r["answer_id"]: r["gold"] for r in answers} == {
        r["answer_id"]: {
            "support_binary": "unsupported" if r["answer_id"] in unsupported else "supported"
        }
        for r in answers
    }
    assert all(set(r["human_kappa"]) == {"support", "support_binary"} for r in claims)
    assert all(r["decided"] for r in rows)


def test_evaluation_shows_no_figure_for_what_the_project_does_not_have(halu, client, lead):
    report = evaluate(halu)
    assert report["not_available"] == {
        "retrieval": "not available: no relevance judgments in this project",
        "stages": "not available: no evidence passages in this project",
    }
    for variant in report["variants"].values():
        assert variant["retrieval"] is None and variant["stages"] is None
        generation = variant["generation"]["all"]
        for name in ("citation_precision", "citation_coverage", "relevance", "failure_labels"):
            assert name not in generation
        assert "gold" not in generation["abstention"]
        assert generation["faithfulness"]["contradicted"] == 0  # binary: no subtype at all
        assert generation["faithfulness"]["n"] == (
            generation["faithfulness"]["supported"] + generation["faithfulness"]["unsupported"]
        )
    client.login(username=lead.username, password=PASSWORD)
    page = client.get(reverse("evaluation:report", kwargs={"slug": "halu"})).content.decode()
    assert "Not available: no relevance judgments in this project" in page
    assert "Citation precision" not in page and "Relevance (mean" not in page


def test_the_reviewer_screen_shows_only_binary_support(halu, client, reviewer_a):
    client.login(username=reviewer_a.username, password=PASSWORD)
    response = client.post(reverse("take_next", kwargs={"slug": "halu"}))
    page = client.get(response["Location"]).content.decode()
    assert 'name="support" value="unsupported"' in page
    assert 'value="contradicted"' not in page
    for name in ("severity", "requires_evidence", "evidence_ids", "evidence_quote", "relevance"):
        assert f'name="{name}"' not in page


def test_a_label_file_with_fields_the_schema_leaves_out_is_refused_by_line(halu):
    from annotate.imports.lines import BundleInvalid

    line = read("labels.jsonl")[0]
    answer_id = line["answer_id"]
    bad = [
        {"answer_id": answer_id, "reviewer": "alice", "relevance": 2, "claims": line["claims"]},
        {
            "answer_id": answer_id,
            "reviewer": "alice",
            "claims": [
                {**c, "support": "contradicted", "severity": "minor"} for c in line["claims"]
            ],
        },
    ]
    from annotate.models import Assignment, ClaimLabel

    before = (Assignment.objects.count(), ClaimLabel.objects.count())
    with pytest.raises(BundleInvalid) as caught:
        import_labels(lines=[json.dumps(b) for b in bad], project=halu)
    assert (Assignment.objects.count(), ClaimLabel.objects.count()) == before
    messages = [str(e) for e in caught.value.errors]
    assert any(m.startswith("line 1: relevance is not labelled in this project") for m in messages)
    assert any(
        m.startswith("line 2: claims[0].severity is not labelled in this project") for m in messages
    )
    assert any(
        m.startswith(
            'line 2: claims[0].support must be "supported" or "unsupported" (this project '
            'labels support on a binary scale), got "contradicted"'
        )
        for m in messages
    )
