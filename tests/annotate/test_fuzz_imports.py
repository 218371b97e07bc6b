"""Property-based fuzzing of the bundle and label importers (issue #15). Whatever the file, an
import either succeeds or raises BundleInvalid with every problem by line -- never another
exception -- and a refused import writes nothing. Budgets and profiles: tests/fuzz.py."""

from __future__ import annotations

import json
from dataclasses import astuple

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from annotate.imports.bundle_export import bundle_rows
from annotate.imports.bundle_import import import_bundle
from annotate.imports.bundles import (
    FIELDS,
    MAX_CITATIONS,
    MAX_ID,
    MAX_INT32,
    MAX_TEXT,
    _checked_claim,
    _checked_retrieved,
    _Line,
    _plain_claim,
    _plain_retrieved,
    parse_bundle,
)
from annotate.imports.label_import import CLAIM_LABEL_FIELDS, LABEL_FIELDS, import_labels
from annotate.imports.lines import BundleInvalid
from annotate.members.services import add_member
from annotate.models import (
    Answer,
    AnswerCorrection,
    Assignment,
    Case,
    Citation,
    Claim,
    ClaimLabel,
    Evidence,
    Judgment,
    LabelRevision,
    Passage,
    Project,
    RetrievedPassage,
    Variant,
)
from annotate.projects.opening import open_labelling
from annotate.queue.services import next_task
from tests.conftest import FIXTURES, import_fixture
from tests.fuzz import check_refusal, fuzz, in_savepoint, mutate_lines, random_objects

SMALL = (FIXTURES / "small.jsonl").read_text().splitlines()
DEMO = (FIXTURES / "demo.jsonl").read_text().splitlines()
LABELS = (FIXTURES / "demo_labels.jsonl").read_text().splitlines()
BUNDLE_FIELDS = sorted(
    {name for required, optional in FIELDS.values() for name in required | optional}
    | {"type", "rank", "score", "in_prompt", "start", "end", "citations", "quote", "location"}
)
LABEL_FILE_FIELDS = sorted(LABEL_FIELDS | CLAIM_LABEL_FIELDS)
TABLES = (
    Project,
    Variant,
    Passage,
    Case,
    Evidence,
    Answer,
    RetrievedPassage,
    Claim,
    Citation,
    Judgment,
    AnswerCorrection,
    Assignment,
    ClaimLabel,
    LabelRevision,
)


def snapshot() -> dict:
    """Row counts of every table an import writes, and what an in-place update would change."""
    state = {model.__name__: model.objects.count() for model in TABLES}
    state["answers"] = sorted(
        Answer.objects.values_list("answer_id", "content_hash", "elapsed_ms", "request_cost")
    )
    return state


# --- parse_bundle: no database ---------------------------------------------------------------


@fuzz(examples=200)
@given(data=st.data())
def test_fuzz_parse_bundle_on_mutated_demo_lines(data):
    lines = mutate_lines(DEMO, data, BUNDLE_FIELDS)
    try:
        bundle = parse_bundle(lines)
    except BundleInvalid as exc:
        check_refusal(exc)
        return
    # What is accepted is JSON as the standard has it: no NaN can come out of a record.
    for records in (bundle.passages, bundle.variants, bundle.cases, bundle.answers):
        for record in records.values():
            json.dumps(record.row(), allow_nan=False)


@fuzz(examples=100)
@given(lines=random_objects(BUNDLE_FIELDS, sorted(FIELDS)))
def test_fuzz_parse_bundle_on_random_objects(lines):
    try:
        parse_bundle([SMALL[0], *lines])
    except BundleInvalid as exc:
        check_refusal(exc)


# A claim's and a retrieved passage's fields: (values a checked read accepts, up to each
# limit; values just past a limit or of the wrong kind).
TEXTS = (["a claim", "x" * MAX_TEXT], ["", " ", "\u3000", "x" * (MAX_TEXT + 1), 3, None])
IDS = (["doc-1:p1", "p" * MAX_ID], ["", " ", "p" * (MAX_ID + 1), 7, None])
OFFSETS = ([0, 1, 2, MAX_TEXT], [-1, MAX_TEXT + 1, True, 1.0, "1", None])
CLAIM = {
    "text": TEXTS,
    "start": OFFSETS,
    "end": OFFSETS,
    "citations": (
        [None, [], ["doc-1:p1", "doc-1:p1"], ["p" * MAX_ID], ["doc-1:p1"] * MAX_CITATIONS],
        [["p" * (MAX_ID + 1)], ["", 7], [None], "doc-1:p1", ["doc-1:p1"] * (MAX_CITATIONS + 1)],
    ),
}
RETRIEVED = {
    "passage_id": IDS,
    "rank": ([1, 2, MAX_INT32], [0, -1, MAX_INT32 + 1, True, 1.0, "1", None]),
    "score": ([None, 0.5, 1, -2, 1e300], [True, "0.5", [1]]),
    "in_prompt": ([None, True, False], [1, 0, "true"]),
}


# What a parsed line can hold (no Raw text, which only a written line can).
PARSED_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def _items(draw, fields: dict):
    """An item every field of which the checked way accepts, but for at most one: given a
    value past a limit or of the wrong kind, or anything, or left out; or an unknown field
    added."""
    item = {key: draw(st.sampled_from(good)) for key, (good, _) in fields.items()}
    probed = draw(st.sampled_from([*sorted(fields), "extra", None]))
    if probed == "extra":
        item["extra"] = draw(PARSED_VALUES)
    elif probed is not None:
        good, bad = fields[probed]
        how = draw(st.sampled_from(["bad"] * 4 + ["good", "anything", "absent"]))
        if how == "absent":
            del item[probed]
        else:
            values = {"bad": st.sampled_from(bad), "good": st.sampled_from(good)}
            item[probed] = draw(values.get(how, PARSED_VALUES))
    return item


@pytest.mark.parametrize(
    "fields, plain, checked",
    [(CLAIM, _plain_claim, _checked_claim), (RETRIEVED, _plain_retrieved, _checked_retrieved)],
    ids=["claim", "retrieved"],
)
@fuzz(examples=1000)
@given(data=st.data())
def test_fuzz_an_item_read_directly_is_what_the_checked_way_reads_without_a_problem(
    fields, plain, checked, data
):
    """A claim or a retrieved passage is read directly (_plain_*) exactly when the checked
    way finds no problem in it, and into the same record."""
    item = data.draw(_items(fields))
    errors = []
    expected = checked(_Line(1, item, errors))
    found = plain(item)
    event("read directly" if found is not None else "checked")
    assert (found is not None) == (not errors), (item, errors)
    if found is not None:
        assert found == expected
        assert [type(v) for v in astuple(found)] == [type(v) for v in astuple(expected)]


# --- import_bundle: into a new project, a draft one, an open one with a labelled answer ------


@pytest.fixture
def projects(db, reviewer_a):
    import_fixture("small.jsonl", "small")
    opened = import_fixture("small.jsonl", "opened")
    add_member(project=opened, username=reviewer_a.username, role="reviewer")
    opened = open_labelling(project=opened)
    next_task(project=opened, reviewer=reviewer_a)  # one answer is now labelled (in progress)
    return ["small", "opened", "fresh"]


@fuzz(examples=150)
@given(data=st.data())
def test_fuzz_import_bundle_on_mutated_small_lines(projects, data):
    lines = mutate_lines(SMALL, data, BUNDLE_FIELDS)
    slug = data.draw(st.sampled_from(projects), label="project")
    replace = data.draw(st.booleans(), label="replace")

    def run():
        before = snapshot()
        try:
            import_bundle(lines=lines, project_slug=slug, replace=replace)
        except BundleInvalid as exc:
            check_refusal(exc)
            assert snapshot() == before, "a refused import wrote something"
            event("refused")
        else:
            event("imported")

    in_savepoint(run)


# --- export, import, export: the same --------------------------------------------------------

TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"]) | st.sampled_from("\t\n\r"),
    min_size=1,
    max_size=40,
)
IDS = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cc", "Cs"]), min_size=1, max_size=12
)
LATENCY = st.none() | st.floats(min_value=0, max_value=1e12) | st.integers(0, 10**12)
COST = st.none() | st.floats(min_value=0, max_value=1e9) | st.integers(0, 10**9)


@st.composite
def valid_bundles(draw) -> list[str]:
    """Bundles that import: random ids, texts (any character a column can hold) and figures
    up to their limits."""
    passages = draw(st.lists(IDS, min_size=1, max_size=4, unique=True))
    cases = draw(st.lists(IDS, min_size=1, max_size=3, unique=True))
    lines = [{"type": "bundle", "corpus_version": draw(IDS), "name": draw(IDS)}]
    lines += [{"type": "passage", "passage_id": p, "text": draw(TEXT)} for p in passages]
    for case in cases:
        lines.append(
            {
                "type": "case",
                "case_id": case,
                "question": draw(TEXT),
                "answerable": draw(st.booleans()),
                "adversarial": draw(st.booleans()),
                "tags": draw(st.lists(IDS, max_size=2)),
            }
        )
        for sample in range(draw(st.integers(1, 2))):
            text = draw(TEXT)
            ranked = draw(st.lists(st.sampled_from(passages), unique=True, max_size=3))
            lines.append(
                {
                    "type": "answer",
                    "answer_id": f"{case}/{sample}",
                    "case_id": case,
                    "variant": draw(st.sampled_from(["v", "w"])),
                    "sample": draw(st.integers(0, 2**31 - 1)),
                    "text": text,
                    "elapsed_ms": draw(LATENCY),
                    "request_cost": draw(COST),
                    "retrieved": [
                        {
                            "passage_id": p,
                            "rank": rank,
                            "score": draw(
                                st.none() | st.floats(allow_nan=False, allow_infinity=False)
                            ),
                            "in_prompt": draw(st.booleans()),
                        }
                        for rank, p in enumerate(ranked, start=1)
                    ],
                    "claims": [
                        {"text": text, "start": 0, "end": len(text), "citations": ranked[:1]}
                    ],
                }
            )
        lines.append(
            {
                "type": "judgment",
                "case_id": case,
                "passage_id": passages[0],
                "grade": draw(st.integers(0, 100)),
            }
        )
    # one generation per (case, variant, sample)
    seen, unique = set(), []
    for line in lines:
        key = (line.get("case_id"), line.get("variant"), line.get("sample"))
        if line["type"] == "answer" and key in seen:
            continue
        seen.add(key)
        unique.append(line)
    return [json.dumps(line, allow_nan=False) for line in unique]


@fuzz(examples=40)
@given(lines=valid_bundles())
def test_fuzz_an_export_imports_into_a_new_project_and_exports_the_same(db, lines):
    def run():
        original = import_bundle(lines=lines, project_slug="original").project
        exported = [json.dumps(row, allow_nan=False) for row in bundle_rows(original)]
        copy = import_bundle(lines=exported, project_slug="copy").project
        assert list(bundle_rows(copy))[1:] == list(bundle_rows(original))[1:]
        again = import_bundle(lines=exported, project_slug="original")
        assert not any(c["created"] or c["replaced"] for c in again.counts.values())

    try:
        in_savepoint(run)
    except BundleInvalid as exc:  # say which line, not only that one was refused
        raise AssertionError([str(e) for e in exc.errors]) from exc


# --- import_labels ---------------------------------------------------------------------------


@pytest.fixture
def labelling(db, reviewer_a, reviewer_b):
    project = import_fixture("demo.jsonl", "demo")
    for person in (reviewer_a, reviewer_b):
        add_member(project=project, username=person.username, role="reviewer")
    return open_labelling(project=project)


@fuzz(examples=100)
@given(data=st.data())
def test_fuzz_import_labels_on_mutated_label_lines(labelling, data):
    chosen = data.draw(st.lists(st.sampled_from(LABELS), min_size=1, max_size=4), label="lines")
    lines = mutate_lines(chosen, data, LABEL_FILE_FIELDS)

    def run():
        before = snapshot()
        try:
            import_labels(lines=lines, project=labelling)
        except BundleInvalid as exc:
            check_refusal(exc)
            assert snapshot() == before, "a refused label import wrote something"
            event("refused")
        else:
            event("imported")

    in_savepoint(run)


LABEL = json.loads(LABELS[0])  # a2-deadline/baseline by alice, two claims


def crash(reason: str, **edit):
    """A label-file input that used to crash the importer (TypeError, AttributeError)."""
    return pytest.param(edit, id=reason.split(":")[0])


CLAIM_0, CLAIM_1 = LABEL["claims"]


@pytest.mark.parametrize(
    "edit",
    [
        crash(
            "unhashable answer_id: TypeError in a dict lookup", answer_id=["a2-deadline/baseline"]
        ),
        crash("unhashable reviewer: TypeError in a dict lookup", reviewer={"name": "alice"}),
        crash("failure_labels a number: TypeError, iterating an int", failure_labels=5),
        crash("failure_labels not strings: TypeError in ', '.join", failure_labels=[1]),
        crash(
            "evidence_ids not strings: TypeError in ', '.join",
            claims=[{**CLAIM_0, "evidence_ids": [1]}, CLAIM_1],
        ),
        crash(
            "evidence_ids holding a list: TypeError, unhashable",
            claims=[{**CLAIM_0, "evidence_ids": [["notes-17"]]}, CLAIM_1],
        ),
        crash(
            "evidence_quote a number: AttributeError, 5.strip()",
            claims=[{**CLAIM_0, "evidence_quote": 5}, CLAIM_1],
        ),
    ],
)
def test_label_file_values_of_the_wrong_type_are_line_errors_not_crashes(labelling, edit):
    """The label-schema rewrite of import_labels checks every value's JSON type first."""
    with pytest.raises(BundleInvalid) as caught:
        import_labels(lines=[json.dumps({**LABEL, **edit})], project=labelling)
    assert all(str(e).startswith("line 1: ") for e in caught.value.errors)
