"""claimdesk and Ragas read each other's files. A dataset Ragas wrote (to_jsonl, to_csv)
imports and comes back out as the same samples; the gold export's answer rows load in Ragas
as one sample per answer. With Ragas installed the tests use it; without it they hold the
rows to Ragas' SingleTurnSample as vendored below. Ragas is not in requirements-test.txt
(about 70 more packages, 400 MB, on top of the test tools); to run the Ragas half:

    python3 -m venv /tmp/ragas-venv
    /tmp/ragas-venv/bin/pip install -r requirements-test.txt
    /tmp/ragas-venv/bin/pip install 'ragas==0.4.3' 'langchain-community<0.4'
    /tmp/ragas-venv/bin/python -m pytest tests/annotate/test_ragas_interop.py
"""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest
from django.core.management import call_command

from annotate.imports.bundle_export import bundle_rows
from annotate.imports.ragas_import import import_ragas
from annotate.models import Case
from tests.conftest import FIXTURES
from tests.conftest import labelled_demo as build_labelled_demo

RAGAS = FIXTURES / "ragas"
RAGAS_COLUMNS = ("user_input", "response", "retrieved_contexts", "retrieved_context_ids")

# Ragas 0.4.3, src/ragas/dataset_schema.py, class SingleTurnSample(BaseSample): every field
# is Optional and defaults to None; pydantic's default (extra="ignore") drops other keys.
# EvaluationDataset.from_list reads a row as a MultiTurnSample when user_input is a list.
SINGLE_TURN_SAMPLE: dict[str, typing.Any] = {
    "user_input": str,
    "retrieved_contexts": list[str],
    "reference_contexts": list[str],
    "retrieved_context_ids": list[str | int],
    "reference_context_ids": list[str | int],
    "response": str,
    "multi_responses": list[str],
    "reference": str,
    "rubrics": dict[str, str],
    "persona_name": str,
    "query_style": str,
    "query_length": str,
}


def conforms(value, annotation) -> bool:
    """isinstance for the few annotations above (None is always allowed: Optional)."""
    if value is None:
        return True
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list:
        return isinstance(value, list) and all(conforms(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(
            conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items()
        )
    if origin in (typing.Union, type(str | int)):
        return any(conforms(value, a) for a in args)
    return isinstance(value, annotation) and not isinstance(value, bool)


def ragas_samples(path: Path) -> list[dict]:
    """The samples of a Ragas JSONL file, as Ragas' to_list() gives them."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def samples_of(project) -> list[dict]:
    """A project's answers back as Ragas samples, from its bundle export."""
    rows = list(bundle_rows(project))
    passages = {r["passage_id"]: r["text"] for r in rows if r["type"] == "passage"}
    cases = {r["case_id"]: r for r in rows if r["type"] == "case"}
    samples = []
    for answer in (r for r in rows if r["type"] == "answer"):
        case = cases[answer["case_id"]]
        ranked = [r["passage_id"] for r in sorted(answer["retrieved"], key=lambda r: r["rank"])]
        sample = {
            "user_input": case["question"],
            "retrieved_contexts": [passages[pid] for pid in ranked],
            "retrieved_context_ids": ranked,
            "response": answer["text"],
        }
        if case.get("reference"):
            sample["reference"] = case["reference"]
        samples.append(sample)
    return samples


def in_any_order(samples: list[dict]) -> list[str]:
    return sorted(json.dumps(s, sort_keys=True, ensure_ascii=False) for s in samples)


@pytest.fixture
def labelled_demo(db):
    """The demo project, labelled by both reviewers: gold has a row for every answer."""
    return build_labelled_demo()


def gold_answer_rows(project, tmp_path) -> list[dict]:
    """The answer rows as docs/ragas.md exports them for Ragas: `export_gold --item answer
    --decided-only`, no filtering in Python."""
    path = tmp_path / "gold-answers.jsonl"
    call_command(
        "export_gold",
        "--project",
        project.slug,
        "--item",
        "answer",
        "--decided-only",
        "--output",
        str(path),
    )
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows and all(row["item"] == "answer" and row["decided"] for row in rows)
    return rows


# --- Ragas into claimdesk --------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["baseline.jsonl", "baseline.csv"])
def test_a_dataset_ragas_wrote_imports_and_comes_back_as_the_same_samples(name):
    with open(RAGAS / name, "rb") as stream:
        project = import_ragas(lines=stream, project_slug="rg", variant="baseline").project

    assert in_any_order(samples_of(project)) == in_any_order(
        ragas_samples(RAGAS / "baseline.jsonl")
    )


@pytest.mark.django_db
def test_the_ragas_files_hold_what_the_installed_ragas_reads(tmp_path):
    """The committed samples are Ragas' own output: Ragas reads them back unchanged, and
    writes the project's samples back in the same form."""
    ragas = pytest.importorskip("ragas")
    dataset = ragas.EvaluationDataset.from_jsonl(str(RAGAS / "baseline.jsonl"))
    assert dataset.to_list() == ragas_samples(RAGAS / "baseline.jsonl")

    with open(RAGAS / "baseline.jsonl", "rb") as stream:
        project = import_ragas(lines=stream, project_slug="rg", variant="baseline").project
    again = tmp_path / "again.jsonl"
    ragas.EvaluationDataset.from_list(samples_of(project)).to_jsonl(str(again))
    assert in_any_order(ragas_samples(again)) == in_any_order(dataset.to_list())


# --- claimdesk's gold into Ragas -------------------------------------------------------------


@pytest.mark.django_db
def test_gold_answer_rows_have_the_fields_and_types_of_a_ragas_single_turn_sample(
    labelled_demo, tmp_path
):
    rows = gold_answer_rows(labelled_demo, tmp_path)
    assert rows
    for row in rows:
        assert set(RAGAS_COLUMNS) <= row.keys()
        assert isinstance(row["user_input"], str)  # a list would read as a multi-turn sample
        for field, annotation in SINGLE_TURN_SAMPLE.items():
            if field in row:
                assert conforms(row[field], annotation), (field, row[field])


@pytest.mark.django_db
def test_gold_answer_rows_load_in_ragas_as_one_sample_per_answer(labelled_demo, tmp_path):
    ragas = pytest.importorskip("ragas")
    rows = gold_answer_rows(labelled_demo, tmp_path)

    dataset = ragas.EvaluationDataset.from_jsonl(str(tmp_path / "gold-answers.jsonl"))

    assert len(dataset) == len(rows) == len({row["answer_id"] for row in rows}) > 0
    assert all(isinstance(s, ragas.SingleTurnSample) for s in dataset)
    for sample, row in zip(dataset, rows, strict=True):
        assert [getattr(sample, c) for c in RAGAS_COLUMNS] == [row[c] for c in RAGAS_COLUMNS]

    # ... and what Ragas writes of them imports back as the same questions and answers.
    back = tmp_path / "back.jsonl"
    dataset.to_jsonl(str(back))
    with open(back, "rb") as stream:
        project = import_ragas(lines=stream, project_slug="back", variant="gold").project
    assert in_any_order(samples_of(project)) == in_any_order(
        [{c: row[c] for c in RAGAS_COLUMNS} for row in rows]
    )


@pytest.mark.django_db
def test_the_vendored_field_list_is_ragas_own():
    ragas = pytest.importorskip("ragas")
    fields = ragas.SingleTurnSample.model_fields
    assert list(fields) == list(SINGLE_TURN_SAMPLE)
    for name, annotation in SINGLE_TURN_SAMPLE.items():
        assert shape(fields[name].annotation) == shape(annotation | None), name


def shape(annotation) -> object:
    """An annotation compared by meaning: List[str] is list[str], Optional[X] is X | None."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is None:
        return annotation
    if origin in (typing.Union, type(str | int)):
        return ("union", frozenset(shape(a) for a in args))
    return (origin, tuple(shape(a) for a in args))


@pytest.mark.django_db
def test_gold_answer_rows_carry_the_reference_where_the_case_has_one(labelled_demo, tmp_path):
    Case.objects.filter(project=labelled_demo).update(reference="The reference answer.")
    for row in gold_answer_rows(labelled_demo, tmp_path):
        assert row.get("reference") == "The reference answer."
