"""A gold row's line and content hash are the bytes `json.dumps(content, sort_keys=True,
ensure_ascii=False, separators=(",", ":"))` gives, whichever encoder wrote them: the export
encodes with orjson (five times faster), and anyone checking a hash recomputes it with json."""

from __future__ import annotations

import hashlib
import json

import pytest

from annotate.common.jsonl import jsonl
from annotate.gold.exports import GoldRow, _json_bytes, _orjson_bytes, _row_encoder, gold_rows
from annotate.models import Answer, Project
from tests.annotate.test_adjudication import demo  # noqa: F401  (fixture)

AWKWARD = {
    "text": 'é ü 中文 😀 \u2028 \u2029 \x7f \x00 \x01 \x1f \t\n\r\b\f " \\ / </script>',
    "ключ": {"b": [1, -2, 0, True, False, None], "a": {"z": "", "é": "x"}, "A": []},
    "kappa": [0.8117465721820882, -0.25, 1.0, 0.0, -0.0, 0.1 + 0.2, 123456.789],
    "numbers": [0, -1, 2**53 + 1, 2**63 - 1, -(2**63)],
    "citations": {"doc-10:p1": "supports", "doc-9:p1": "does_not_support", "Doc": ""},
}


def test_orjson_writes_what_json_writes_for_the_values_a_row_holds():
    assert _orjson_bytes(AWKWARD) == _json_bytes(AWKWARD)


def test_an_integer_orjson_refuses_goes_through_json():
    row = {"big": 2**70, "text": "x"}
    assert _orjson_bytes(row) == _json_bytes(row) == b'{"big":1180591620717411303424,"text":"x"}'


@pytest.mark.parametrize("value", [1e-05, -3e-07, float("nan"), float("inf")])
def test_a_float_orjson_would_write_otherwise_makes_the_export_use_json(value):
    assert _row_encoder([0.5, None, value]) is _json_bytes
    assert _row_encoder([0.5, None, 0.8117465721820882]) is _orjson_bytes


@pytest.mark.parametrize("kappa", [0.7905881490008093, 1e-05])
def test_each_line_is_its_row_as_json_writes_it(demo, monkeypatch, kappa):  # noqa: F811
    """With a kappa that each encoder writes alike and one orjson writes as 0.00001."""
    from evaluation.reports import agreement as agreement_report

    note = 'é 😀 \u2028 \x01 "quoted"'
    Answer.objects.filter(project=demo).update(text=note)
    monkeypatch.setattr(
        agreement_report, "human_kappas", lambda project: {"support": kappa, "relevance": kappa}
    )
    rows = list(gold_rows(demo, with_context=True))
    assert rows and {row["item"] for row in rows} == {"claim", "answer"}
    for row, line in zip(rows, jsonl(gold_rows(demo, with_context=True)), strict=True):
        content = {k: v for k, v in row.items() if k not in ("export_id", "as_of", "content_hash")}
        encoded = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        assert row["content_hash"] == hashlib.sha256(encoded.encode()).hexdigest()
        provenance = ",".join(
            f'"{key}":{json.dumps(row[key], ensure_ascii=False)}' for key in ("export_id", "as_of")
        )
        assert line == f'{encoded[:-1]},{provenance},"content_hash":"{row["content_hash"]}"}}\n'
        assert row["response"] == note and kappa in row["human_kappa"].values()


def test_the_rows_of_an_export_are_whole_objects(demo: Project):  # noqa: F811
    """Rows are built in place (no copy per row), yet each is its own mapping with its own
    gold: changing one changes no other. (The human kappas, the same for every row of an
    export, are one shared mapping.)"""
    rows = list(gold_rows(demo))
    assert len({id(row) for row in rows}) == len(rows)
    rows[0]["gold"]["support"] = "changed"
    assert all(row["gold"].get("support") != "changed" for row in rows[1:])
    assert isinstance(rows[0], GoldRow)
