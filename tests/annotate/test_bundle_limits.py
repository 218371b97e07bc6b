"""Issue #15: every value of a bundle is checked where it comes in. Each class of input that
once reached the database (and answered 500, or broke the project for good) is refused with
its line and the field's path, and nothing is written. The limits are those of
docs/bundle-format.md ("Limits"); values at a limit are accepted and stored as given."""

from __future__ import annotations

import json

import pytest

from annotate.imports.bundle_import import import_bundle
from annotate.imports.bundles import parse_bundle
from annotate.imports.lines import BundleInvalid
from annotate.models import Answer, Judgment, Passage, RetrievedPassage, Variant
from evaluation.reports.evaluation import evaluate
from tests.annotate.test_import import SMALL, errors_for, lines_of, nothing_written

pytestmark = pytest.mark.django_db
MAX_LINE = 5_000_000  # docs/bundle-format.md

ANSWER = json.loads(SMALL[8])  # line 9: a2-deadline/baseline, with claims and a ranking


def refused(edit: dict) -> list[str]:
    """The errors of small.jsonl edited, after checking that nothing was written. A refused
    line is refused whole: what refers to it is then reported too, as for any broken line,
    so the passages edited here are those nothing refers to unless the test says so."""
    errors = errors_for(lines_of(edit=edit))
    assert nothing_written()
    return errors


def raw_line(number: int, old: str, new: str) -> dict[int, str]:
    """Line `number` of small.jsonl with `old` replaced in its JSON text: for what json.dumps
    would never write (NaN, 1e400, escapes)."""
    assert old in SMALL[number - 1]
    return {number: SMALL[number - 1].replace(old, new, 1)}


# --- Numbers: finite, in range --------------------------------------------------------------


@pytest.mark.parametrize(
    "literal, message",
    [
        ("NaN", "elapsed_ms: NaN is not a JSON number: write null, or a finite number"),
        ("Infinity", "elapsed_ms: Infinity is not a JSON number: write null, or a finite number"),
        ("-Infinity", "elapsed_ms: -Infinity is not a JSON number: write null, or a finite number"),
        ("1e400", "elapsed_ms: number 1e400 is out of range (beyond ±1.8e308, the largest a"),
    ],
)
def test_a_non_finite_elapsed_ms_is_refused_by_line(literal, message):
    # It once imported, made the evaluation page answer 500, and -- once anything was
    # labelled -- could not be replaced; export_bundle then wrote NaN, which is not JSON.
    errors = refused(raw_line(9, '"elapsed_ms": 1200', f'"elapsed_ms": {literal}'))
    assert len(errors) == 1 and errors[0].startswith(f"line 9: {message}")


def test_non_finite_numbers_anywhere_are_refused_with_their_path():
    errors = refused(
        {
            **raw_line(9, '"score": 0.82', '"score": NaN'),
            **raw_line(2, '"k": 5', '"k": Infinity'),
            **raw_line(11, '"elapsed_ms": 900', '"elapsed_ms": -1e999'),
        }
    )
    assert [e.split(" is ")[0] for e in errors] == [
        "line 2: settings.k: Infinity",
        "line 9: retrieved[0].score: NaN",
        "line 11: elapsed_ms: number -1e999",
    ]


def test_an_integer_beyond_64_bits_is_refused_and_a_huge_one_costs_nothing():
    errors = refused(
        {
            9: {"sample": 2**64},
            10: SMALL[9].replace('"rank": 1', '"rank": ' + "9" * 5000),
        }
    )
    assert errors == [
        "line 9: sample: integer 18446744073709551616 is out of range (at most "
        "9,223,372,036,854,775,807 in absolute value)",
        "line 10: retrieved[0].rank: integer 999999999999999999999999… (5000 characters) is "
        "out of range (at most 9,223,372,036,854,775,807 in absolute value)",
    ]


@pytest.mark.parametrize(
    "edit, message",
    [
        ({9: {"sample": 2**31}}, "'sample' must be at most 2,147,483,647, got 2,147,483,648"),
        (
            {9: {"retrieved": [{**ANSWER["retrieved"][0], "rank": 2**31}]}},
            "retrieved[0]: 'rank' must be at most 2,147,483,647, got 2,147,483,648",
        ),
        (
            {9: {"elapsed_ms": 1e12 + 0.5}},
            "'elapsed_ms' must be at most 1,000,000,000,000, got 1000000000000.5",
        ),
        (
            {9: {"request_cost": 1_000_000_001}},
            "'request_cost' must be at most 1,000,000,000, got 1,000,000,001",
        ),
    ],
)
def test_integers_and_figures_beyond_their_column_or_limit_are_refused(edit, message):
    assert refused(edit) == [f"line 9: {message}"]


def test_a_grade_beyond_100_is_refused_before_the_exponential_gain_overflows():
    assert refused({13: {"grade": 40000}}) == ["line 13: 'grade' must be at most 100, got 40,000"]


# --- Text: no NUL, no control characters, no lone surrogates ---------------------------------


def test_a_nul_character_is_refused_with_its_field_and_position():
    # PostgreSQL text cannot hold NUL: it was a DataError, a 500.
    errors = refused(raw_line(3, "Assignment 2 is due", "Assignment\\u0000 2 is due"))
    assert errors[:2] == [
        "line 3: text: NUL U+0000 at character 10 is not allowed in text (tab, newline and "
        "carriage return are)",
        "line 6: evidence[0]: unknown passage_id 'notes-17'",  # the line was refused whole
    ]


def test_control_characters_in_nested_text_and_in_keys_are_refused():
    errors = refused(
        {
            **raw_line(7, '"lab-notes.pdf"', '"lab-\\u0007notes.pdf"'),
            **raw_line(2, '"chunk_size"', '"chunk\\u001b_size"'),
        }
    )
    assert [e for e in errors if "control character" in e] == [
        'line 2: settings: key "chunk\\u001b_size": control character U+001B at character 5 '
        "is not allowed in text (tab, newline and carriage return are)",
        "line 7: checked_documents[0]: control character U+0007 at character 4 is not allowed "
        "in text "
        "(tab, newline and carriage return are)",
    ]


def test_a_lone_surrogate_is_refused():
    # "\ud800" decodes to a str that cannot be encoded as UTF-8: a 500 wherever it was written.
    errors = refused(raw_line(9, "Late submissions", "Late \\ud800submissions"))
    assert errors == [
        "line 9: text: lone surrogate U+D800 at character 38 (not a Unicode character: it "
        "cannot be stored as UTF-8)"
    ]


def test_tabs_newlines_and_astral_characters_are_text_and_kept():
    text = "Line one\tand\r\nline two 🙂 (\\ud83d\\ude42 is the same character)"
    lines = lines_of(edit={4: {"text": text}})
    import_bundle(lines=lines, project_slug="t")
    assert Passage.objects.get(passage_id="notes-18").text == text


# --- Structure -------------------------------------------------------------------------------


def test_nesting_deeper_than_32_levels_is_refused_without_a_recursion_error():
    deep = {"settings": json.loads("[" * 40 + "]" * 40)}
    very_deep = SMALL[1].replace('"reranker": null', '"reranker": ' + "[" * 100_000 + "]" * 100_000)
    assert refused({2: deep}) == ["line 2: settings: nested deeper than 32 levels"]
    assert refused({2: very_deep}) == ["line 2: nested deeper than 32 levels"]


def test_32_levels_are_accepted_and_33_are_not():
    # The line's object is level 1, `settings` level 2, its `x` level 3.
    settings = {"x": json.loads("[" * 30 + "]" * 30)}
    deeper = {"x": json.loads("[" * 31 + "]" * 31)}
    assert refused({2: {"settings": deeper}}) == ["line 2: settings: nested deeper than 32 levels"]
    import_bundle(lines=lines_of(edit={2: {"settings": settings}}), project_slug="t")
    assert Variant.objects.get(name="baseline").settings == settings


@pytest.mark.parametrize("kind", [["answer"], {"answer": 1}, 3])
def test_a_type_that_is_not_a_string_is_a_line_error(kind):
    # A list or an object was looked up in a dict: TypeError, a 500.
    article = {list: "a list", dict: "an object", int: "a number"}[type(kind)]
    errors = refused({9: {"type": kind}})
    assert errors == [
        f"line 9: 'type' is {article}: each line needs a type, one of answer, bundle, case, "
        "judgment, passage, variant"
    ]


def test_a_label_schema_support_that_is_not_a_string_is_a_line_error():
    errors = refused({1: {"label_schema": {"support": ["binary"]}}})
    assert errors == [
        "line 1: label_schema 'support' must be a string such as 'three_way' or 'binary', got "
        "a list"
    ]


def test_a_key_given_twice_is_refused_rather_than_silently_dropping_a_value():
    errors = refused(raw_line(4, '"document"', '"text": "other", "document"'))
    assert errors[0] == 'line 4: key "text" appears twice (only one value could be kept)'


def test_a_byte_order_mark_before_the_first_line_is_ignored():
    lines = ["\ufeff" + SMALL[0], *SMALL[1:]]
    assert import_bundle(lines=lines, project_slug="t").project.name == "Small sample"


def test_a_line_beyond_the_line_limit_is_refused_before_it_is_parsed():
    line = lines_of(edit={4: {"text": "x" * MAX_LINE}})[3]
    errors = refused({4: line})
    assert errors[0] == (
        f"line 4: the line is {len(line):,} characters long; at most 5,000,000 are read"
    )


# --- Lengths ---------------------------------------------------------------------------------

LONG_ID = "p" * 256


@pytest.mark.parametrize(
    "edit, line, message",
    [
        ({3: {"passage_id": LONG_ID}}, 3, "'passage_id' is 256 characters long; at most 255"),
        ({3: {"document": LONG_ID}}, 3, "'document' is 256 characters long; at most 255"),
        ({3: {"location": LONG_ID}}, 3, "'location' is 256 characters long; at most 255"),
        ({3: {"title": LONG_ID}}, 3, "'title' is 256 characters long; at most 255"),
        ({3: {"text": "x" * 200_001}}, 3, "'text' is 200,001 characters long; at most 200,000"),
        ({2: {"name": "v" * 201}}, 2, "'name' is 201 characters long; at most 200"),
        ({2: {"model": "m" * 256}}, 2, "'model' is 256 characters long; at most 255"),
        ({2: {"description": "d" * 20_001}}, 2, "'description' is 20,001 characters long"),
        ({1: {"name": "n" * 201}}, 1, "'name' is 201 characters long; at most 200"),
        ({1: {"corpus_version": "c" * 201}}, 1, "'corpus_version' is 201 characters long"),
        ({6: {"question": "q" * 20_001}}, 6, "'question' is 20,001 characters long"),
        ({6: {"tags": ["t" * 256]}}, 6, "'tags[0]' is 256 characters long; at most 255"),
        ({6: {"tags": ["t"] * 10_001}}, 6, "'tags' has 10,001 items; at most 10,000"),
        ({6: {"reference": "r" * 200_001}}, 6, "'reference' is 200,001 characters long"),
        (
            {6: {"evidence": [{"passage_id": "notes-17", "quote": "Late", "location": LONG_ID}]}},
            6,
            "evidence[0]: 'location' is 256 characters long; at most 255",
        ),
        (
            {6: {"evidence": [{"passage_id": "notes-17", "quote": "Late"}] * 1001}},
            6,
            "'evidence' has 1,001 items; at most 1,000",
        ),
        ({9: {"answer_id": "a" * 256}}, 9, "'answer_id' is 256 characters long; at most 255"),
        ({9: {"variant": "v" * 201}}, 9, "'variant' is 201 characters long; at most 200"),
        ({9: {"text": "x" * 200_001}}, 9, "'text' is 200,001 characters long; at most 200,000"),
        (
            {9: {"claims": [{**ANSWER["claims"][0], "citations": [LONG_ID]}]}},
            9,
            "claims[0]: 'citations[0]' is 256 characters long; at most 255",
        ),
        (
            {9: {"claims": [{**ANSWER["claims"][0], "citations": [f"c{i}" for i in range(1001)]}]}},
            9,
            "claims[0]: 'citations' has 1,001 items; at most 1,000",
        ),
    ],
)
def test_over_long_values_are_refused_by_line_without_echoing_them(edit, line, message):
    errors = refused(edit)
    assert errors[0].startswith(f"line {line}: {message}"), errors
    assert all(len(error) < 200 for error in errors)
    # What follows is what refers to an id refused, never a second word about the value.
    assert all("unknown" in error for error in errors[1:]), errors


def test_values_at_every_limit_are_accepted_and_stored_as_given():
    # On PostgreSQL this proves the limits fit the columns (varchar(255), integer, smallint).
    pid, cid, aid, name = "p" * 255, "c" * 255, "a" * 255, "v" * 200
    passage = {"type": "passage", "passage_id": pid, "text": "t" * 200_000, "document": "d" * 255}
    case = {
        "type": "case",
        "case_id": cid,
        "question": "q" * 20_000,
        "answerable": False,
        "adversarial": False,
        "tags": ["t" * 255],
    }
    answer = {
        "type": "answer",
        "answer_id": aid,
        "case_id": cid,
        "variant": name,
        "text": "x" * 200_000,
        "sample": 2**31 - 1,
        "elapsed_ms": 1e12,
        "request_cost": 1e9,
        "retrieved": [{"passage_id": pid, "rank": 2**31 - 1, "score": -1.5e300}],
        "claims": [{"text": "x" * 200_000, "start": 0, "end": 200_000, "citations": [pid]}],
    }
    judgment = {"type": "judgment", "case_id": cid, "passage_id": pid, "grade": 100}
    lines = [SMALL[0], *(json.dumps(x) for x in (passage, case, answer, judgment))]
    import_bundle(lines=lines, project_slug="t")
    stored = Answer.objects.get(answer_id=aid)
    assert (stored.sample, stored.elapsed_ms, stored.request_cost) == (2**31 - 1, 1e12, 1e9)
    assert stored.variant.name == name and len(stored.text) == 200_000
    ranked = RetrievedPassage.objects.get(answer=stored)
    assert (ranked.rank, ranked.score, ranked.passage.passage_id) == (2**31 - 1, -1.5e300, pid)
    assert Judgment.objects.get().grade == 100


def test_the_evaluation_report_reads_figures_at_their_limits():
    # Each is finite; their mean and p95 must be too (math.fsum overflows past 1.8e308).
    edits = {n: {"elapsed_ms": 1e12, "request_cost": 1e9} for n in (9, 10, 11, 12)}
    project = import_bundle(lines=lines_of(edit=edits), project_slug="t").project
    report = evaluate(project, ks=[1, 3])
    latency = report["variants"]["baseline"]["generation"]["all"]["latency"]
    assert latency["mean"] == 1e12


def test_parse_bundle_reports_every_problem_of_a_line_at_once():
    line = SMALL[8].replace('"elapsed_ms": 1200', '"elapsed_ms": NaN, "x": "\\u0000"')
    with pytest.raises(BundleInvalid) as caught:
        parse_bundle([SMALL[0], line])
    assert [str(e).split(":")[1] for e in caught.value.errors] == [" elapsed_ms", " x"]


def test_a_large_integer_valued_score_exports_as_a_number_that_imports_again():
    # Found by the fuzzer: 1e19 was exported as the integer 10000000000000000000, beyond a
    # 64-bit integer, which the import then refused: an export that did not re-import.
    from annotate.imports.bundle_export import bundle_rows

    retrieved = [{**ANSWER["retrieved"][0], "score": 1e19}]
    edited = lines_of(edit={9: {"retrieved": retrieved}})
    project = import_bundle(lines=edited, project_slug="t").project
    exported = [json.dumps(row, allow_nan=False) for row in bundle_rows(project)]
    copy = import_bundle(lines=exported, project_slug="copy").project
    score = RetrievedPassage.objects.get(
        answer__project=copy, rank=1, answer__answer_id=ANSWER["answer_id"]
    ).score
    assert score == 1e19


def test_a_message_that_quotes_a_huge_value_is_cut_short_whichever_importer_wrote_it():
    # Found by the fuzzer: the label importer's "unknown answer_id '...'" quoted all 20,001
    # characters of one, once per line.
    from annotate.imports.lines import BundleError

    error = BundleError(3, "unknown answer_id '" + "x" * 20_001 + "'")
    assert len(error.message) == 1_000 - 40 + len("… (20,021 characters)")
    assert error.message.endswith("… (20,021 characters)")
