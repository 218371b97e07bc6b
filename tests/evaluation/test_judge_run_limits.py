"""Issue #15: a judge-run file is read as strictly as a bundle. What once reached the
database and answered 500 -- NaN in `settings`, NUL in a raw response, a lone surrogate in a
quote, deep nesting, over-long names and texts -- is an import error by line, or (for what is
the judge's own output) a malformed verdict; nothing is written when the file is refused."""

from __future__ import annotations

import json

import pytest

from annotate.imports.lines import BundleInvalid
from evaluation.judges.runs import import_judge_run
from evaluation.models import JudgeRun, Verdict
from tests.conftest import import_fixture
from tests.evaluation.test_judges import RUN, jsonl, run_file, supported, verdict

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(db):
    return import_fixture("small.jsonl", "small")


def refused(project, lines, **kwargs) -> list[str]:
    with pytest.raises(BundleInvalid) as caught:
        import_judge_run(lines=lines, project=project, **kwargs)
    assert not JudgeRun.objects.exists() and not Verdict.objects.exists()
    return [str(e) for e in caught.value.errors]


def raw(row: dict, old: str, new: str) -> str:
    """The row's JSON text with `old` replaced: for what json.dumps never writes."""
    text = json.dumps(row)
    assert old in text
    return text.replace(old, new, 1) + "\n"


@pytest.mark.parametrize(
    "literal, message",
    [
        ("NaN", "settings.temperature: NaN is not a JSON number"),
        ("Infinity", "settings.temperature: Infinity is not a JSON number"),
        ("1e400", "settings.temperature: number 1e400 is out of range"),
        ("123456789012345678901234", "settings.temperature: integer 123456789012345678901234"),
    ],
)
def test_a_non_finite_or_huge_number_in_the_run_settings_is_refused(project, literal, message):
    # settings is a jsonb column: PostgreSQL refuses NaN and Infinity, a DataError.
    run = raw(RUN, '"temperature": 0', f'"temperature": {literal}')
    errors = refused(project, [run, *jsonl(supported())])
    assert len(errors) == 1 and errors[0].startswith(f"line 1: {message}")


def test_a_nul_in_a_raw_response_or_a_lone_surrogate_in_a_quote_is_refused_by_line(project):
    lines = [
        *jsonl(RUN),
        raw(supported(raw="ok"), '"raw": "ok"', '"raw": "o\\u0000k"'),
        raw(supported(claim_index=1, quote="q"), '"quote": "q"', '"quote": "\\udfff"'),
    ]
    assert refused(project, lines) == [
        "line 2: raw: NUL U+0000 at character 1 is not allowed in text (tab, newline and "
        "carriage return are)",
        "line 3: quote: lone surrogate U+DFFF at character 0 (not a Unicode character: it "
        "cannot be stored as UTF-8)",
    ]


def test_deep_nesting_in_settings_is_refused_without_a_recursion_error(project):
    deep = raw(RUN, '"temperature": 0', '"temperature": ' + "[" * 50_000 + "]" * 50_000)
    deeper_than_32 = {**RUN, "settings": {"a": json.loads("[" * 40 + "]" * 40)}}
    assert refused(project, [deep, *jsonl(supported())]) == ["line 1: nested deeper than 32 levels"]
    assert refused(project, run_file(supported(), **deeper_than_32)) == [
        "line 1: settings: nested deeper than 32 levels"
    ]


def test_an_unhashable_type_or_answer_id_is_a_line_error(project):
    lines = jsonl(RUN, {**supported(), "type": ["verdict"]}, supported(answer_id=["a"]))
    assert refused(project, lines) == [
        "line 2: type ['verdict']: each line is a 'run' or a 'verdict'",
        "line 3: 'answer_id' must be a string, got a list",
    ]


@pytest.mark.parametrize(
    "row, message",
    [
        ({**RUN, "judge": "j" * 201}, "line 1: 'judge' is longer than 200 characters"),
        ({**RUN, "model": "m" * 256}, "line 1: 'model' is longer than 255 characters"),
        ({**RUN, "prompt": "p" * 200_001}, "line 1: 'prompt' is 200,001 characters long"),
        ({**RUN, "judge": "j" * 200_001}, "line 1: 'judge' is 200,001 characters long"),
    ],
)
def test_over_long_run_fields_are_refused(project, row, message):
    errors = refused(project, jsonl(row, supported()))
    assert len(errors) == 1 and errors[0].startswith(message)


def test_an_over_long_raw_response_or_answer_id_is_refused_without_echoing_it(project):
    errors = refused(
        project, run_file(supported(raw="r" * 200_001), supported(answer_id="a" * 100_000))
    )
    assert errors == [
        "line 2: 'raw' is 200,001 characters long; at most 200,000 are allowed",
        "line 3: 'answer_id' is 100,000 characters long; at most 255 are allowed",
    ]


def test_a_name_with_a_control_character_is_refused(project):
    errors = refused(project, run_file(supported()), name="run\x00one")
    assert errors == [
        "line 1: the run name: NUL U+0000 at character 3 is not allowed in text (tab, newline "
        "and carriage return are)"
    ]


def test_an_over_long_quote_or_evidence_id_is_the_judges_failure_kept_as_malformed(project):
    result = import_judge_run(
        lines=run_file(
            supported(quote="q" * 20_001),
            supported(claim_index=1, evidence_ids=["p" * 256]),
        ),
        project=project,
    )
    problems = list(Verdict.objects.filter(run=result.run).values_list("status", "problem"))
    assert problems == [
        ("malformed", "'quote' is 20,001 characters long; at most 20,000 are allowed"),
        (
            "malformed",
            "'evidence_ids' must be at most 1,000 passage ids of at most 255 characters",
        ),
    ]


def test_a_file_name_with_control_characters_is_stored_without_them(project):
    result = import_judge_run(
        lines=run_file(supported()), project=project, source_name="run\x00\x1b.jsonl"
    )
    assert result.run.source_name == "run.jsonl"


def test_a_verdict_line_with_a_bool_claim_index_is_an_import_error(project):
    errors = refused(project, run_file(verdict(claim_index=True, label="supported")))
    assert errors == ["line 2: 'claim_index' must be an integer, got a boolean"]


def test_an_empty_answer_id_is_a_line_error(project):
    # Found by the fuzzer: "" skipped the lookup and reached the import, a KeyError (a 500).
    assert refused(project, run_file(supported(answer_id=""))) == [
        "line 2: 'answer_id' must not be empty"
    ]
