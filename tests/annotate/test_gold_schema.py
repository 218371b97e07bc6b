"""The gold export follows its documented JSON Schema (docs/gold-export.schema.json), and the
schema is strict enough to catch a row that breaks it."""

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from annotate.gold.exports import gold_rows
from tests.conftest import labelled_demo

SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "docs" / "gold-export.schema.json").read_text()
)


@pytest.mark.django_db
def test_every_exported_row_validates_and_a_broken_one_does_not():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    project = labelled_demo()
    validator = jsonschema.Draft202012Validator(SCHEMA)
    rows = list(gold_rows(project))
    assert rows and all(validator.is_valid(json.loads(json.dumps(row))) for row in rows)
    claim = next(r for r in rows if r["item"] == "claim")
    for field, value in (("label", 5), ("judge_split", "train"), ("claim_index", None)):
        broken = copy.deepcopy(claim)
        broken[field] = value
        assert not validator.is_valid(broken), field
    answer = next(r for r in rows if r["item"] == "answer")
    broken = copy.deepcopy(answer)
    broken["gold"]["relevance"] = 3
    assert not validator.is_valid(broken)
