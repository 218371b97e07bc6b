"""The label pairs share their values' objects: the labels' choices, an empty citations map
and evidence list, and the sources' combinations (annotate.gold: a 100,000-claim project's
pairs weighed a fifth less). That is safe only while every consumer reads them and none
writes: here each one runs on the demo, with a lead's decision and a judge run, and the
objects shared across derivations must come out as they went in. (The sources are shared
within one derivation: a reader that wrote into one would change its own results, which
the reports' and exports' own tests pin.)"""

from __future__ import annotations

import pytest

from annotate.adjudication.queue import adjudication_queue
from annotate.gold.exports import gold_rows
from annotate.gold.pairs import _CHOICES, _NO_CITATIONS, _NO_IDS, pairs_for_project
from evaluation.models import JudgeRun
from evaluation.reports.agreement import agreement_report
from evaluation.reports.calibration import calibration_report
from evaluation.reports.comparison import compare
from evaluation.reports.evaluation import evaluate
from tests.api import build_demo
from tests.conftest import decide_support


@pytest.mark.django_db
def test_every_reader_of_the_pairs_leaves_their_shared_values_as_they_were(
    reviewer_a, reviewer_b, lead
):
    project = build_demo([reviewer_a, reviewer_b], lead)
    decide_support(project, lead)
    answer_pairs, claim_pairs = pairs_for_project(project)
    assert len({id(pair.source) for pair in claim_pairs}) < len(claim_pairs)
    assert any(pair.a["citations"] is _NO_CITATIONS for pair in claim_pairs)

    list(gold_rows(project, item="all"))
    list(gold_rows(project, item="claim", with_context=True))
    adjudication_queue(project)
    agreement_report(project)
    evaluate(project)
    compare(project, "baseline", "verifier")
    calibration_report(run=JudgeRun.objects.get(project=project), split="all")

    assert _NO_CITATIONS == {} and _NO_IDS == []
    assert all(key is value for key, value in _CHOICES.items())
