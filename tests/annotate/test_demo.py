"""`make run` loads the demo once: the project, its people, open labelling and the reviewers'
labels (alice and bob on 40 answers, carol the third on 12 of them), so every page has real
data."""

import io

import pytest
from django.core.management import call_command

from annotate.models import Assignment, Membership, Project


@pytest.mark.django_db
def test_load_demo_loads_once_and_prints_the_logins():
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    call_command("load_demo", stdout=out)
    project = Project.objects.get(slug="demo")
    assert project.state == "open" and project.guidelines
    # its labels under guidelines v1, the guidelines since at v2: the re-audit has data
    assert project.guidelines_version == 2
    versions = set(Assignment.objects.filter(project=project).values_list("guideline_version"))
    assert versions == {(1,)}
    assert project.answers.count() == 60 and project.cases.count() == 30
    # the pairs' label sets, carol's as the third on 12 answers, and her 17 gold checks
    assert Assignment.objects.filter(project=project, status="submitted").count() == 80 + 12 + 17
    assert project.overlap == 3
    roles = dict(Membership.objects.filter(project=project).values_list("user__username", "role"))
    assert roles == {"lead": "lead", "alice": "reviewer", "bob": "reviewer", "carol": "reviewer"}
    assert "already loaded" in out.getvalue() and "claimdesk-demo" in out.getvalue()


@pytest.mark.django_db
def test_the_third_reviewer_shows_every_label_set_and_keeps_the_pairs_gold():
    """carol makes the demo show alpha, Fleiss' kappa and three adjudication columns, and holds
    back one severity the pair agreed on; every other field's gold is the pair's, so the
    evaluation and calibration of the demo read as they did with two reviewers."""
    from annotate.gold.pairs import PENDING, pairs_for_project
    from annotate.management.commands.load_demo import load
    from evaluation.reports.agreement import agreement_report
    from tests.conftest import labelled_demo

    demo = load()
    pairs_only = labelled_demo(slug="pairs", reviewers=("alice", "bob", "carol"))

    def gold(project):
        answers, claims = pairs_for_project(project)
        found = {}
        for pair in claims:
            key = (pair.answer_id, pair.ordinal)
            found[key] = {n: (pair.gold.get(n), pair.source.get(n)) for n in pair.source}
        for pair in answers:
            found[(pair.answer_id, None)] = {
                n: (pair.gold.get(n), pair.source.get(n)) for n in pair.source
            }
        return found

    def by_answer_id(project, found):
        ids = dict(project.answers.values_list("pk", "answer_id"))
        return {(ids[pk], ordinal): fields for (pk, ordinal), fields in found.items()}

    three, two = by_answer_id(demo, gold(demo)), by_answer_id(pairs_only, gold(pairs_only))
    assert set(three) == set(two)
    changed = {
        (key, name)
        for key, fields in three.items()
        for name, value in fields.items()
        if value != two[key][name]
    }
    assert changed == {(("a2-deadline/baseline", 1), "severity")}
    assert three[("a2-deadline/baseline", 1)]["severity"] == (None, PENDING)
    answers, _ = pairs_for_project(demo)
    assert sum(bool(p.more) for p in answers) == 12

    report = agreement_report(demo, n_boot=0)
    support = report["slices"]["all"]["support"]
    assert support["raters"] == 3 and support["alpha"] is not None
    assert support["fleiss_kappa"] is not None and support["fleiss_n"] > 0
    reviewers = [p["reviewers"] for p in report["pairs"]]
    assert reviewers == [["alice", "bob"], ["alice", "carol"], ["bob", "carol"]]
