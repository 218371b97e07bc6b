"""The benchmarks' bulk labels (bench/agreement_gold.label_everything, which the reference
benchmark, the Reviewers and reports benchmarks build on) insert rows the app reads as its own:
CI runs no benchmark, and a column added to a model once broke them all unnoticed."""

from __future__ import annotations

import pytest

from annotate.gold.exports import gold_counts
from annotate.models import Assignment, ClaimLabel
from bench.agreement_gold import label_everything
from evaluation.reports.agreement import agreement_report

pytestmark = pytest.mark.django_db


def test_the_benchmarks_bulk_labels_are_label_sets_the_reports_read(small_project, team):
    reviewers = [m.user for m in team.memberships.filter(role="reviewer").order_by("pk")[:2]]
    pairs = label_everything(small_project, reviewers)
    answers = small_project.answers.count()
    sets = Assignment.objects.filter(project=small_project, status="submitted")
    assert sets.count() == 2 * answers
    assert set(sets.values_list("guideline_version", flat=True)) == {
        small_project.guidelines_version
    }
    assert pairs == ClaimLabel.objects.filter(assignment__in=sets).count() // 2 > 0
    report = agreement_report(small_project, n_boot=20)
    assert report["slices"]["all"]["support"]["n"] == pairs
    counts = gold_counts(small_project)
    assert sum(counts.claims.values()) == pairs
