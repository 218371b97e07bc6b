"""The Reviewers report (evaluation.reports.reviewers) on a constructed project, each figure
against an independent computation: the ORM's own counts, the statistics module and numpy's
percentiles for time per claim, scikit-learn's cohen_kappa_score for kappa between reviewers,
the gold derivation (annotate.gold.pairs) for the share overruled, statsmodels' Wilson
interval for accuracy on checks, and the drift chart of evaluation.quality run over the
check errors the test made."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint

from annotate.gold.pairs import ADJUDICATED, comparable, pairs_for_project
from annotate.models import Assignment, Claim, ClaimLabel
from evaluation.quality import drift
from evaluation.reports.reviewers import reviewers_report
from tests.api import build_demo
from tests.evaluation import reviewers_world as world

pytestmark = pytest.mark.django_db
SUPPORT = list(world.SUPPORT)


@pytest.fixture
def carol(db):
    return get_user_model().objects.create_user(username="carol", password="x")


@pytest.fixture
def project(reviewer_a, reviewer_b, lead, carol):
    demo = build_demo([reviewer_a, reviewer_b], lead)
    return world.build(demo, alice=reviewer_a, carol=carol, lead=lead)


def rows_by_name(report) -> dict[str, dict]:
    return {row["username"]: row for row in report["reviewers"]}


def test_tasks_and_time_per_claim_are_the_assignments_own(project, reviewer_a, carol):
    report = rows_by_name(reviewers_report(project, n_boot=50))
    assert set(report) == {"alice", "bob", "carol"}
    for name in ("alice", "bob", "carol"):
        submitted = Assignment.objects.filter(
            project=project, reviewer__username=name, status="submitted"
        )
        assert report[name]["tasks"] == submitted.count()
    # bob's label sets are all imported: no time, said so, never 0
    assert report["bob"]["seconds_per_claim"]["median"] is None
    assert report["bob"]["per_day"] is None
    assert "imported" in report["bob"]["undefined"]["seconds_per_claim"]
    for person in (reviewer_a, carol):
        timed = Assignment.objects.filter(
            project=project, reviewer=person, status="submitted", undo_until__isnull=False
        ).select_related("answer")
        planned = sorted(s for who, _, _, s in world.SCHEDULE if who == person.username)
        # the active time is what the reviewer spent between taking and submitting
        assert sorted(a.seconds_spent for a in timed) == planned
        rates = [
            a.seconds_spent / a.answer.claims.count() for a in timed if a.answer.claims.count()
        ]
        row = report[person.username]
        assert row["timed_tasks"] == len(planned)
        assert row["seconds_per_claim"]["n"] == len(rates)
        assert row["seconds_per_claim"]["median"] == pytest.approx(statistics.median(rates))
        p90 = statistics.quantiles(rates, n=10, method="inclusive")[8]
        assert row["seconds_per_claim"]["p90"] == pytest.approx(p90)
    # alice: 4 tasks on 2 days; carol: 6 tasks on 2 days
    assert (report["alice"]["per_day"], report["alice"]["days_worked"]) == (2.0, 2)
    assert (report["carol"]["per_day"], report["carol"]["days_worked"]) == (3.0, 2)


def _claim_supports(project, username) -> dict[int, str]:
    rows = ClaimLabel.objects.filter(
        assignment__project=project,
        assignment__reviewer__username=username,
        assignment__status="submitted",
        assignment__is_check=False,
    ).values_list("claim_id", "support")
    return dict(rows)


def test_kappa_with_each_co_reviewer_is_scikit_learns_over_the_claims_both_labelled(project):
    report = rows_by_name(reviewers_report(project, n_boot=200))
    for one, other in (("alice", "bob"), ("alice", "carol")):
        a, b = _claim_supports(project, one), _claim_supports(project, other)
        shared = sorted(a.keys() & b.keys())
        expected = cohen_kappa_score([a[c] for c in shared], [b[c] for c in shared], labels=SUPPORT)
        entry = report[one]["kappa_with"][other]["support"]
        assert entry["n"] == len(shared) > 0
        assert entry["kappa"] == pytest.approx(expected)
        assert entry["ci95"][0] <= entry["kappa"] <= entry["ci95"][1]
        # the same figure from either side
        assert report[other]["kappa_with"][one]["support"] == entry
    # bob and carol labelled no answer together: no kappa, not a 0
    assert "bob" not in report["carol"]["kappa_with"]
    assert set(report["alice"]["kappa_with"]) == {"bob", "carol"}


def test_the_share_overruled_is_each_reviewers_labels_against_the_lead_s_decisions(project):
    report = rows_by_name(reviewers_report(project, n_boot=50))
    answer_pairs, claim_pairs = pairs_for_project(project)
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    names = dict(get_user_model().objects.values_list("pk", "username"))
    for pair in [*answer_pairs, *claim_pairs]:
        for name, source in pair.source.items():
            if source != ADJUDICATED or name == "support_binary":
                continue
            gold = comparable(name, {name: pair.gold[name]})
            for reviewer, labels in ((pair.reviewer_a, pair.a), (pair.reviewer_b, pair.b)):
                counts[names[reviewer]][0] += 1
                counts[names[reviewer]][1] += comparable(name, labels) != gold
    assert sum(n for n, _ in counts.values()) == 8  # four decisions, two reviewers each
    for name, row in report.items():
        adjudicated, overruled = counts.get(name, (0, 0))
        assert (row["adjudicated_fields"], row["overruled"]) == (adjudicated, overruled)
        if adjudicated:
            assert row["overruled_share"] == pytest.approx(overruled / adjudicated)
        else:
            assert row["overruled_share"] is None
            assert "decided" in row["undefined"]["overruled_share"]


def test_check_accuracy_and_the_drift_flag_come_from_checks_taken_through_the_queue(project, carol):
    # carol takes every decided answer as a check; she errs on ten claims in a row late on
    checks = world.take_checks(project, carol, wrong=world.DRIFTING)
    assert len(checks) >= 8
    report = rows_by_name(reviewers_report(project, n_boot=200))
    row = report["carol"]
    assert row["checks"]["n"] == len(checks)
    # check label sets are tasks, and never enter kappa: carol's checks are answers alice
    # labelled, and her kappa with alice stays over the answers both labelled as tasks
    assert row["tasks"] == 6 + len(checks)
    alice, mine = _claim_supports(project, "alice"), _claim_supports(project, "carol")
    assert row["kappa_with"]["alice"]["support"]["n"] == len(alice.keys() & mine.keys())
    support = row["checks"]["accuracy"]["support"]
    trials = row["drift"]["trials"]
    assert support["n"] == trials > 22
    right = trials - len(world.DRIFTING)
    assert support["correct"] == right
    assert support["value"] == pytest.approx(right / trials)
    assert support["ci95"] == pytest.approx(
        list(proportion_confint(right, trials, method="wilson"))
    )
    # the chart the report ran is the chart over these errors, designed for the project's
    # claims per check, naming the checks of its alarm
    marked = project.answers.filter(gold_checks__isnull=False)
    claims = Claim.objects.filter(answer__in=marked).count()
    design = reviewers_report(project, n_boot=10)["drift_design"]
    assert design["claims_per_check"] == math.ceil(10 * claims / marked.count() - 1e-9) / 10
    errors = [i in world.DRIFTING for i in range(trials)]
    chart = drift(errors, claims_per_check=design["claims_per_check"])
    assert row["drift"]["flag"] is chart.flag is True
    per_claim = []
    for number in checks:
        answer = project.answers.get(task_number=number)
        per_claim += [number] * answer.claims.count()
    assert row["drift"]["checks"] == list(dict.fromkeys(per_claim[i] for i in chart.checks))
    assert per_claim[min(world.DRIFTING)] in row["drift"]["checks"]
    # nobody else took a check
    assert report["alice"]["checks"]["n"] == 0 and not report["alice"]["drift"]["flag"]
    assert report["alice"]["checks"]["accuracy"]["support"]["value"] is None


def test_the_command_prints_the_spec_s_json_shape(project, carol):
    world.take_checks(project, carol, wrong=world.DRIFTING)
    out = StringIO()
    call_command("reviewers", "--project", project.slug, "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert set(report) == {
        "project",
        "fields",
        "check_fields",
        "target_error_rate",
        "drift_design",
        "reviewers",
    }
    assert [row["username"] for row in report["reviewers"]] == ["alice", "bob", "carol"]
    for row in report["reviewers"]:
        # SPEC.md: {"username", "tasks", "seconds_per_claim": {"median", "p90"}, "per_day",
        # "overruled_share", "checks": {"n", "accuracy": {FIELD: {"value", "ci95"}}},
        # "drift": {"flag", "checks"}, "kappa_with": {USERNAME: ...}} -- with the counts
        # beside each rate and the reason of each undefined one
        assert set(row) == {
            "username",
            "tasks",
            "timed_tasks",
            "seconds_per_claim",
            "per_day",
            "days_worked",
            "overruled_share",
            "overruled",
            "adjudicated_fields",
            "checks",
            "drift",
            "kappa_with",
            "undefined",
        }
        assert {"median", "p90", "n"} <= set(row["seconds_per_claim"])
        assert set(row["checks"]) == {"n", "accuracy"}
        for field, accuracy in row["checks"]["accuracy"].items():
            assert field in report["check_fields"]
            assert {"value", "ci95", "n", "correct", "kappa", "kappa_ci95"} <= set(accuracy)
        assert {"flag", "checks"} <= set(row["drift"])
        assert isinstance(row["drift"]["flag"], bool)
        assert all(isinstance(check, int) for check in row["drift"]["checks"])
        for other, fields in row["kappa_with"].items():
            assert other in {"alice", "bob", "carol"} - {row["username"]}
            assert set(fields) == set(report["fields"])
            assert {"n", "kappa", "ci95"} <= set(fields["support"])
        assert isinstance(row["tasks"], int)
    carol_row = report["reviewers"][2]
    assert carol_row["drift"]["flag"] is True
    # the text form names the same people and the flag
    out = StringIO()
    call_command("reviewers", "--project", project.slug, stdout=out)
    text = out.getvalue()
    assert "carol" in text and "FLAG (checks" in text
