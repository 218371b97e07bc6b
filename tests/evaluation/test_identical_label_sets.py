"""One label set imported twice under two reviewer names is not agreement (SPEC.md "Gold from
elsewhere"): users did exactly that to bring in single-annotator gold, and every report showed
human kappa 1.000. The agreement report, its page, its text and the API name the pair instead
of giving it a kappa."""

from __future__ import annotations

import io
import json
import re
from html import unescape

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Role
from annotate.projects.opening import open_labelling
from evaluation.reports.agreement import agreement_report
from tests.api import API, token_client
from tests.conftest import FIXTURES, PASSWORD, import_fixture

LABELS = [json.loads(line) for line in (FIXTURES / "demo_labels.jsonl").read_text().splitlines()]
ALICE = [line for line in LABELS if line["reviewer"] == "alice"]
BOB = [line for line in LABELS if line["reviewer"] == "bob"]


def _project(lines: list[dict], reviewers=("alice", "bob"), slug: str = "twice"):
    project = import_fixture("demo.jsonl", slug)
    for name in reviewers:
        add_member(project=project, username=name, role=Role.REVIEWER, password=PASSWORD)
    project = open_labelling(project=project)
    import_labels(lines=[json.dumps(line) for line in lines], project=project)
    return project


def _as(reviewer: str, lines: list[dict]) -> list[dict]:
    return [{**line, "reviewer": reviewer} for line in lines]


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _agreement_text(slug: str) -> str:
    out = io.StringIO()
    call_command("agreement", project=slug, stdout=out)
    return out.getvalue()


@pytest.fixture
def twice(db, lead):
    """alice's labels, imported a second time as bob's."""
    project = _project(ALICE + _as("bob", ALICE))
    add_member(project=project, username=lead.username, role=Role.LEAD)
    return project


def test_the_same_labels_under_two_names_are_flagged_not_given_kappa_one(twice, client, lead):
    claims = sum(len(line["claims"]) for line in ALICE)
    answers = len(ALICE)
    note = (
        f"alice and bob gave identical labels on all {claims + answers} items ({claims} claims, "
        f"{answers} answers) they both labelled: not two independent label sets (was one label "
        "set imported twice? use import_gold for single-annotator gold)"
    )
    report = agreement_report(twice, n_boot=100)
    assert report["identical_label_sets"] is True
    (pair,) = report["pairs"]
    assert pair["identical_label_sets"] is True and pair["identical_label_sets_note"] == note
    # The JSON keeps what was computed (kappa 1.0 where defined), beside the flag.
    assert report["slices"]["all"]["support"]["kappa"] == 1.0

    text = _agreement_text("twice")
    assert f"WARNING {note}" in text
    support = re.search(r"^  support +(\d+) +(\S+) +(\S+)", text, re.M)
    assert support.groups() == (str(claims), "1.000", "ident.")
    assert " 1.000  [" not in text  # no kappa with an interval anywhere

    client.login(username=lead.username, password=PASSWORD)
    page = client.get(reverse("agreement", kwargs={"slug": "twice"})).content.decode()
    assert 'id="identical-label-sets"' in page
    body = _text(page)
    assert f"One label set twice? {note}." in body
    assert "no kappa is shown for this project" in body
    rows = re.findall(r"<tr>\s*<th scope=\"row\">Support</th>(.*?)</tr>", page, re.S)
    assert rows and all("not measured — identical label sets" in _text(r) for r in rows)
    assert "1.00 [" not in body

    api = token_client(lead).get(f"{API}/projects/twice/agreement/").json()
    assert api["identical_label_sets"] is True
    assert api["pairs"][0]["identical_label_sets_note"] == note


def test_two_real_label_sets_are_not_flagged(db, client, lead):
    project = _project(ALICE + BOB, slug="real")
    add_member(project=project, username=lead.username, role=Role.LEAD)
    report = agreement_report(project, n_boot=100)
    assert report["identical_label_sets"] is False
    assert report["pairs"][0]["identical_label_sets"] is False
    assert "identical_label_sets_note" not in report["pairs"][0]
    assert "WARNING" not in _agreement_text("real")
    client.login(username=lead.username, password=PASSWORD)
    page = client.get(reverse("agreement", kwargs={"slug": "real"})).content.decode()
    assert "identical-label-sets" not in page and "not measured" not in page


def test_one_differing_label_is_enough_to_be_two_label_sets(db):
    changed = json.loads(json.dumps(ALICE))
    changed[-1]["claims"][0]["evidence_quote"] = changed[-1]["claims"][0]["evidence_quote"][:-1]
    project = _project(ALICE + _as("bob", changed), slug="one-off")
    assert agreement_report(project, n_boot=100)["identical_label_sets"] is False


def test_only_the_copied_pair_is_named_when_another_pair_is_real(db, client, lead):
    """alice and bob (a copy) share the first half of the answers, alice and carol (bob's real
    labels) the rest: the slices mix both, the page says so, and only one pair is flagged."""
    half = len(ALICE) // 2
    lines = ALICE + _as("bob", ALICE[:half]) + _as("carol", BOB[half:])
    project = _project(lines, reviewers=("alice", "bob", "carol"), slug="mixed")
    add_member(project=project, username=lead.username, role=Role.LEAD)
    report = agreement_report(project, n_boot=100)
    flags = {tuple(p["reviewers"]): p["identical_label_sets"] for p in report["pairs"]}
    assert flags == {("alice", "bob"): True, ("alice", "carol"): False}
    assert report["identical_label_sets"] is True
    text = _agreement_text("mixed")
    assert text.count("WARNING") == 1 and "WARNING alice and bob" in text
    assert "ident." not in text  # the slices' kappas are shown, the warning beside them
    client.login(username=lead.username, password=PASSWORD)
    body = _text(client.get(reverse("agreement", kwargs={"slug": "mixed"})).content.decode())
    assert "no kappa is shown for that pair, and each slice's figures below count its items" in (
        body
    )
    assert "Pair: alice and bob identical label sets alice and bob gave identical labels" in body
