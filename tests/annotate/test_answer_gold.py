"""Answer rows' gold in every label schema (issue #30): an answer's support_binary derives
from its claims' -- unsupported as soon as one claim's gold is, supported once every claim's
is -- and the row is decided only when every claim's support_binary and every answer field
of the schema are. A support-only project's answer rows used to carry `gold: {}` and all
say `decided: true`, so `export_gold --item answer --decided-only` kept answers whose claims
still waited for a lead."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from annotate.adjudication.services import DecisionInput, adjudicate
from annotate.gold.exports import gold_rows
from annotate.gold.pairs import (
    ADJUDICATED,
    AGREED,
    PENDING,
    ItemPair,
    answer_support,
    pairs_for_project,
    row_state,
)
from annotate.imports.bundle_import import import_bundle
from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Answer, Project, Role
from annotate.projects.opening import open_labelling
from tests.conftest import labelled_demo

# --- The rule itself ---------------------------------------------------------------------


def claim(value: str | None, source: str) -> ItemPair:
    return ItemPair(
        1, 2, 0, 10, 11, {}, {}, gold={"support_binary": value}, source={"support_binary": source}
    )


AGREED_OK = claim("supported", AGREED)
AGREED_BAD = claim("unsupported", AGREED)
DECIDED_OK = claim("supported", ADJUDICATED)
DECIDED_BAD = claim("unsupported", ADJUDICATED)
OPEN = claim(None, PENDING)


@pytest.mark.parametrize(
    ("claims", "expected"),
    [
        ([AGREED_OK, AGREED_OK], ("supported", AGREED)),
        ([AGREED_OK, DECIDED_OK], ("supported", ADJUDICATED)),
        ([AGREED_OK, AGREED_BAD], ("unsupported", AGREED)),
        ([DECIDED_BAD, AGREED_OK], ("unsupported", ADJUDICATED)),
        # one unsupported claim settles the value; the answer still waits for the other
        ([AGREED_BAD, OPEN], ("unsupported", PENDING)),
        ([AGREED_OK, OPEN], (None, PENDING)),
        ([OPEN, DECIDED_OK], (None, PENDING)),
        # nothing claimed, nothing unsupported: as the evaluation report counts it
        ([], ("supported", AGREED)),
    ],
)
def test_an_answer_s_support_binary_is_its_claims(claims, expected):
    assert answer_support(claims) == expected


def test_a_row_is_pending_while_any_field_is_then_adjudicated_once_a_lead_decided_one():
    assert row_state({"relevance": "agreed", "support_binary": "pending"}) == PENDING
    assert row_state({"relevance": "adjudicated", "support_binary": "agreed"}) == (ADJUDICATED)
    assert row_state({"evidence": "union", "support_binary": "agreed"}) == AGREED
    assert row_state({}) == AGREED


# --- Through the whole pipeline, on a support-only project -------------------------------


def _line(obj: dict) -> str:
    return json.dumps(obj)


def _answer(answer_id: str, sample: int, sentences: list[str]) -> dict:
    text = " ".join(sentences)
    claims, start = [], 0
    for sentence in sentences:
        claims.append({"text": sentence, "start": start, "end": start + len(sentence)})
        start += len(sentence) + 1
    return {
        "type": "answer",
        "answer_id": answer_id,
        "case_id": "c1",
        "variant": "v",
        "sample": sample,
        "text": text or "I cannot say.",
        "retrieved": [{"passage_id": "p1", "rank": 1, "in_prompt": True}],
        "claims": claims,
    }


# answer id -> (reviewer A's supports, reviewer B's supports), claim by claim
LABELS = {
    "ok": (["supported", "supported"], ["supported", "supported"]),
    "bad-and-open": (["unsupported", "supported"], ["unsupported", "unsupported"]),
    "open": (["supported"], ["unsupported"]),
    "silent": ([], []),  # an answer without claims
}


@pytest.fixture
def binary(db, reviewer_a, reviewer_b, lead) -> Project:
    """A support-only (binary) project, labelled by import: one answer agreed supported, one
    with an agreed unsupported claim and a disputed one, one disputed, one without claims."""
    bundle = [
        {
            "type": "bundle",
            "corpus_version": "v1",
            "label_schema": {"support": "binary", "claim_fields": [], "answer_fields": []},
        },
        {"type": "variant", "name": "v"},
        {"type": "passage", "passage_id": "p1", "text": "The lane costs 1.2 million."},
        {
            "type": "case",
            "case_id": "c1",
            "question": "Summarise.",
            "answerable": True,
            "adversarial": False,
        },
        _answer("ok", 0, ["The lane costs 1.2 million.", "It is a lane."]),
        _answer("bad-and-open", 1, ["The lane costs 12 million.", "It opens soon."]),
        _answer("open", 2, ["It is popular."]),
        _answer("silent", 3, []),
    ]
    lines = io.BytesIO("\n".join(map(_line, bundle)).encode())
    project = import_bundle(lines=lines, project_slug="binary").project
    for person in (reviewer_a, reviewer_b):
        add_member(project=project, username=person.username, role=Role.REVIEWER)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    project = open_labelling(project=project)
    labels = [
        {
            "answer_id": answer_id,
            "reviewer": person.username,
            "claims": [{"index": i, "support": s} for i, s in enumerate(supports)],
        }
        for answer_id, sides in LABELS.items()
        for person, supports in zip((reviewer_a, reviewer_b), sides, strict=True)
    ]
    import_labels(lines=io.BytesIO("\n".join(map(_line, labels)).encode()), project=project)
    return project


def answer_rows(project: Project, **filters) -> dict[str, dict]:
    return {r["answer_id"]: r for r in gold_rows(project, item="answer", **filters)}


def decide(project: Project, lead, answer_id: str, index: int, value: str) -> None:
    answer = Answer.objects.get(project=project, answer_id=answer_id)
    version = getattr(getattr(answer, "adjudication", None), "version", 0)
    adjudicate(
        answer=answer,
        lead=lead,
        version=version,
        decisions=[DecisionInput(answer.claims.get(ordinal=index), "support", value)],
        rationale="The passage says so.",
    )


def test_a_support_only_project_s_answer_rows_carry_their_claims_support_binary(binary, lead):
    rows = answer_rows(binary)
    assert {k: (r["gold"], r["gold_source"], r["decided"]) for k, r in rows.items()} == {
        "ok": ({"support_binary": "supported"}, {"support_binary": "agreed"}, True),
        "bad-and-open": ({"support_binary": "unsupported"}, {"support_binary": "pending"}, False),
        "open": ({"support_binary": None}, {"support_binary": "pending"}, False),
        "silent": ({"support_binary": "supported"}, {"support_binary": "agreed"}, True),
    }
    assert set(answer_rows(binary, decided_only=True)) == {"ok", "silent"}

    decide(binary, lead, "bad-and-open", 1, "supported")
    decide(binary, lead, "open", 0, "unsupported")
    rows = answer_rows(binary)
    assert {k: (r["gold"], r["gold_source"], r["decided"]) for k, r in rows.items()} == {
        "ok": ({"support_binary": "supported"}, {"support_binary": "agreed"}, True),
        "bad-and-open": (
            {"support_binary": "unsupported"},
            {"support_binary": "adjudicated"},
            True,
        ),
        "open": ({"support_binary": "unsupported"}, {"support_binary": "adjudicated"}, True),
        "silent": ({"support_binary": "supported"}, {"support_binary": "agreed"}, True),
    }
    assert set(answer_rows(binary, decided_only=True)) == set(LABELS)


def test_export_gold_decided_only_leaves_out_answers_whose_claims_wait(binary, lead, tmp_path):
    """The Ragas recipe of docs/gold-export.md, on a support-only project."""
    path = tmp_path / "answers.jsonl"

    def exported() -> list[str]:
        call_command(
            "export_gold",
            "--project",
            binary.slug,
            "--item",
            "answer",
            "--decided-only",
            "--output",
            str(path),
        )
        return sorted(json.loads(line)["answer_id"] for line in path.read_text().splitlines())

    assert exported() == ["ok", "silent"]
    decide(binary, lead, "open", 0, "supported")
    assert exported() == ["ok", "open", "silent"]


# --- On the demo: every schema field on ------------------------------------------------------


@pytest.fixture
def demo(db, lead) -> Project:
    return labelled_demo(leads=[lead.username])


def expected_answer(claim_rows: list[dict], answer_row: dict) -> tuple[str | None, bool]:
    """An answer's support_binary and whether it is decided, from its claim rows and its own
    answer fields' sources, written out again here."""
    values = [r["gold"]["support_binary"] for r in claim_rows]
    waiting = any(r["gold_source"]["support_binary"] == "pending" for r in claim_rows)
    value = "unsupported" if "unsupported" in values else (None if waiting else "supported")
    own = {k: v for k, v in answer_row["gold_source"].items() if k != "support_binary"}
    return value, not waiting and "pending" not in own.values()


def test_every_answer_row_agrees_with_its_claim_rows_before_and_after_adjudication(demo, lead):
    def check() -> set[str]:
        rows = list(gold_rows(demo))
        answers = [r for r in rows if r["item"] == "answer"]
        for answer in answers:
            claims = [
                r for r in rows if r["item"] == "claim" and r["answer_id"] == answer["answer_id"]
            ]
            value, decided = expected_answer(claims, answer)
            assert answer["gold"]["support_binary"] == value, answer["answer_id"]
            assert answer["decided"] is decided, answer["answer_id"]
            assert set(answer["gold"]) == {
                "support_binary",
                "relevance",
                "abstention",
                "failure_labels",
            }
        decided = {r["answer_id"] for r in answers if r["decided"]}
        assert set(answer_rows(demo, decided_only=True)) == decided
        return decided

    before = check()
    # an answer whose own fields are agreed but a claim's support waits: not decided
    answer_pairs, claim_pairs = pairs_for_project(demo)
    answer_pairs = {p.answer_id: p for p in answer_pairs}
    waiting = next(
        p
        for p in claim_pairs
        if p.source["support_binary"] == PENDING and not answer_pairs[p.answer_id].pending
    )
    answer = Answer.objects.get(pk=waiting.answer_id)
    assert answer.answer_id not in before
    waiting_claims = [
        p for p in claim_pairs if p.answer_id == answer.pk and p.source["support_binary"] == PENDING
    ]
    for pair in waiting_claims:
        decide(demo, lead, answer.answer_id, pair.ordinal, "supported")
    after = check()
    assert after == before | {answer.answer_id}
