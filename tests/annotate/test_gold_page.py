"""The Gold page's counts, read from the rendered page (issue #30): it showed "total 0" in every
row and "Nothing is doubly labelled yet" above 49 agreed and 12 pending claims, because the
template read a `total` no counter held (a Counter answers 0 for any key). Each number of the
table is checked against a count of the export's rows, on the demo (every field on) and on a
support-only project, with agreed, adjudicated and pending rows, and with gold imported from
elsewhere (import_gold) beside them."""

from __future__ import annotations

import io
import json
import math
from collections import Counter
from html.parser import HTMLParser

import pytest
from django.db import connection
from django.urls import reverse

from annotate.adjudication.services import DecisionInput, adjudicate
from annotate.common import computed
from annotate.gold import summary
from annotate.gold.exports import gold_rows
from annotate.gold.pairs import ItemPair, pairs_for_project
from annotate.gold.summary import label_states
from annotate.imports.gold_import import import_gold
from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Answer, Project, Role
from annotate.projects.opening import open_labelling
from tests.conftest import FIXTURES, PASSWORD, import_fixture, labelled_demo

STATES = ("agreed", "adjudicated", "pending", "imported")
SPLITS = ("judge_dev", "judge_test")


class _Table(HTMLParser):
    """The text of each cell of the table with an id, row by row."""

    def __init__(self, table_id: str):
        super().__init__()
        self.table_id, self.inside, self.rows, self.cell = table_id, False, [], None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and dict(attrs).get("id") == self.table_id:
            self.inside = True
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag in ("th", "td"):
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False
        elif self.inside and tag in ("th", "td") and self.cell is not None:
            self.rows[-1].append(" ".join(self.cell.split()))
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def page_counts(body: str) -> tuple[list[str], dict[str, list[int]]]:
    """(the header, each line's numbers by its label: 'Claims', 'Claims judge_dev', ...)."""
    parser = _Table("gold-counts")
    parser.feed(body)
    header, *lines = parser.rows
    counts, item = {}, None
    for label, *numbers in lines:
        if label.startswith("of which "):
            label = f"{item} {label.removeprefix('of which ')}"
        else:
            item = label
        counts[label] = [int(n) for n in numbers]
    return header, counts


def row_state(row: dict) -> str:
    """A row's state as a reader of the export tells it."""
    if not row["decided"]:
        return "pending"
    if "adjudicated" in row["gold_source"].values():
        return "adjudicated"
    return "imported" if "imported" in row["gold_source"].values() else "agreed"


def export_counts(project: Project) -> dict[str, list[int]]:
    """What the page should show, counted from the export's rows: agreed, adjudicated,
    pending, imported and total for each line."""
    tally: dict[str, Counter] = {
        f"{item}{split}": Counter()
        for item in ("Claims", "Answers")
        for split in ("", *(f" {s}" for s in SPLITS))
    }
    for row in gold_rows(project):
        item = "Claims" if row["item"] == "claim" else "Answers"
        for label in (item, f"{item} {row['judge_split']}"):
            tally[label][row_state(row)] += 1
    return {label: [c[s] for s in STATES] + [c.total()] for label, c in tally.items()}


def decide(project: Project, lead, pair: ItemPair, field: str, value) -> None:
    answer = Answer.objects.get(pk=pair.answer_id)
    claim = None if pair.claim_id is None else answer.claims.get(pk=pair.claim_id)
    adjudicate(
        answer=answer,
        lead=lead,
        version=getattr(getattr(answer, "adjudication", None), "version", 0),
        decisions=[DecisionInput(claim, field, value)],
        rationale="Decided on the passages.",
    )


def adjudicate_some(project: Project, lead) -> None:
    """A lead settles an answer's only disputed claim (its claim and the answer become
    adjudicated) and, where the schema has answer fields, a disputed answer field; other
    disputes stay pending."""
    answer_pairs, claim_pairs = pairs_for_project(project)
    disputed = Counter(p.answer_id for p in claim_pairs if p.pending)
    answers = {p.answer_id: p for p in answer_pairs}
    lone = next(
        p
        for p in claim_pairs
        if p.pending == ["support"]
        and disputed[p.answer_id] == 1
        and not answers[p.answer_id].pending
    )
    decide(project, lead, lone, "support", "supported")
    field_pending = next((p for p in answer_pairs if "relevance" in p.pending), None)
    if field_pending is not None:
        decide(project, lead, field_pending, "relevance", 1)


@pytest.fixture
def demo(db, lead) -> Project:
    return labelled_demo(leads=[lead.username])


@pytest.fixture
def support_only(db, lead) -> Project:
    """fixtures/halu: a binary, support-only project, labelled by import."""
    project = import_fixture("halu/bundle.jsonl", "halu")
    for name in ("ann1", "ann2"):
        add_member(project=project, username=name, role=Role.REVIEWER)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    project = open_labelling(project=project)
    with open(FIXTURES / "halu" / "labels.jsonl", "rb") as stream:
        import_labels(lines=stream, project=project)
    return project


@pytest.fixture
def with_imported_gold(support_only) -> Project:
    """The support-only project and its benchmark's own gold on 24 of its 32 summaries:
    some with both annotators, some with one, some with neither (fixtures/halu/gold.jsonl)."""
    with open(FIXTURES / "halu" / "gold.jsonl", "rb") as stream:
        import_gold(lines=stream, project=support_only, source="halu", file_name="gold.jsonl")
    return support_only


def gold_page(client, lead, project: Project) -> str:
    client.login(username=lead.username, password=PASSWORD)
    response = client.get(reverse("gold", kwargs={"slug": project.slug}))
    assert response.status_code == 200
    return response.content.decode()


@pytest.mark.parametrize("name", ["demo", "support_only", "with_imported_gold"])
def test_every_number_of_the_gold_page_is_the_export_s(name, request, client, lead):
    project = request.getfixturevalue(name)
    adjudicate_some(project, lead)
    body = gold_page(client, lead, project)
    header, shown = page_counts(body)
    assert header == ["Rows", *STATES, "total"]
    expected = export_counts(project)
    assert shown == expected
    for label, numbers in shown.items():
        assert numbers[-1] == sum(numbers[:-1]), label  # total: every column, no other state
    for item in ("Claims", "Answers"):
        for i in range(len(STATES) + 1):  # the judge splits add up to their item's line
            assert shown[item][i] == sum(shown[f"{item} {s}"][i] for s in SPLITS)
        assert all(shown[item][:3]), f"{item}: agreed, adjudicated and pending rows"
        # imported rows: those of the benchmark's gold without a second annotator only
        assert bool(shown[item][3]) == (name == "with_imported_gold"), item
    assert "Nothing is doubly labelled yet" not in body


def test_the_demo_page_shows_issue_30_s_claims_with_their_totals(demo, client, lead):
    """Issue #30's numbers: 49 agreed and 12 pending claims; the answers' pending count now
    includes the answers whose claims are disputed though their own fields are agreed."""
    _, shown = page_counts(gold_page(client, lead, demo))
    assert shown["Claims"] == [49, 0, 12, 0, 61]
    rows = [r for r in gold_rows(demo, item="answer")]
    assert shown["Answers"][4] == len(rows) == 40
    assert shown["Answers"][2] == sum(not r["decided"] for r in rows) > 7  # 7: answer fields


def test_the_empty_state_shows_only_while_nothing_is_doubly_labelled(
    db, client, lead, reviewer_a, reviewer_b
):
    project = import_fixture("demo.jsonl", "demo")
    for person in (reviewer_a, reviewer_b):
        add_member(project=project, username=person.username, role=Role.REVIEWER)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    project = open_labelling(project=project)
    labels = (FIXTURES / "demo_labels.jsonl").read_text().splitlines()
    by_reviewer = {
        name: [line for line in labels if json.loads(line)["reviewer"] == name]
        for name in ("alice", "bob")
    }
    body = gold_page(client, lead, project)
    assert "Nothing is doubly labelled yet" in body
    assert set(map(tuple, page_counts(body)[1].values())) == {(0, 0, 0, 0, 0)}
    import_labels(lines=io.BytesIO("\n".join(by_reviewer["alice"]).encode()), project=project)
    body = gold_page(client, lead, project)  # one reviewer: still nothing doubly labelled
    assert "Nothing is doubly labelled yet" in body
    import_labels(lines=io.BytesIO("\n".join(by_reviewer["bob"][:1]).encode()), project=project)
    body = gold_page(client, lead, project)
    assert "Nothing is doubly labelled yet" not in body
    assert page_counts(body)[1]["Answers"][4] == 1


def test_the_gold_page_costs_a_fixed_number_of_queries(
    demo, client, lead, monkeypatch, django_assert_num_queries
):
    """Deriving the counts reads four queries a chunk of answers (QUEUE_CHUNK), whatever
    its size; a second view reads the kept counts."""
    monkeypatch.setattr(summary, "QUEUE_CHUNK", 7)
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("gold", kwargs={"slug": demo.slug})
    doubly = len(label_states(demo))
    computed.clear()
    # The shares stored: savepoint, delete, insert, release; PostgreSQL's insert is a COPY,
    # which Django does not count.
    stored = 3 if connection.vendor == "postgresql" else 4
    # session, user, membership; the project's revision; label states with their answers'
    # revisions (1), stored shares read; four a chunk; the shares stored; the gold set's size
    # (2); imported gold (none here: one query); the releases (one query, however many:
    # test_gold_releases); the gold checks: their list, the doubly-labelled answers (the
    # decided ones, kept per revision) and the decided answers not yet checks (one query
    # each). (12 with the data and content versions, two queries, and the label states, two.)
    with django_assert_num_queries(13 + stored + 4 * math.ceil(doubly / 7)):
        client.get(url)
    # The same, the counts and the decided answers kept (10 with the data version).
    with django_assert_num_queries(9):
        client.get(url)
