"""Gold from elsewhere (import_gold, SPEC "Gold from elsewhere"): one adjudicated label per
answer -- here fixtures/halu/gold.jsonl, shaped like a public single-annotator hallucination
benchmark (binary support only, no reviewer, no note, several models' summaries) -- checked
exactly as reviewers' labels are, all or nothing, and kept with the file's name and hash."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotate.bundles import BundleInvalid
from annotate.models import GoldImport, ImportedClaimGold, ImportedGold
from annotate.services import add_member, import_gold, import_labels, open_labelling
from tests.conftest import FIXTURES, import_fixture

pytestmark = pytest.mark.django_db

HALU = FIXTURES / "halu"
GOLD = HALU / "gold.jsonl"


def gold_lines() -> list[dict]:
    return [json.loads(line) for line in GOLD.read_text().splitlines()]


def encoded(rows: list[dict]) -> list[bytes]:
    return [json.dumps(row).encode() + b"\n" for row in rows]


@pytest.fixture
def halu():
    """The benchmark's summaries, labelling open, nobody's labels yet."""
    project = import_fixture("halu/bundle.jsonl", "halu")
    for name in ("ann1", "ann2"):
        add_member(project=project, username=name, role="reviewer")
    return open_labelling(project=project)


def _import(project, lines=None, **kwargs):
    kwargs.setdefault("source", "halu-bench")
    kwargs.setdefault("file_name", "gold.jsonl")
    return import_gold(
        lines=lines if lines is not None else GOLD.open("rb"), project=project, **kwargs
    )


def test_a_benchmarks_labels_become_gold_with_their_file_as_provenance(halu, lead):
    rows = gold_lines()
    result = _import(halu, user=lead)
    claims = sum(len(row["claims"]) for row in rows)
    assert (result.created, result.replaced, result.unchanged, result.claims) == (
        len(rows),
        0,
        0,
        claims,
    )
    record = GoldImport.objects.get()
    assert (record.source, record.file_name, record.imported_by) == (
        "halu-bench",
        "gold.jsonl",
        lead,
    )
    assert record.sha256 == hashlib.sha256(GOLD.read_bytes()).hexdigest()
    assert (record.answer_count, record.claim_count) == (len(rows), claims)
    assert ImportedGold.objects.count() == len(rows)
    assert ImportedClaimGold.objects.count() == claims
    first = ImportedGold.objects.get(answer__answer_id=rows[0]["answer_id"])
    assert first.line == 1
    assert [c.support for c in first.claims.order_by("claim__ordinal")] == [
        c["support"] for c in rows[0]["claims"]
    ]


def test_the_same_file_again_writes_nothing(halu):
    _import(halu)
    with CaptureQueriesContext(connection) as queries:
        again = _import(halu)
    assert (again.created, again.replaced, again.unchanged) == (0, 0, len(gold_lines()))
    assert again.gold_import is None
    assert GoldImport.objects.count() == 1
    assert len(queries) < 15, len(queries)  # answers and their held gold by chunk, not by line


def test_another_label_for_an_answer_with_imported_gold_is_refused_unless_replaced(halu):
    _import(halu)
    rows = gold_lines()
    flipped = rows[2]
    flipped["claims"][0]["support"] = (
        "unsupported" if flipped["claims"][0]["support"] == "supported" else "supported"
    )
    with pytest.raises(BundleInvalid) as caught:
        _import(halu, encoded(rows), file_name="gold-v2.jsonl")
    assert [str(e) for e in caught.value.errors] == [
        "line 3: this answer already holds other imported gold (from 'halu-bench', "
        "gold.jsonl line 3): import with replace (--replace) to replace it"
    ]
    assert GoldImport.objects.count() == 1

    result = _import(
        halu, encoded(rows), file_name="gold-v2.jsonl", source="halu-bench-v2", replace=True
    )
    assert (result.created, result.replaced, result.unchanged) == (0, 1, len(rows) - 1)
    held = ImportedGold.objects.select_related("gold_import").get(
        answer__answer_id=flipped["answer_id"]
    )
    assert (held.gold_import.file_name, held.gold_import.source) == (
        "gold-v2.jsonl",
        "halu-bench-v2",
    )
    assert held.claims.get(claim__ordinal=0).support == flipped["claims"][0]["support"]
    # The first file's record stays: what was imported when.
    assert GoldImport.objects.count() == 2
    assert ImportedGold.objects.count() == len(rows)


def test_every_problem_is_listed_by_line_and_nothing_is_written(halu):
    rows = gold_lines()
    bad = [
        {**rows[0], "reviewer": "ann1"},  # the format without reviewer
        {**rows[1], "answer_id": "src-99/nobody"},
        {**rows[2], "claims": rows[2]["claims"][1:]},  # a claim without gold
        {**rows[3], "relevance": 2},  # off in this project's schema
        {
            **rows[4],
            "claims": [{**rows[4]["claims"][0], "support": "contradicted"}, *rows[4]["claims"][1:]],
        },
        rows[0],  # the same answer twice
    ]
    lines = [*encoded(bad), b"{not json\n"]
    with pytest.raises(BundleInvalid) as caught:
        _import(halu, lines)
    messages = [str(e) for e in caught.value.errors]
    assert messages[0].startswith("line 1: 'reviewer' has no place in gold from elsewhere")
    assert "line 2: unknown answer_id 'src-99/nobody'" in messages
    assert "line 3: claims 0 have no label" in messages
    assert any(
        m.startswith("line 4: 'relevance' is not labelled in this project") for m in messages
    )
    assert (
        "line 5: claims[0].support: This project labels support as supported or unsupported, "
        "not 'contradicted'." in messages
    )
    assert "line 6: this answer is given gold twice (first on line 1)" in messages
    assert any(m.startswith("line 7: ") for m in messages)
    assert not GoldImport.objects.exists() and not ImportedGold.objects.exists()


def test_a_line_is_held_to_what_import_labels_holds_a_reviewers_line_to(db):
    """The same mistakes in the demo's three-way schema (a quote that is not in its passage,
    evidence from a passage the task does not show, severity on a supported claim) get the
    same words from both imports: one check, shared."""
    project = import_fixture("demo.jsonl", "demo-gold")
    add_member(project=project, username="alice", role="reviewer")
    project = open_labelling(project=project)
    line = json.loads((FIXTURES / "demo_labels.jsonl").read_text().splitlines()[0])
    claim = line["claims"][0]
    claim.update(evidence_quote="words no passage holds", severity="major")
    line["claims"][1]["evidence_ids"] = ["not-shown"]
    with pytest.raises(BundleInvalid) as as_labels:
        import_labels(lines=encoded([{**line, "reviewer": "alice"}]), project=project)
    with pytest.raises(BundleInvalid) as as_gold:
        _import(project, encoded([{k: v for k, v in line.items() if k != "reviewer"}]))
    assert [str(e) for e in as_gold.value.errors] == [str(e) for e in as_labels.value.errors]
    assert len(as_gold.value.errors) == 4  # the moved evidence orphans its quote too


def test_gold_waits_for_labelling_to_open_and_needs_a_source(db):
    project = import_fixture("halu/bundle.jsonl", "halu-draft")
    with pytest.raises(BundleInvalid) as caught:
        _import(project, source=" ")
    assert [str(e) for e in caught.value.errors] == [
        "Labelling is not open: open it first so that the claims are locked.",
        "Name the source of this gold (a benchmark, an expert, a campaign).",
    ]


def test_the_command_prints_counts_and_every_error_by_line(halu, capsys):
    call_command("import_gold", str(GOLD), project="halu", source="halu-bench")
    out = capsys.readouterr().out
    assert f"Imported gold for {len(gold_lines())} answer(s)" in out
    assert "from 'halu-bench'" in out
    assert GoldImport.objects.get().file_name == "gold.jsonl"
    call_command("import_gold", str(GOLD), project="halu", source="halu-bench")
    assert f"{len(gold_lines())} unchanged" in capsys.readouterr().out


def test_the_command_refuses_a_bad_file_with_each_error_on_its_own_line(halu, tmp_path, capsys):
    path = tmp_path / "bad.jsonl"
    rows = gold_lines()
    path.write_bytes(
        b"".join(encoded([{**rows[0], "answer_id": "nope"}, {**rows[1], "answer_id": "nope"}]))
    )
    with pytest.raises(CommandError, match="2 problem"):
        call_command("import_gold", str(path), project="halu", source="halu-bench")
    err = capsys.readouterr().err
    assert "line 1: unknown answer_id 'nope'" in err
    assert "line 2: unknown answer_id 'nope'" in err
    assert not ImportedGold.objects.exists()
