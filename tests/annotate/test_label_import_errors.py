"""A refused label file speaks the file: each problem names its line, the field's path as the
line writes it (claims[1].support is the second object of the line's claims list, whatever
claim it labels) and the value found there, in the file's words -- not the labelling screen's
("relevance: Rate the answer's relevance."). The browser's checks still decide what is wrong."""

from __future__ import annotations

import json

import pytest

from annotate.imports.label_import import import_labels
from annotate.imports.lines import BundleInvalid
from annotate.members.services import add_member
from annotate.models import Assignment
from annotate.projects.opening import open_labelling
from tests.conftest import FIXTURES, import_fixture

pytestmark = pytest.mark.django_db

# a2-deadline/baseline by alice: claim 0 supported by notes-17, claim 1 (which cites notes-17)
# contradicted by it.
LINE = json.loads((FIXTURES / "demo_labels.jsonl").read_text().splitlines()[0])
CLAIM_0, CLAIM_1 = LINE["claims"]


@pytest.fixture
def labelling(reviewer_a, reviewer_b):
    project = import_fixture("demo.jsonl", "demo")
    for name in ("alice", "bob"):
        add_member(project=project, username=name, role="reviewer")
    return open_labelling(project=project)


def refused(project, *lines: dict) -> list[str]:
    before = Assignment.objects.count()
    with pytest.raises(BundleInvalid) as caught:
        import_labels(lines=[json.dumps(line) for line in lines], project=project)
    assert Assignment.objects.count() == before  # all or nothing
    return [str(e) for e in caught.value.errors]


def test_the_file_as_given_imports(labelling):
    assert import_labels(lines=[json.dumps(LINE)], project=labelling).created == 1


def test_answer_fields_are_named_with_the_value_the_file_holds(labelling):
    assert refused(labelling, {**LINE, "relevance": 5}) == [
        "line 1: relevance must be 0, 1 or 2, got 5"
    ]
    assert refused(labelling, {**LINE, "relevance": "high"}) == [
        'line 1: relevance must be 0, 1 or 2, got "high"'  # said once, not "missing" too
    ]
    without = {k: v for k, v in LINE.items() if k != "relevance"}
    assert refused(labelling, without) == [
        "line 1: relevance is missing: rate the answer 0, 1 or 2"
    ]
    assert refused(labelling, {**LINE, "relevance": None}) == [
        "line 1: relevance is null: rate the answer 0, 1 or 2"
    ]
    assert refused(labelling, {**LINE, "failure_labels": ["made_up"]}) == [
        'line 1: failure_labels holds "made_up": the failure labels are missing_evidence, '
        "unsupported_claim, wrong_citation, false_abstention"
    ]
    assert refused(labelling, {**LINE, "abstention": "maybe"}) == [
        'line 1: abstention must be "appropriate", "unnecessary" or null, got "maybe"'
    ]


def test_claim_fields_are_named_by_their_place_in_the_file(labelling):
    """The line lists claim 1 first: its problems are claims[0]'s, claim 0's claims[1]'s."""
    line = {
        **LINE,
        "claims": [
            {**CLAIM_1, "support": "maybe", "severity": "huge"},
            {**CLAIM_0, "severity": "major", "evidence_ids": ["nowhere-1"]},
        ],
    }
    assert refused(labelling, line) == [
        'line 1: claims[0].support must be "supported", "contradicted" or '
        '"insufficient_evidence", got "maybe"',
        'line 1: claims[0].severity must be "none", "minor", "major" or "critical", got "huge"',
        'line 1: claims[1].severity must be "none" for a supported claim, got "major"',
        'line 1: claims[1].evidence_ids names "nowhere-1": not a passage of this answer (its '
        "retrieved passages, or those its claims cite)",
        "line 1: claims[1].evidence_quote needs evidence_ids to name the passage it comes from",
    ]


def test_missing_and_wrong_evidence_and_citations_say_what_the_file_lacks(labelling):
    bare = {k: v for k, v in CLAIM_1.items() if k not in ("severity", "evidence_quote")}
    line = {
        **LINE,
        "claims": [
            {**CLAIM_0, "evidence_quote": "Assignment 2 is due in May."},
            {**bare, "citations": {}},
        ],
    }
    assert refused(labelling, line) == [
        'line 1: claims[0].evidence_quote does not occur in "notes-17" (evidence_ids), '
        "whitespace aside",
        "line 1: claims[1].severity is missing: a claim labelled contradicted needs "
        '"none", "minor", "major" or "critical"',
        "line 1: claims[1].evidence_quote is missing: a claim labelled contradicted quotes the "
        "words that decide it, unless requires_evidence is false",
        'line 1: claims[1].citations["notes-17"] is missing: say whether notes-17 supports the '
        'claim ("supports" or "does_not_support")',
    ]
    wrong = {**LINE, "claims": [CLAIM_0, {**CLAIM_1, "citations": {"notes-17": "yes", "x": "no"}}]}
    assert refused(labelling, wrong) == [
        'line 1: claims[1].citations["notes-17"] must be "supports", "does_not_support" or '
        '"citation_not_found", got "yes"',
        'line 1: claims[1].citations["x"]: the claim does not cite x',
    ]


def test_json_types_and_indexes_are_named_once_by_path(labelling):
    line = {
        **LINE,
        "claims": [
            {**CLAIM_0, "support": 3, "evidence_quote": ["a"]},
            {**CLAIM_1, "index": 0},
            {**CLAIM_1, "index": 7},
        ],
    }
    assert refused(labelling, line) == [
        "line 1: claims[0].evidence_quote must be a string, got a list",
        "line 1: claims[0].support must be a string, got 3",
        "line 1: claims[1].index is 0 again: claims[0] labels claim 0",
        "line 1: claims[2].index must be the index of one of the answer's claims (0 to 1), got 7",
        "line 1: claims has no object with index 1: every claim of the answer needs its label",
    ]
    assert refused(labelling, {**LINE, "claims": {"0": CLAIM_0}}) == [
        "line 1: claims must be a list of objects, one per claim, got an object"
    ]
    assert refused(labelling, {**LINE, "claims": [CLAIM_0, 1]}) == [
        "line 1: claims must be a list of objects, one per claim, got a list holding a number"
    ]
    assert refused(labelling, {**LINE, "failure_labels": ["wrong_citation", None]}) == [
        "line 1: failure_labels must be a list of strings, got a list holding null"
    ]
