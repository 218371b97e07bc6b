"""Three reviewers on the same answers (issue #32 item 3): every label set counts.

Agreement carries Krippendorff's alpha equal to the `krippendorff` package (nominal and ordinal
by field), Fleiss' kappa equal to statsmodels', and every pair's Cohen's kappa equal to
scikit-learn's, each recomputed here from the labels as the ORM reads them; gold is agreed only
where all three agree; the agreement page shows those numbers, the adjudication screen a
column per reviewer, the gold export every reviewer's labels under a pseudonym; and a reviewer
still reaches nobody else's labels."""

from __future__ import annotations

import copy
import json
import re
from collections import defaultdict
from html import unescape

import krippendorff
import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa

from annotate.gold.exports import gold_rows
from annotate.gold.pairs import AGREED, PENDING, pairs_for_project
from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Answer, Assignment, ClaimLabel, Decision, Project
from annotate.projects.opening import open_labelling
from evaluation.agreement import ABSTENTION, CITATION, RELEVANCE, SEVERITY, SUPPORT
from evaluation.reports.agreement import agreement_report
from tests.api import API, token_client
from tests.conftest import FIXTURES, PASSWORD, import_fixture

pytestmark = pytest.mark.django_db

REVIEWERS = ("alice", "bob", "carol")
CAROL_NOTE = "third-note-3f9c"  # on every label set of carol's: it must reach only her and leads
SLICE_FLAGS = {
    "all": lambda answerable, adversarial: True,
    "answerable": lambda answerable, adversarial: answerable,
    "unanswerable": lambda answerable, adversarial: not answerable,
    "adversarial": lambda answerable, adversarial: adversarial,
}


@pytest.fixture
def reviewer_c(db):
    return get_user_model().objects.create_user(username="carol", password=PASSWORD)


def carol_lines(seed: int = 32) -> list[dict]:
    """carol's label sets of the 40 answers alice and bob labelled: alice's, with a seeded
    share of support, severity, citation verdicts, relevance and abstention changed (within
    what a submission may say: a supported or contradicted claim names its evidence, a
    supported one has severity none)."""
    rng = np.random.default_rng(seed)
    with open(FIXTURES / "demo_labels.jsonl") as stream:
        alice = [row for row in map(json.loads, stream) if row["reviewer"] == "alice"]
    out = []
    for row in alice:
        row = copy.deepcopy(row)
        row["reviewer"], row["note"] = "carol", CAROL_NOTE
        for claim in row["claims"]:
            claim["note"] = CAROL_NOTE
            if rng.random() < 0.35:
                support = SUPPORT[rng.integers(3)]
                needs = claim["requires_evidence"] and support != "insufficient_evidence"
                if needs and not claim["evidence_ids"]:
                    support = "insufficient_evidence"
                claim["support"] = support
            if claim["support"] == "supported":
                claim["severity"] = "none"
            elif rng.random() < 0.4 or claim["severity"] == "none":
                claim["severity"] = SEVERITY[1 + rng.integers(3)]
            for cited, verdict in claim["citations"].items():
                if verdict != "citation_not_found" and rng.random() < 0.25:
                    claim["citations"][cited] = CITATION[rng.integers(2)]
        if rng.random() < 0.3:
            row["relevance"] = int(rng.integers(3))
        if row["abstention"] is not None and rng.random() < 0.4:
            row["abstention"] = ABSTENTION[rng.integers(2)]
        out.append(row)
    return out


@pytest.fixture
def three(reviewer_a, reviewer_b, reviewer_c, lead, outsider) -> Project:
    """The demo bundle with an overlap of 3, and alice, bob and carol on the same 40 answers."""
    project = import_fixture("demo.jsonl", "three")
    project.overlap = 3
    project.save(update_fields=["overlap"])
    for person in (reviewer_a, reviewer_b, reviewer_c):
        add_member(project=project, username=person.username, role="reviewer")
    add_member(project=project, username=lead.username, role="lead")
    project = open_labelling(project=project)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        import_labels(lines=stream, project=project)
    lines = [json.dumps(row).encode() + b"\n" for row in carol_lines()]
    import_labels(lines=lines, project=project)
    return project


# --- The labels as the ORM reads them, and the statistics of the reference packages ----------


def labels_by_item(project: Project) -> dict[str, dict]:
    """field -> item -> {reviewer: label}, with each item's (answerable, adversarial), read
    through the ORM: claims by pk, a claim's cited passages by (claim, id), answers by pk."""
    out: dict[str, dict] = defaultdict(dict)
    flags = {}
    for label in ClaimLabel.objects.filter(
        assignment__project=project, assignment__status="submitted"
    ).select_related("assignment__reviewer", "claim__answer__case"):
        who, case = label.assignment.reviewer.username, label.claim.answer.case
        item = label.claim_id
        flags[("claim", item)] = (case.answerable, case.adversarial)
        for name, value in (
            ("support", label.support),
            ("support_binary", "supported" if label.support == "supported" else "unsupported"),
            ("severity", label.severity),
            ("requires_evidence", label.requires_evidence),
        ):
            out[name].setdefault(("claim", item), {})[who] = value
        for cited, verdict in label.citations.items():
            key = ("citation", (item, cited))
            flags[key] = (case.answerable, case.adversarial)
            out["citation"].setdefault(key, {})[who] = verdict
    for assignment in Assignment.objects.filter(project=project, status="submitted").select_related(
        "reviewer", "answer__case"
    ):
        key = ("answer", assignment.answer_id)
        case = assignment.answer.case
        flags[key] = (case.answerable, case.adversarial)
        out["relevance"].setdefault(key, {})[assignment.reviewer.username] = assignment.relevance
        if assignment.abstention:
            out["abstention"].setdefault(key, {})[assignment.reviewer.username] = (
                assignment.abstention
            )
    return {"items": out, "flags": flags}


VOCABULARY = {
    "support": SUPPORT,
    "support_binary": ("supported", "unsupported"),
    "severity": SEVERITY,
    "requires_evidence": (True, False),
    "citation": CITATION,
    "relevance": RELEVANCE,
    "abstention": ABSTENTION,
}
ORDINAL = {"severity", "relevance"}


def in_slice(table, name, slice_name):
    keep = SLICE_FLAGS[slice_name]
    return {
        item: sets
        for item, sets in table["items"][name].items()
        if keep(*table["flags"][item]) and len(sets) >= 2
    }


def package_alpha(items: dict, name: str) -> float:
    labels = VOCABULARY[name]
    data = [
        [labels.index(sets[who]) if who in sets else np.nan for sets in items.values()]
        for who in REVIEWERS
    ]
    level = "ordinal" if name in ORDINAL else "nominal"
    return krippendorff.alpha(
        reliability_data=data, value_domain=list(range(len(labels))), level_of_measurement=level
    )


def statsmodels_fleiss(items: dict, name: str) -> tuple[float, int]:
    labels = VOCABULARY[name]
    full = [sets for sets in items.values() if len(sets) == 3]
    table = np.array([[list(sets.values()).count(label) for label in labels] for sets in full])
    return fleiss_kappa(table, method="fleiss"), len(full)


FIELDS = ("support", "support_binary", "severity", "requires_evidence", "citation")
FIELDS += ("relevance", "abstention")


def test_alpha_and_fleiss_equal_the_reference_packages_in_every_slice(three):
    report = agreement_report(three, n_boot=200)
    table = labels_by_item(three)
    checked = 0
    for slice_name in SLICE_FLAGS:
        for name in FIELDS:
            items = in_slice(table, name, slice_name)
            stats = report["slices"][slice_name][name]
            assert stats["raters"] == (3 if items else 0), (slice_name, name)
            assert stats["alpha_n"] == len(items)
            if len({v for sets in items.values() for v in sets.values()}) < 2:
                assert stats["alpha"] is None and stats["alpha_undefined_reason"]
                continue
            assert stats["alpha"] == pytest.approx(package_alpha(items, name), abs=1e-9)
            assert stats["alpha_ci95"][0] <= stats["alpha"] <= stats["alpha_ci95"][1]
            assert stats["all_agree"] == sum(len(set(s.values())) == 1 for s in items.values())
            if name in ORDINAL:
                assert "fleiss_kappa" not in stats
            else:
                expected, n = statsmodels_fleiss(items, name)
                assert stats["fleiss_n"] == n
                assert stats["fleiss_kappa"] == pytest.approx(expected, abs=1e-9)
            checked += 1
    assert checked >= 20  # most fields of most slices have two labels or more to compare


def test_every_pair_of_reviewers_is_cohens_kappa_on_the_items_both_labelled(three):
    report = agreement_report(three, n_boot=0)
    table = labels_by_item(three)
    pairs = {tuple(p["reviewers"]): p for p in report["pairs"]}
    assert set(pairs) == {("alice", "bob"), ("alice", "carol"), ("bob", "carol")}
    for (a, b), entry in pairs.items():
        assert entry["identical_label_sets"] is False
        for name in FIELDS:
            both = [s for s in table["items"][name].values() if a in s and b in s]
            labels = list(VOCABULARY[name])
            assert entry[name]["n"] == len(both), (a, b, name)
            weights = "linear" if name in ORDINAL else None
            expected = cohen_kappa_score(
                [s[a] for s in both], [s[b] for s in both], labels=labels, weights=weights
            )
            assert entry[name]["kappa"] == pytest.approx(expected, abs=1e-9), (a, b, name)


def test_the_json_command_carries_the_spec_keys(three):
    from io import StringIO

    out = StringIO()
    call_command("agreement", project="three", json=True, stdout=out)
    data = json.loads(out.getvalue())
    for name, stats in data["slices"]["all"].items():
        if name == "evidence":
            continue
        assert {"n", "kappa", "raters", "alpha", "alpha_ci95"} <= set(stats), name
        assert ("fleiss_kappa" in stats) == (name not in ORDINAL), name
    text = StringIO()
    call_command("agreement", project="three", stdout=text)
    alpha = data["slices"]["all"]["support"]["alpha"]
    assert f"alpha (nominal) {alpha:.3f}" in text.getvalue()


def test_a_project_of_pairs_keeps_its_report_as_it_was(reviewer_a, reviewer_b, lead):
    from tests.conftest import labelled_demo

    report = agreement_report(labelled_demo(leads=[lead.username]), n_boot=0)
    assert not any("alpha" in stats for stats in report["slices"]["all"].values())
    assert [p["reviewers"] for p in report["pairs"]] == [["alice", "bob"]]


def test_agreement_per_guideline_version_reads_only_that_versions_label_sets(three, reviewer_c):
    """carol's label sets made under version 2: version 1's report is the pair's alone (no
    alpha: two label sets an answer), version 2's has too few to compare, and the report of
    every version is the one of three raters."""
    from annotate.models import Assignment

    Assignment.objects.filter(project=three).update(guideline_version=1)
    Assignment.objects.filter(project=three, reviewer=reviewer_c).update(guideline_version=2)
    first = agreement_report(three, n_boot=0, guideline_version=1)
    assert not any("alpha" in stats for stats in first["slices"]["all"].values())
    assert [p["reviewers"] for p in first["pairs"]] == [["alice", "bob"]]
    second = agreement_report(three, n_boot=0, guideline_version=2)
    assert second["slices"]["all"]["support"]["n"] == 0 and second["pairs"] == []
    every = agreement_report(three, n_boot=0)
    assert every["slices"]["all"]["support"]["raters"] == 3


# --- Gold ---------------------------------------------------------------------------------------


def test_gold_is_agreed_only_where_all_three_agree(three):
    table = labels_by_item(three)
    answer_pairs, claim_pairs = pairs_for_project(three)
    assert len(answer_pairs) == 40 and all(len(p.sides) == 3 for p in claim_pairs)
    two_of_three = 0
    for pair in claim_pairs:
        for name in ("support", "severity", "requires_evidence"):
            said = table["items"][name][("claim", pair.claim_id)]
            agreed = len(set(said.values())) == 1
            assert pair.source[name] == (AGREED if agreed else PENDING), (pair.claim_id, name)
            assert pair.gold[name] == (said["alice"] if agreed else None)
            two_of_three += not agreed and said["alice"] == said["bob"]
    for pair in answer_pairs:
        said = table["items"]["relevance"][("answer", pair.answer_id)]
        agreed = len(set(said.values())) == 1
        assert pair.source["relevance"] == (AGREED if agreed else PENDING)
    # the pairs alone would have called these agreed: the third reviewer holds them back
    assert two_of_three >= 3


def test_the_export_carries_every_reviewers_labels_under_a_pseudonym(three):
    rows = list(gold_rows(three))
    assert rows and all(len(r["other_reviewers"]) == 1 for r in rows)
    pseudonyms = {(r["reviewer_a"]["reviewer"], r["reviewer_b"]["reviewer"]) for r in rows}
    assert {r["other_reviewers"][0]["reviewer"] for r in rows} == {"R3"}
    assert pseudonyms <= {("R1", "R2"), ("R2", "R1")}
    assert {r["label_sets"] for r in rows if r["item"] == "answer"} == {3}
    claim = next(r for r in rows if r["item"] == "claim")
    label = ClaimLabel.objects.get(
        assignment__reviewer__username="carol",
        claim__answer__answer_id=claim["answer_id"],
        claim__ordinal=claim["claim_index"],
    )
    assert claim["other_reviewers"][0]["support"] == label.support
    assert claim["other_reviewers"][0]["note"] == CAROL_NOTE
    text = json.dumps(rows)
    assert not any(f'"{name}"' in text for name in REVIEWERS)


def test_the_export_follows_its_schema_with_three_reviewers(three):
    import jsonschema

    schema = json.loads((FIXTURES.parent / "docs" / "gold-export.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    for row in gold_rows(three):
        validator.validate(json.loads(json.dumps(row)))


# --- Pages --------------------------------------------------------------------------------------


def login(client, user):
    client.login(username=user.username, password=PASSWORD)
    return client


def label_set_cells(page: str, slice_name: str) -> dict[str, dict[str, str]]:
    """The 'every label set' table of a slice, as the page shows it: field -> cell texts."""
    table = re.search(
        rf'<table class="table agreement label-sets" aria-label="Every label set, slice '
        rf'{slice_name}">(.*?)</table>',
        page,
        re.S,
    ).group(1)
    cells = {}
    for name, row in re.findall(r'<tr data-field="(\w+)">(.*?)</tr>', table, re.S):
        found = dict(re.findall(r'<span class="(alpha-value|fleiss-value|fleiss-n)">([^<]*)<', row))
        for css in ("alpha-n", "raters", "all-agree"):
            found[css] = re.search(rf'<td class="num {css}">([^<]*)</td>', row).group(1)
        cells[name] = found
    return cells


def test_the_agreement_page_reads_back_every_label_sets_numbers(
    client, three, lead, django_assert_num_queries
):
    from annotate.common import computed

    client = login(client, lead)
    url = reverse("agreement", kwargs={"slug": three.slug})
    page = client.get(url).content.decode()
    report = computed.read(three, "agreement").result
    table = labels_by_item(three)
    for slice_name in ("all", "answerable"):
        cells = label_set_cells(page, slice_name)
        for name in ("support", "severity", "citation", "relevance"):
            stats = report["slices"][slice_name][name]
            items = in_slice(table, name, slice_name)
            shown = cells[name]
            assert shown["alpha-n"] == str(len(items)) and shown["raters"] == "3"
            assert float(shown["alpha-value"]) == pytest.approx(
                package_alpha(items, name), abs=5e-4
            )
            agree = sum(len(set(s.values())) == 1 for s in items.values())
            assert shown["all-agree"] == f"{agree}/{len(items)}"
            if name not in ORDINAL:
                expected, n = statsmodels_fleiss(items, name)
                assert float(shown["fleiss-value"]) == pytest.approx(expected, abs=5e-4)
                assert shown["fleiss-n"] == str(n)
            else:
                assert "fleiss-value" not in shown
            assert stats["alpha_n"] == len(items)
    text = unescape(page)
    for pair in ("alice and bob", "alice and carol", "bob and carol"):
        assert f"Pair: {pair}" in text
    csv_lines = client.get(url, {"format": "csv"}).content.decode().splitlines()
    assert csv_lines[0].endswith("fleiss_ci95_high,all_agree")
    # The stored report: the session, the user, the role, the project's revision, the report.
    with django_assert_num_queries(5):
        assert client.get(url).status_code == 200


def test_the_adjudication_screen_shows_a_column_per_reviewer_and_takes_cs_value(
    client, three, lead, django_assert_num_queries
):
    _, claim_pairs = pairs_for_project(three)
    pair = next(
        p
        for p in claim_pairs
        if p.source["support"] == PENDING and p.more[0][1]["support"] not in (p.a["support"],)
    )
    answer = Answer.objects.get(pk=pair.answer_id)
    url = reverse("adjudicate", kwargs={"slug": three.slug, "number": answer.task_number})
    client = login(client, lead)
    client.get(url)  # the first view freezes the task's labels (its lock)
    with django_assert_num_queries(PINNED_SCREEN_QUERIES):
        page = client.get(url).content.decode()
    for letter in "ABC":
        assert f"<th>Reviewer {letter}</th>" in page
    key = f"f-{pair.ordinal}-support"
    assert f'name="{key}" value="c"' in page
    assert CAROL_NOTE in page  # the lead reads every reviewer's note, without a name
    assert not any(name in page for name in REVIEWERS)
    version = re.search(r'name="version" value="(\d+)"', page).group(1)
    client.post(url, {"version": version, key: "c"})
    decision = Decision.objects.get(claim_id=pair.claim_id, field="support")
    assert decision.value == pair.more[0][1]["support"]


# The adjudication screen of a task with three label sets, its lock already taken: the session,
# the user, the role, the answer by number; starting adjudication (a savepoint, the answer, its
# lock, the release: 4); the answer with its case; its label sets (assignments, claim labels,
# decisions: 3, whatever the number of reviewers); its claims and their citations (2), the
# passages, the lock, the decisions' history, the audit trail (assignments' and claims'
# history, corrections: 3), the lead's shortcut preference and whether the answer is a gold
# check (annotate.checks: its badge and button).
PINNED_SCREEN_QUERIES = 22


# --- Blinding -----------------------------------------------------------------------------------


def test_a_third_reviewer_reaches_nobody_elses_labels(client, three, reviewer_c):
    """carol labelled every answer alice and bob did: her pages, her API and every lead page
    and endpoint she tries give her neither their labels, their notes nor their names."""
    with open(FIXTURES / "demo_labels.jsonl") as stream:
        others = [row for row in map(json.loads, stream)]
    secrets = {"alice", "bob"} | {
        note
        for row in others
        for note in [row["note"], *(c["note"] for c in row["claims"])]
        if note and len(note) > 8
    }
    client = login(client, reviewer_c)
    mine = Answer.objects.filter(project=three, assignments__reviewer=reviewer_c)
    urls = [reverse("my_tasks", kwargs={"slug": three.slug})]
    urls += [
        reverse("task", kwargs={"slug": three.slug, "number": a.task_number}) for a in mine[:5]
    ]
    lead_pages = ["agreement", "adjudication_queue"]
    urls += [reverse(name, kwargs={"slug": three.slug}) for name in lead_pages]
    urls += [
        reverse("adjudicate", kwargs={"slug": three.slug, "number": a.task_number})
        for a in mine[:3]
    ]
    urls += [reverse("gold_download", kwargs={"slug": three.slug, "fmt": "jsonl"})]
    for url in urls:
        response = client.get(url)
        body = (
            b"".join(response.streaming_content) if response.streaming else response.content
        ).decode()
        leaked = [s for s in secrets if re.search(rf"(?<![\w-]){re.escape(s)}(?![\w-])", body)]
        assert not leaked, (url, leaked)
        if url.endswith(("/agreement/", "/adjudication/")) or "/adjudicate/" in url:
            assert response.status_code == 404, url
    api = token_client(reviewer_c)
    for path in ("agreement/", "adjudication/", f"adjudication/{mine[0].task_number}/"):
        response = api.get(f"{API}/projects/{three.slug}/{path}")
        assert response.status_code in (403, 404), path
        assert not any(s in response.content.decode() for s in secrets), path


def test_a_third_label_set_copied_from_another_is_named_as_such(
    reviewer_a, reviewer_b, reviewer_c, lead
):
    """Every pair is checked for one label set under two names, the pairs beyond each answer's
    first two included: carol's copy of alice's labels is no third reviewer."""
    project = import_fixture("demo.jsonl", "copied")
    project.overlap = 3
    project.save(update_fields=["overlap"])
    for person in (reviewer_a, reviewer_b, reviewer_c):
        add_member(project=project, username=person.username, role="reviewer")
    project = open_labelling(project=project)
    with open(FIXTURES / "demo_labels.jsonl") as stream:
        rows = [json.loads(line) for line in stream]
    import_labels(lines=[json.dumps(r).encode() for r in rows], project=project)
    copied = [{**r, "reviewer": "carol"} for r in rows if r["reviewer"] == "alice"]
    import_labels(lines=[json.dumps(r).encode() for r in copied], project=project)
    report = agreement_report(project, n_boot=0)
    identical = {tuple(p["reviewers"]): p["identical_label_sets"] for p in report["pairs"]}
    assert identical == {("alice", "bob"): False, ("alice", "carol"): True, ("bob", "carol"): False}
    assert report["identical_label_sets"] is True
