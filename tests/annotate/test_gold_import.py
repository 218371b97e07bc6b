"""Gold from elsewhere (import_gold, SPEC "Gold from elsewhere"): one adjudicated label per
answer -- here fixtures/halu/gold.jsonl, shaped like a public single-annotator hallucination
benchmark (binary support only, no reviewer, no note, several models' summaries) -- checked
exactly as reviewers' labels are, all or nothing, and kept with the file's name and hash."""

from __future__ import annotations

import hashlib
import html
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotate.imports.gold_import import import_gold
from annotate.imports.label_import import import_labels
from annotate.imports.lines import BundleInvalid
from annotate.members.services import add_member
from annotate.models import GoldImport, ImportedClaimGold, ImportedGold
from annotate.projects.opening import open_labelling
from tests.conftest import FIXTURES, PASSWORD, import_fixture

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
    assert (
        "line 3: claims has no object with index 0: every claim of the answer needs its label"
        in messages
    )
    assert any(m.startswith("line 4: relevance is not labelled in this project") for m in messages)
    assert (
        'line 5: claims[0].support must be "supported" or "unsupported" (this project labels '
        'support on a binary scale), got "contradicted"' in messages
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


# --- Gold rows: exports ------------------------------------------------------------------------

SCHEMA = json.loads((FIXTURES.parent / "docs" / "gold-export.schema.json").read_text())


def _label_sets() -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in (HALU / "labels.jsonl").read_text().splitlines():
        answer_id = json.loads(line)["answer_id"]
        counts[answer_id] = counts.get(answer_id, 0) + 1
    return counts


@pytest.fixture
def mixed(halu):
    """The benchmark's summaries labelled by two annotators (most), one (a few) or none, and
    the benchmark's own gold on 24 of them: every combination of the two."""
    import_labels(lines=(HALU / "labels.jsonl").open("rb"), project=halu)
    _import(halu)
    return halu


def test_gold_from_import_alone_exports_claim_and_answer_rows_with_no_reviewer(halu):
    import jsonschema

    from annotate.gold.exports import gold_csv, gold_rows

    _import(halu)
    rows = list(gold_rows(halu))
    gold = {row["answer_id"]: row for row in gold_lines()}
    claims = [r for r in rows if r["item"] == "claim"]
    answers = [r for r in rows if r["item"] == "answer"]
    assert len(answers) == len(gold) and len(claims) == sum(len(g["claims"]) for g in gold.values())
    sha256 = hashlib.sha256(GOLD.read_bytes()).hexdigest()
    for row in rows:
        assert row["reviewer_a"] is None and row["reviewer_b"] is None
        # Every field imported (an answer row's support_binary, from its imported claims).
        assert set(row["gold_source"].values()) == {"imported"}
        assert row["decided"] is True
        assert row["imported"]["source"] == "halu-bench"
        assert (row["imported"]["file_name"], row["imported"]["sha256"]) == ("gold.jsonl", sha256)
    assert {r["label_sets"] for r in answers} == {0}
    for row in answers:  # an answer row's support_binary is its claims', as reviewers' are
        supports = gold[row["answer_id"]]["claims"]
        unsupported = any(c["support"] == "unsupported" for c in supports)
        assert row["gold"] == {"support_binary": "unsupported" if unsupported else "supported"}
    for row in claims:
        expected = gold[row["answer_id"]]["claims"][row["claim_index"]]["support"]
        assert row["gold"] == {"support": expected, "support_binary": expected}
        assert row["label"] == int(expected == "supported")
        assert row["imported"]["labels"] == {"support": expected, "note": ""}
    validator = jsonschema.Draft202012Validator(SCHEMA)
    assert all(validator.is_valid(json.loads(json.dumps(row))) for row in rows)
    header, *lines = "".join(gold_csv(iter(rows))).splitlines()
    assert "imported" in header.split(",") and len(lines) == len(rows)


def test_where_reviewers_labelled_too_their_gold_stands_and_the_row_keeps_both(mixed):
    from annotate.gold.exports import gold_rows

    sets = _label_sets()
    gold = {row["answer_id"] for row in gold_lines()}
    answers = {r["answer_id"]: r for r in gold_rows(mixed, item="answer")}
    claims = [r for r in gold_rows(mixed, item="claim")]
    # Every doubly-labelled answer and every answer with imported gold, nothing else.
    assert set(answers) == {a for a, n in sets.items() if n >= 2} | gold
    for answer_id, row in answers.items():
        assert row["label_sets"] == sets.get(answer_id, 0)
        assert ("imported" in row) == (answer_id in gold)
        assert (row["reviewer_a"] is None) == (sets.get(answer_id, 0) < 2)
    by_answer: dict[str, list[dict]] = {}
    for row in claims:
        by_answer.setdefault(row["answer_id"], []).append(row)
    both = [a for a in gold if sets.get(a, 0) == 2]
    disputed = "src-02/gpt-x"  # both annotators and the benchmark: the annotators disagree
    assert disputed in both
    for answer_id in both:
        for row in by_answer[answer_id]:
            assert "imported" not in row["gold_source"].values()
            assert row["reviewer_a"]["reviewer"] and row["imported"]["source"] == "halu-bench"
    # A claim the annotators dispute stays pending for a lead, imported gold or not.
    assert any(r["gold_source"]["support"] == "pending" for r in by_answer[disputed])
    assert all(
        not r["decided"] for r in by_answer[disputed] if r["gold_source"]["support"] == "pending"
    )
    # One annotator and the benchmark: the benchmark's gold, the one label set counted.
    single = "src-06/mistral-z"
    assert sets[single] == 1 and answers[single]["label_sets"] == 1
    assert all(set(r["gold_source"].values()) == {"imported"} for r in by_answer[single])
    # Neither: no row.
    assert "src-01/qwen-w" not in answers and "src-01/qwen-w" not in by_answer


def test_the_export_id_moves_when_gold_is_imported_and_stays_when_nothing_changes(mixed, halu):
    from annotate.gold.exports import gold_fingerprint

    before = gold_fingerprint(mixed)
    assert _import(mixed).unchanged == len(gold_lines())
    assert gold_fingerprint(mixed) == before
    rows = gold_lines()
    rows[0]["claims"][0]["support"] = "unsupported"
    _import(mixed, encoded(rows), replace=True, file_name="gold-v2.jsonl")
    assert gold_fingerprint(mixed)[0] != before[0]


def test_a_project_without_imported_gold_exports_the_same_bytes_as_before(db):
    """No `imported` key on rows without imported gold: their content hashes (and release
    diffs) are as they were."""
    from annotate.gold.exports import gold_rows
    from tests.conftest import labelled_demo

    rows = list(gold_rows(labelled_demo()))
    assert rows and not any("imported" in row for row in rows)


def test_the_export_reads_imported_gold_in_a_fixed_number_of_queries_per_chunk(
    mixed, monkeypatch, django_assert_num_queries
):
    """Two queries a chunk for imported gold (its answers', then its claims'), whatever the
    chunk's size: no query per answer or claim."""
    from annotate.gold import exports
    from annotate.gold.exports import gold_rows

    whole = list(gold_rows(mixed))
    monkeypatch.setattr(exports, "GOLD_CHUNK", 5)
    answers = len({row["answer_id"] for row in whole})
    chunks = -(-answers // 5)
    # fingerprint (6: its calibration samples' one), pseudonyms, human kappas (2), the answers
    # chosen (2), then per chunk: assignments, claim labels, decisions, imported answers and
    # claims, and the chunk's retrieved passages, answers, citations and claims
    with django_assert_num_queries(11 + 9 * chunks):
        rows = list(gold_rows(mixed))
    assert rows == whole


def test_every_field_of_a_three_way_schema_is_imported_as_it_was_labelled(db):
    """An earlier campaign's labels (the demo's first reviewer's, without `reviewer`) as the
    only gold of a project with every field on: relevance, abstention, failure labels,
    severity, evidence and citations are gold as imported, and the rows validate."""
    import jsonschema

    from annotate.gold.exports import gold_rows

    project = import_fixture("demo.jsonl", "campaign")
    project = open_labelling(project=project)
    lines = [json.loads(line) for line in (FIXTURES / "demo_labels.jsonl").read_text().splitlines()]
    earlier = [
        {k: v for k, v in line.items() if k != "reviewer"}
        for line in lines
        if line["reviewer"] == "alice"
    ]
    result = _import(project, encoded(earlier), source="campaign-2025")
    assert result.created == len(earlier)
    rows = {(r["answer_id"], r.get("claim_index")): r for r in gold_rows(project)}
    validator = jsonschema.Draft202012Validator(SCHEMA)
    assert all(validator.is_valid(json.loads(json.dumps(row))) for row in rows.values())
    for line in earlier:
        answer = rows[(line["answer_id"], None)]
        supports = [claim["support"] for claim in line["claims"]]
        assert answer["gold"] == {
            "relevance": line["relevance"],
            "abstention": line["abstention"] or "",
            "failure_labels": sorted(line["failure_labels"]),
            # from its claims: unsupported once one of them is
            "support_binary": "supported"
            if all(s == "supported" for s in supports)
            else "unsupported",
        }
        assert set(answer["gold_source"].values()) == {"imported"}
        for claim in line["claims"]:
            row = rows[(line["answer_id"], claim["index"])]
            assert row["gold"]["support"] == claim["support"]
            assert row["gold"]["severity"] == claim["severity"]
            assert row["gold"]["evidence_ids"] == sorted(claim["evidence_ids"])
            assert row["gold"]["evidence_quote"] == claim["evidence_quote"]
            # As given, with unresolvable citations set to citation_not_found (as a reviewer's).
            assert _found(row["gold"]["citations"]) == _found(claim["citations"])
            assert row["imported"]["labels"]["evidence_quote"] == claim["evidence_quote"]
            assert set(row["gold_source"]) == {
                "support",
                "support_binary",
                "severity",
                "requires_evidence",
                "citations",
                "evidence",
            }


def _found(verdicts: dict) -> dict:
    return {cited: v for cited, v in verdicts.items() if v != "citation_not_found"}


# --- Faces: the Upload page, the API, the Gold page, the data version ---------------------------


def _table_row(body: str, table_id: str, header: str) -> list[str]:
    """The cells of a table's row, by the text of its row header, as rendered."""
    import re

    table = body[body.index(f'id="{table_id}"') :]
    table = table[: table.index("</table>")]
    for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S):
        cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S)
        if cells and cells[0].replace("&nbsp;", "").strip() == header:
            return [c.strip() for c in cells[1:]]
    raise AssertionError(f"no row {header!r} in #{table_id}")


@pytest.fixture
def led(halu, lead, client):
    add_member(project=halu, username=lead.username, role="lead")
    client.login(username=lead.username, password=PASSWORD)
    return halu


def test_the_upload_page_imports_gold_as_a_job_and_the_gold_page_counts_it(led, client):
    from jobs.models import Job

    with GOLD.open("rb") as stream:
        response = client.post(
            "/p/halu/upload/",
            {"format": "gold", "source": "halu-bench", "file": stream},
            follow=True,
        )
    assert response.redirect_chain[-1][0] == "/p/halu/gold/"
    body = html.unescape(response.content.decode())
    assert "Gold: 24 answer(s) given imported gold from 'halu-bench'" in body
    job = Job.objects.get()
    assert (job.kind, job.file_name, job.result["created"]) == ("gold_import", "gold.jsonl", 24)
    assert job.result["sha256"] == hashlib.sha256(GOLD.read_bytes()).hexdigest()
    # The gold page: agreed, adjudicated, pending, imported, as rendered.
    header = _table_row(body, "gold-counts", "Rows")
    claims = dict(zip(header, _table_row(body, "gold-counts", "Claims"), strict=True))
    answers = dict(zip(header, _table_row(body, "gold-counts", "Answers"), strict=True))
    assert (claims["imported"], answers["imported"]) == ("67", "24")
    assert (claims["agreed"], claims["pending"]) == ("0", "0")
    split = {
        name: dict(zip(header, _table_row(body, "gold-counts", f"of which {name}"), strict=True))
        for name in ("judge_dev", "judge_test")
    }
    assert int(split["judge_dev"]["imported"]) + int(split["judge_test"]["imported"]) == 67
    assert "Imported from 'halu-bench'" in body


def test_a_refused_gold_file_comes_back_with_every_problem_by_line(led, client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    rows = gold_lines()
    bad = b"".join(
        encoded([rows[0], {**rows[1], "answer_id": "nope"}, {**rows[2], "reviewer": "x"}])
    )
    response = client.post(
        "/p/halu/upload/",
        {"format": "gold", "source": "halu-bench", "file": SimpleUploadedFile("g.jsonl", bad)},
    )
    assert response.status_code == 400
    body = html.unescape(response.content.decode())
    assert "line 2: unknown answer_id 'nope'" in body
    assert "line 3: 'reviewer' has no place in gold from elsewhere" in body
    assert not ImportedGold.objects.exists()
    nameless = client.post(
        "/p/halu/upload/",
        {"format": "gold", "file": SimpleUploadedFile("g.jsonl", GOLD.read_bytes())},
    )
    assert nameless.status_code == 400
    assert "Name where this gold comes from." in nameless.content.decode()
    assert not ImportedGold.objects.exists()


def test_the_api_imports_gold_as_a_job(led, lead):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.api import API, JSONL, finished_job, token_client

    api = token_client(lead)
    url = f"{API}/projects/halu/gold-imports/"
    upload = SimpleUploadedFile("bench.jsonl", GOLD.read_bytes(), content_type=JSONL)
    job = finished_job(api, api.post(url, {"file": upload, "source": "halu-bench"}))
    assert job["status"] == "succeeded" and job["kind"] == "gold_import"
    assert job["result"]["created"] == 24
    assert GoldImport.objects.get().file_name == "bench.jsonl"
    # A raw body names its source in the query string, and without one is refused.
    refused = api.post(url, GOLD.read_bytes(), content_type=JSONL)
    assert refused.status_code == 400 and "source" in json.dumps(refused.json())
    again = finished_job(
        api, api.post(f"{url}?source=halu-bench", GOLD.read_bytes(), content_type=JSONL)
    )
    assert again["status"] == "succeeded" and again["result"]["unchanged"] == 24
    rows = gold_lines()
    bad = b"".join(encoded([{**rows[0], "answer_id": "nope"}]))
    failed = finished_job(api, api.post(f"{url}?source=x", bad, content_type=JSONL))
    assert failed["status"] == "failed" and failed["errors"] == ["line 1: unknown answer_id 'nope'"]


def test_importing_gold_changes_the_revision_and_every_report_with_it(led, client):
    """Reports are kept per project revision (annotate.common.computed): gold imported after a
    report was computed makes it recompute, here the agreement page's imported count."""
    from annotate.common.computed import revisions

    url = "/p/halu/agreement/"
    before = client.get(url).content.decode()
    assert "imported gold" not in before
    version = revisions(led)
    _import(led)
    assert revisions(led) != version
    after = html.unescape(client.get(url).content.decode())
    assert "24 answers (67 claims) have imported gold from 'halu-bench'" in after
