"""Importing a label file again: every line whose reviewer already submitted those very
labels is 'unchanged' and nothing is written; a line with other labels is refused by line.
The comparison reads the latest revisions together, not one query per line. And what any
import reads (the answers its file names) and writes (in bulk, audited)."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotate.imports.label_import import import_labels
from annotate.imports.lines import BundleInvalid
from annotate.models import Answer, Assignment, LabelRevision
from tests.conftest import FIXTURES, import_fixture, labelled_demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled():
    return labelled_demo()


def test_the_same_file_again_is_unchanged_in_a_fixed_number_of_queries(labelled):
    lines = (FIXTURES / "demo_labels.jsonl").read_bytes().splitlines()
    revisions = LabelRevision.objects.count()
    with CaptureQueriesContext(connection) as queries:
        result = import_labels(lines=lines, project=labelled)
    assert (result.created, result.unchanged) == (0, len(lines))
    assert LabelRevision.objects.count() == revisions
    assert len(queries) < 20, len(queries)  # 80 lines: one query per line was 80 more


def test_other_labels_for_a_held_answer_are_refused_by_line(labelled):
    lines = (FIXTURES / "demo_labels.jsonl").read_bytes().splitlines()
    first = json.loads(lines[0])
    first["relevance"] = 0 if first.get("relevance") else 1
    changed = [json.dumps(first).encode(), *lines[1:]]
    with pytest.raises(BundleInvalid) as caught:
        import_labels(lines=changed, project=labelled)
    assert [str(e) for e in caught.value.errors] == [
        f"line 1: {first['reviewer']} already has labels for this answer"
    ]


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"colour": "red"}, "colour"),
        ({"note": 5}, "note"),
        ({"relevance": "2"}, "relevance"),
        ({"claims.0": {"confidence": 0.9}}, "confidence"),
        ({"claims.0": {"requires_evidence": "yes"}}, "requires_evidence"),
    ],
)
def test_a_line_that_matches_the_stored_labels_is_still_checked_in_full(labelled, change, problem):
    """What a line gets wrong is left out of what it is compared with, so a wrong line can
    match the stored labels: it is refused all the same, as on a first import."""
    lines = (FIXTURES / "demo_labels.jsonl").read_bytes().splitlines()
    first = json.loads(lines[0])
    for key, value in change.items():
        if key == "claims.0":
            first["claims"][0].update(value)
        else:
            first[key] = value
    with pytest.raises(BundleInvalid) as caught:
        import_labels(lines=[json.dumps(first).encode(), *lines[1:]], project=labelled)
    messages = [str(e) for e in caught.value.errors]
    assert all(m.startswith("line 1: ") for m in messages)
    assert any(problem in m for m in messages), messages


# --- What an import reads and writes -----------------------------------------------------


def _opened_demo(slug: str):
    from annotate.members.services import add_member
    from annotate.projects.opening import open_labelling

    project = import_fixture("demo.jsonl", slug)
    for name in ("alice", "bob"):
        add_member(project=project, username=name, role="reviewer")
    return open_labelling(project=project)


def test_an_import_reads_only_the_answers_its_file_names():
    """A label file for two answers reads those two answers' claims, citations and passages
    and the assignments on them -- not the other 58 answers of the project."""
    project = _opened_demo("reads")
    lines = (FIXTURES / "demo_labels.jsonl").read_bytes().splitlines()[:2]
    named = {json.loads(line)["answer_id"] for line in lines}
    pks = sorted(
        Answer.objects.filter(project=project, answer_id__in=named).values_list("pk", flat=True)
    )
    with CaptureQueriesContext(connection) as queries:
        import_labels(lines=lines, project=project)
    reads = [q["sql"] for q in queries if q["sql"].startswith("SELECT")]
    for table in ("annotate_claim", "annotate_retrievedpassage", "annotate_assignment"):
        first = next(sql for sql in reads if f'FROM "{table}" WHERE' in sql)
        in_list = re.search(r'"answer_id" IN \(([^)]*)\)', first)
        assert in_list, first
        assert sorted(int(x) for x in in_list.group(1).split(", ")) == pks, first
    # the answers themselves: by the file's ids, within the project
    answers = next(sql for sql in reads if 'FROM "annotate_answer" WHERE' in sql)
    assert '"annotate_answer"."answer_id" IN' in answers


def test_an_import_writes_in_a_number_of_queries_that_grows_with_batches_not_lines():
    lines = (FIXTURES / "demo_labels.jsonl").read_bytes().splitlines()
    counts = []
    for slug, some in (("two", lines[:2]), ("all", lines)):
        project = _opened_demo(slug)
        with CaptureQueriesContext(connection) as queries:
            result = import_labels(lines=some, project=project)
        assert result.created == len(some)
        counts.append(len(queries))
    # 78 more lines: a batch more here and there (SQLite's cap on a query's parameters
    # splits bulk inserts), never a query per line
    assert counts[1] - counts[0] <= 4, counts


def test_imported_label_sets_are_whole_and_audited():
    """What the bulk writes leave: each line's assignment submitted at one time, with its
    audit record, its claim labels as the file gives them, and revision 1 from the import."""
    project = _opened_demo("whole")
    lines = (FIXTURES / "demo_labels.jsonl").read_bytes().splitlines()
    before = timezone.now()
    import_labels(lines=lines, project=project)
    assignments = Assignment.objects.filter(project=project)
    assert assignments.count() == len(lines)
    assert {a.status for a in assignments} == {"submitted"}
    assert len({(a.taken_at, a.touched_at, a.submitted_at) for a in assignments}) == 1
    for line in map(json.loads, lines):
        assignment = assignments.get(
            answer__answer_id=line["answer_id"], reviewer__username=line["reviewer"]
        )
        [record] = assignment.history.all()
        assert (record.history_type, record.status, record.revision) == ("+", "submitted", 1)
        [revision] = assignment.revisions.all()
        assert (revision.number, revision.source) == (1, "import")
        assert before <= revision.created_at <= timezone.now()
        stored = {
            label.claim.ordinal: label for label in assignment.claim_labels.select_related("claim")
        }
        assert sorted(stored) == sorted(c["index"] for c in line["claims"])
        for given in line["claims"]:
            label = stored[given["index"]]
            assert label.support == given["support"]
            assert label.evidence_ids == given.get("evidence_ids", [])
            assert label.evidence_quote == given.get("evidence_quote", "")
            for cited, verdict in given.get("citations", {}).items():
                assert label.citations[cited] == verdict
        assert [c["index"] for c in revision.labels["claims"]] == sorted(stored)


def test_an_import_says_when_its_checking_is_done_and_the_writing_starts():
    """A worker's job shows the stage: the progress callback hears ("writing", 0) once every
    line is checked and before anything is written; a refused file never gets there."""
    project = _opened_demo("progress")
    lines = (FIXTURES / "demo_labels.jsonl").read_bytes().splitlines()
    heard = []

    def progress(step, rows):
        heard.append((step, rows, Assignment.objects.filter(project=project).count()))

    with pytest.raises(BundleInvalid):
        import_labels(lines=[b'{"answer_id": "nope"}'], project=project, progress=progress)
    assert heard == []
    import_labels(lines=lines, project=project, progress=progress)
    assert heard == [("writing", 0, 0)]


def test_a_file_in_reviewer_order_is_checked_across_its_chunks(monkeypatch):
    """Every line of one reviewer, then every line of the other: each answer is named in two
    chunks far apart, and read once in each. Holders and the reviewer's own label sets are
    still counted across the chunks: a line naming an answer again, or a third reviewer on
    an answer the file already gives two, is refused by line."""
    from annotate.imports import label_import
    from annotate.members.services import add_member

    monkeypatch.setattr(label_import, "LINE_CHUNK", 7)
    lines = (FIXTURES / "demo_labels.jsonl").read_bytes().splitlines()
    by_reviewer = sorted(lines, key=lambda line: json.loads(line)["reviewer"])
    first = json.loads(by_reviewer[0])
    again = json.dumps({**first, "note": "again"}).encode()
    third = json.dumps({**first, "reviewer": "carol"}).encode()

    project = _opened_demo("chunks")
    add_member(project=project, username="carol", role="reviewer")
    with pytest.raises(BundleInvalid) as caught:
        import_labels(lines=[*by_reviewer, again, third], project=project)
    assert [str(e) for e in caught.value.errors] == [
        "line 81: alice labels this answer twice (first on line 1)",
        "line 81: this answer already has 2 reviewer(s), the project's overlap",
        "line 82: this answer already has 3 reviewer(s), the project's overlap",
    ]
    assert not Assignment.objects.filter(project=project).exclude(status="released").exists()

    result = import_labels(lines=by_reviewer, project=project)
    assert result.created == len(lines)
    submitted = Assignment.objects.filter(project=project, status="submitted")
    assert submitted.count() == len(lines)
    assert set(submitted.values_list("answer__answer_id", "reviewer__username")) == {
        (json.loads(line)["answer_id"], json.loads(line)["reviewer"]) for line in lines
    }
    full = Answer.objects.filter(project=project, full=True)
    assert full.count() == len({json.loads(line)["answer_id"] for line in lines})


def test_an_import_holds_none_of_the_answers_it_checked_while_it_writes(monkeypatch):
    """The answers a file names are read a chunk at a time with their claims, citations and
    passages, and let go after the chunk: none is alive when the label sets are written.
    Kept for the whole file (prefetched rows tie each claim back to its answer, and the
    import pauses the cycle collector), 10,000 label sets took the import to 486 MB."""
    from annotate.imports import label_import
    from annotate.models import Citation, Claim, RetrievedPassage
    from tests.annotate.test_paused_gc import alive_at

    monkeypatch.setattr(label_import, "LINE_CHUNK", 7)
    project = _opened_demo("held")
    lines = (FIXTURES / "demo_labels.jsonl").read_bytes().splitlines()
    kinds = (Answer, Claim, Citation, RetrievedPassage)
    before, seen = alive_at(monkeypatch, label_import, "_write", kinds)
    assert import_labels(lines=lines, project=project).created == len(lines)
    assert seen == [before]
