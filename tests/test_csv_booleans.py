"""Every CSV the app writes spells booleans as JSON does, `true` and `false` (issue #30): the
csv module wrote Python's `True`, so the gold CSV said `True` where its JSONL says `true`.
Each writer (gold, by page and API; report tables; agreement; a judge run's tables) is read
back; all go through annotate.common.csvsafe."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from annotate.common.csvsafe import safe_cell
from evaluation.models import JudgeRun
from tests.api import build_demo
from tests.conftest import PASSWORD

PYTHON_WORDS = {"True", "False"}


@pytest.mark.parametrize(("value", "cell"), [(True, "true"), (False, "false")])
def test_a_boolean_is_written_as_json_writes_it(value, cell):
    assert safe_cell(value) == cell


@pytest.mark.parametrize("value", [1, 0, 0.0, None, "True"])
def test_numbers_none_and_text_are_left_as_they_are(value):
    kept = safe_cell(value)
    assert kept == value and type(kept) is type(value)


@pytest.fixture
def demo(db, reviewer_a, reviewer_b, lead):
    return build_demo([reviewer_a, reviewer_b], lead)


def read(response) -> list[dict[str, str]]:
    assert response.status_code == 200, response
    content = response.content if not response.streaming else b"".join(response.streaming_content)
    return list(csv.DictReader(io.StringIO(content.decode())))


def test_every_csv_writes_true_and_false(demo, client, lead):
    client.login(username=lead.username, password=PASSWORD)
    run = JudgeRun.objects.get(project=demo)
    judge = reverse("judge_run", args=[demo.slug, run.pk])
    report = reverse("evaluation:report", args=[demo.slug])
    limits = "&latency_budget=1000&unsupported_limit=0.5"
    tables = {
        "gold": read(client.get(f"/p/{demo.slug}/gold.csv")),
        "gold (API)": read(client.get(f"/api/v1/projects/{demo.slug}/gold.csv")),
        "agreement": read(client.get(f"/p/{demo.slug}/agreement/?format=csv")),
        "variants": read(client.get(f"{report}?format=csv&table=variants{limits}")),
        "disagreements": read(client.get(f"{judge}?format=csv&table=disagreements")),
    }
    booleans = {
        "gold": ("answerable", "adversarial", "decided"),
        "gold (API)": ("answerable", "adversarial", "decided"),
        "variants": ("meets_both",),
        "disagreements": ("quote_found",),
    }
    for name, rows in tables.items():
        assert rows, name
        found = {cell for row in rows for cell in row.values()}
        assert not found & PYTHON_WORDS, name
        for column in booleans.get(name, ()):
            assert {row[column] for row in rows} <= {"true", "false", ""}, (name, column)
            assert {row[column] for row in rows} & {"true", "false"}, (name, column)
    assert {r["decided"] for r in tables["gold"]} == {"true", "false"}
