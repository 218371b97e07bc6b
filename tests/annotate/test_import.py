"""Bundle import: every rule of SPEC.md rejects its bad input with the right line number and
writes nothing; good input round-trips; re-imports are idempotent."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from annotate.imports.bundle_export import bundle_rows
from annotate.imports.bundle_import import import_bundle
from annotate.imports.lines import BundleInvalid
from annotate.models import (
    Answer,
    Case,
    Citation,
    Claim,
    Judgment,
    Membership,
    Passage,
    Project,
    Role,
    Variant,
)
from tests.api import API, finished_job, token_client
from tests.conftest import FIXTURES

SMALL = (FIXTURES / "small.jsonl").read_text().splitlines()


def lines_of(*, edit: dict[int, dict | str | None] | None = None, extra=()) -> list[str]:
    """small.jsonl with some 1-based lines replaced (a dict is merged into the object, a str
    replaces the line, None blanks it), plus extra lines appended."""
    out = []
    for number, line in enumerate(SMALL, start=1):
        change = (edit or {}).get(number, ...)
        if change is ...:
            out.append(line)
        elif change is None:
            out.append("")
        elif isinstance(change, str):
            out.append(change)
        else:
            obj = json.loads(line)
            obj.update(change)
            out.append(json.dumps({k: v for k, v in obj.items() if v is not DROP}))
    appended = [change for number, change in sorted((edit or {}).items()) if number > len(SMALL)]
    return out + [json.dumps(x) if isinstance(x, dict) else x for x in [*appended, *extra]]


DROP = object()


def errors_for(lines, slug="t", **kwargs) -> list[str]:
    with pytest.raises(BundleInvalid) as caught:
        import_bundle(lines=lines, project_slug=slug, **kwargs)
    return [str(e) for e in caught.value.errors]


def nothing_written():
    return not any(
        m.objects.exists() for m in (Project, Passage, Case, Answer, Claim, Variant, Judgment)
    )


@pytest.mark.django_db
def test_valid_bundle_imports_everything_and_proposes_claims_where_missing():
    result = import_bundle(lines=SMALL, project_slug="t")
    project = result.project
    assert (project.corpus_version, project.name) == ("course-notes-v1", "Small sample")
    assert project.passages.count() == 3 and project.cases.count() == 3
    assert project.answers.count() == 4 and project.variants.count() == 2  # verifier is bare
    assert Variant.objects.get(name="verifier").settings == {}
    proposed = Claim.objects.filter(answer__answer_id="a2-deadline/verifier", proposed=True)
    assert [c.text for c in proposed] == [
        "Assignment 2 is due on 14 March.",
        "Late work is accepted within 48 hours with a penalty.",
    ]
    assert result.proposed_claims == 2


@pytest.mark.django_db
def test_unresolvable_citation_is_kept_and_marked_unresolved():
    import_bundle(lines=SMALL, project_slug="t")
    missing = Citation.objects.get(cited_id="notes-99")
    assert missing.passage is None and not missing.resolved
    assert Citation.objects.get(
        cited_id="notes-17", claim__answer__answer_id="a2-deadline/baseline"
    ).resolved


@pytest.mark.django_db
@pytest.mark.parametrize(
    "edit, line, message",
    [
        (
            {17: {"type": "passage", "passage_id": "notes-17", "text": "again"}},
            17,
            "duplicate passage_id 'notes-17' (first on line 3)",
        ),
        (
            {6: {"evidence": [{"passage_id": "notes-17", "quote": "no penalty at all"}]}},
            6,
            "evidence[0]: quote 'no penalty at all' does not occur in passage 'notes-17'",
        ),
        (
            {6: {"evidence": [{"passage_id": "nope", "quote": "x"}]}},
            6,
            "evidence[0]: unknown passage_id 'nope'",
        ),
        ({6: {"required_facts": "none"}}, 6, "'required_facts' must be a list of strings"),
        (
            {
                9: {
                    "claims": [
                        {"text": "ssignment 2 is due on 14 March.", "start": 0, "end": 32},
                    ]
                }
            },
            9,
            "claims[0]: 'text' 'ssignment 2 is due on 14 March.' differs from the answer's "
            "characters [0, 32), which are 'Assignment 2 is due on 14 March.'; the text occurs "
            "at [1, 32) (offsets count Unicode code points, as Python indexes a str)",
        ),
        (
            {9: {"model": "acme/gen-small@2026-09-01"}},
            9,
            "unknown field 'model' in answer: 'model' belongs on a variant line, e.g. "
            '\'{"type": "variant", "name": "baseline", "model": "acme/gen-small@2026-09-01"}\' '
            "(allowed: abstained, answer_id, case_id, claims, elapsed_ms, request_cost, "
            "retrieved, sample, text, variant)",
        ),
        (
            {1: {"label_schema": {"support": "five_way"}}},
            1,
            "label_schema 'support' must be one of three_way, binary, got 'five_way'",
        ),
        ({6: {"answerable": "yes"}}, 6, "'answerable' must be true or false, got a string"),
        ({6: {"split": "test"}}, 6, "'split' must be one of dev, heldout, got 'test'"),
        (
            {6: {"corpus_version": "v2"}},
            6,
            "case corpus_version 'v2' does not match the bundle's 'course-notes-v1'",
        ),
        ({9: {"case_id": "nope"}}, 9, "unknown case_id 'nope'"),
        (
            {9: {"retrieved": [{"passage_id": "notes-17", "rank": 0, "in_prompt": True}]}},
            9,
            "retrieved[0]: 'rank' must be ≥ 1, got 0",
        ),
        (
            {
                9: {
                    "retrieved": [
                        {"passage_id": "notes-17", "rank": 1},
                        {"passage_id": "notes-18", "rank": 1},
                    ]
                }
            },
            9,
            "retrieved[1]: rank 1 appears twice in this answer's ranking",
        ),
        (
            {
                9: {
                    "retrieved": [
                        {"passage_id": "notes-17", "rank": 1},
                        {"passage_id": "notes-17", "rank": 2},
                    ]
                }
            },
            9,
            "retrieved[1]: passage 'notes-17' appears twice in this answer's ranking",
        ),
        (
            {9: {"retrieved": [{"passage_id": "ghost", "rank": 1}]}},
            9,
            "retrieved[0]: unknown passage_id 'ghost'",
        ),
        (
            {9: {"claims": [{"text": "x", "start": 0, "end": 500, "citations": []}]}},
            9,
            "claims[0]: span [0, 500) lies outside the answer text (80 characters)",
        ),
        (
            {9: {"claims": [{"text": "x", "start": 10, "end": 5, "citations": []}]}},
            9,
            "claims[0]: span [10, 5) is empty or reversed",
        ),
        (
            {
                9: {
                    "claims": [
                        {"text": "Assignment 2 is due", "start": 0, "end": 19},
                        {"text": "is due on 14 March.", "start": 13, "end": 32},
                    ]
                }
            },
            9,
            "claims[1]: span [13, 32) overlaps or precedes the previous claim (which ends at 19); "
            "claims must be in order and not overlap",
        ),
        ({9: {"sample": -1}}, 9, "'sample' must be ≥ 0, got -1"),
        ({9: {"elapsed_ms": "fast"}}, 9, "'elapsed_ms' must be a number, got a string"),
        (
            {10: {"answer_id": "a2-deadline/baseline"}},
            10,
            "duplicate answer_id 'a2-deadline/baseline' (first on line 9)",
        ),
        (
            {10: {"variant": "baseline"}},
            10,
            "case 'a2-deadline', variant 'baseline', sample 0 already answered on line 9",
        ),
        ({13: {"grade": -1}}, 13, "'grade' must be ≥ 0, got -1"),
        ({13: {"passage_id": "ghost"}}, 13, "unknown passage_id 'ghost'"),
        (
            {14: {"passage_id": "notes-17"}},
            14,
            "duplicate judgment for case 'a2-deadline' and passage 'notes-17' (first on line 13)",
        ),
        (
            {3: {"colour": "blue"}},
            3,
            "unknown field 'colour' in passage "
            "(allowed: document, location, passage_id, text, title)",
        ),
        ({3: {"text": DROP}}, 3, "missing required field 'text'"),
        (
            {17: "{not json"},
            17,
            "not valid JSON (Expecting property name enclosed in double quotes at column 2)",
        ),
        (
            {17: '{"type": "passage", "text": "a\tb"}'},  # a raw tab inside a string
            17,
            "not valid JSON (Invalid control character at column 31)",
        ),
        ({17: "[1, 2]"}, 17, "expected a JSON object, got a list"),
        (
            {17: '{"type": "chunk"}'},
            17,
            "type 'chunk': each line needs a type, "
            "one of answer, bundle, case, judgment, passage, variant",
        ),
    ],
)
def test_each_rule_rejects_bad_input_with_its_line_and_writes_nothing(edit, line, message):
    assert errors_for(lines_of(edit=edit)) == [f"line {line}: {message}"]
    assert nothing_written()


@pytest.mark.django_db
def test_several_defects_are_all_reported_at_once_in_line_order():
    bad = lines_of(
        edit={
            3: {"text": DROP},
            6: {"evidence": [{"passage_id": "notes-18", "quote": "invented"}]},
            12: {"retrieved": [{"passage_id": "lab-note:p1", "rank": 0}]},
            16: {"grade": "high"},
            17: "this is not json",
        },
        extra=[
            {"type": "answer", "answer_id": "x", "case_id": "ghost", "variant": "v", "text": "t"}
        ],
    )
    assert errors_for(bad) == [
        "line 3: missing required field 'text'",
        "line 6: evidence[0]: quote 'invented' does not occur in passage 'notes-18'",
        "line 12: retrieved[0]: 'rank' must be ≥ 1, got 0",
        "line 16: 'grade' must be an integer, got a string",
        "line 17: not valid JSON (Expecting value at column 1)",
        "line 18: unknown case_id 'ghost'",
    ]
    assert nothing_written()


@pytest.mark.django_db
def test_a_file_that_is_not_jsonl_says_so_first():
    with pytest.raises(BundleInvalid) as caught:
        import_bundle(lines=["hello", "world"], project_slug="not-jsonl")
    assert [str(e) for e in caught.value.errors][:2] == [
        "line 1: not valid JSON (Expecting value at column 1)",
        'line 1: no corpus_version: start the file with {"type": "bundle", '
        '"corpus_version": "...", "name": "..."}',
    ]


@pytest.mark.django_db
def test_bundle_header_after_content_and_non_utf8_lines_are_errors():
    lines = [line.encode() for line in SMALL] + [
        b'{"type": "bundle", "corpus_version": "course-notes-v1"}',
        b'{"type": "passage", "passage_id": "x", "text": "caf\xe9"}',
    ]
    assert errors_for(lines) == [
        "line 17: the bundle header must be the first line",
        "line 18: not UTF-8 (invalid continuation byte at byte 51)",
    ]


@pytest.mark.django_db
def test_corpus_version_must_match_the_existing_project():
    import_bundle(lines=SMALL, project_slug="t")
    other = lines_of(edit={1: {"corpus_version": "course-notes-v2"}})
    assert errors_for(other) == [
        "line 1: corpus_version 'course-notes-v2' does not match the project's 'course-notes-v1'"
    ]


@pytest.mark.django_db
def test_reimporting_the_same_bundle_is_idempotent():
    import_bundle(lines=SMALL, project_slug="t")
    before = {m: m.objects.count() for m in (Passage, Case, Answer, Claim, Citation, Judgment)}
    result = import_bundle(lines=SMALL, project_slug="t")
    assert {m: m.objects.count() for m in before} == before
    assert result.counts["answer"]["unchanged"] == 4 and result.counts["answer"]["created"] == 0


@pytest.mark.django_db
def test_a_reimport_counts_the_claims_it_keeps_as_unchanged_not_none():
    import_bundle(lines=SMALL, project_slug="t")
    claims = Claim.objects.count()
    result = import_bundle(lines=SMALL, project_slug="t")
    assert claims > 0 and result.counts["claim"]["unchanged"] == claims
    assert f"claims: {claims} unchanged" in result.summary()
    # Claims of answers the file does not name are not this import's to count.
    part = import_bundle(lines=SMALL[:11], project_slug="t")  # not batch-premise/baseline
    named = Claim.objects.filter(answer__answer_id__in=_answer_ids(SMALL[:11])).count()
    assert part.counts["claim"]["unchanged"] == named < claims


def _answer_ids(lines) -> list[str]:
    return [obj["answer_id"] for obj in map(json.loads, lines) if obj.get("type") == "answer"]


@pytest.mark.django_db
def test_changed_content_is_an_error_unless_replace_is_asked_for():
    import_bundle(lines=SMALL, project_slug="t")
    changed = lines_of(edit={4: {"text": "Assignment 2 is worth 25% of the grade."}})
    assert errors_for(changed) == [
        "line 4: passage 'notes-18' already exists in this project with different content; "
        "import with replace to overwrite unlabelled items"
    ]
    import_bundle(lines=changed, project_slug="t", replace=True)
    assert Passage.objects.get(passage_id="notes-18").text.endswith("25% of the grade.")


@pytest.mark.django_db
def test_new_items_are_added_to_an_existing_project():
    import_bundle(lines=SMALL[:8], project_slug="t")
    result = import_bundle(lines=SMALL, project_slug="t")
    assert result.counts["answer"]["created"] == 4
    assert Answer.objects.count() == 4


def _export(project) -> list[dict]:
    return list(bundle_rows(project))


@pytest.mark.django_db
def test_export_then_import_into_a_new_project_reproduces_the_content():
    original = import_bundle(lines=SMALL, project_slug="t").project
    exported = [json.dumps(row) for row in _export(original)]
    copy = import_bundle(lines=exported, project_slug="copy").project
    assert _export(copy) == _export(original)
    # the exported file re-imports into its own project as "nothing changed"
    again = import_bundle(lines=exported, project_slug="copy")
    assert again.counts["answer"]["unchanged"] == 4


@pytest.mark.django_db
def test_the_export_reads_in_queries_that_do_not_grow_with_the_answers():
    """Per chunk of 500 answers, four queries of plain rows (answers, retrieved passages,
    claims, citations): 60 answers cost what 4 do."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = {}
    for slug, fixture in (("four", "small.jsonl"), ("sixty", "demo.jsonl")):
        with open(FIXTURES / fixture, "rb") as stream:
            project = import_bundle(lines=stream, project_slug=slug).project
        with CaptureQueriesContext(connection) as queries:
            rows = _export(project)
        assert sum(row["type"] == "answer" for row in rows) == project.answers.count()
        counts[slug] = len(queries)
    assert counts["four"] == counts["sixty"], counts


@pytest.mark.django_db
def test_command_prints_every_error_and_exits_non_zero(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines_of(edit={13: {"grade": -2}, 17: "oops"})))
    err = io.StringIO()
    with pytest.raises(CommandError, match="2 problem"):
        call_command("import_bundle", str(path), "--project", "t", stderr=err)
    assert "line 17: not valid JSON" in err.getvalue()
    assert "line 13: 'grade' must be ≥ 0, got -2" in err.getvalue()
    assert nothing_written()


@pytest.mark.django_db
def test_command_round_trip_through_files(tmp_path):
    out = io.StringIO()
    call_command("import_bundle", str(FIXTURES / "small.jsonl"), "--project", "t", stdout=out)
    assert "answers: 4 created" in out.getvalue()
    exported = tmp_path / "export.jsonl"
    call_command("export_bundle", "--project", "t", "--output", str(exported))
    call_command("import_bundle", str(exported), "--project", "copy", stdout=io.StringIO())
    assert Project.objects.get(slug="copy").answers.count() == 4


BINARY_SCHEMA = {"support": "binary", "claim_fields": [], "answer_fields": []}


@pytest.mark.django_db
def test_label_schema_comes_from_the_header_and_round_trips():
    project = import_bundle(
        lines=lines_of(edit={1: {"label_schema": BINARY_SCHEMA}}), project_slug="t"
    ).project
    assert project.schema.binary and project.label_schema == BINARY_SCHEMA
    header = _export(project)[0]
    assert header["label_schema"] == BINARY_SCHEMA
    # a bundle without a schema gets the default: everything on
    default = import_bundle(lines=SMALL, project_slug="d").project
    assert default.label_schema == {
        "support": "three_way",
        "claim_fields": ["severity", "requires_evidence", "evidence", "citations"],
        "answer_fields": ["relevance", "abstention", "failure_labels"],
    }


@pytest.mark.django_db
def test_label_schema_may_change_in_draft_and_is_locked_once_labelling_opens():
    from annotate.projects.opening import open_labelling

    project = import_bundle(lines=SMALL, project_slug="t").project
    binary = lines_of(edit={1: {"label_schema": BINARY_SCHEMA}})
    assert import_bundle(lines=binary, project_slug="t").project.schema.binary
    project.refresh_from_db()
    open_labelling(project=project)
    three_way = lines_of(edit={1: {"label_schema": {"support": "three_way"}}})
    errors = errors_for(three_way)
    assert len(errors) == 1 and errors[0].startswith("line 1: label_schema differs")
    assert "locked once labelling opens" in errors[0]
    project.refresh_from_db()
    assert project.label_schema == BINARY_SCHEMA
    # the same schema again is no change, so it imports
    import_bundle(lines=binary, project_slug="t")


@pytest.mark.django_db
def test_an_import_that_changes_the_label_schema_says_so_in_its_result(tmp_path):
    """Labels that the old schema accepted may now be refused (or the other way round): an
    import that changes the schema says what changed, never silently."""
    plain = import_bundle(lines=SMALL, project_slug="t")
    assert plain.label_schema_change is None and "label schema" not in plain.summary()

    binary = tmp_path / "binary.jsonl"
    binary.write_text("\n".join(lines_of(edit={1: {"label_schema": BINARY_SCHEMA}})) + "\n")
    out = io.StringIO()
    call_command("import_bundle", str(binary), "--project", "t", stdout=out)
    first_line = out.getvalue().splitlines()[0]
    assert first_line.endswith(
        "label schema changed: support three_way → binary; claim fields severity, "
        "requires_evidence, evidence, citations → none; answer fields relevance, abstention, "
        "failure_labels → none"
    )
    assert Project.objects.get(slug="t").schema.binary

    again = import_bundle(lines=binary.read_text().splitlines(), project_slug="t")
    assert again.label_schema_change is None  # the same schema: no change to speak of

    new = import_bundle(lines=binary.read_text().splitlines(), project_slug="n")
    assert new.summary().endswith(
        "label schema: support (binary); other claim fields: none; answer fields: none"
    )


@pytest.mark.django_db
def test_an_uploaded_bundle_that_changes_the_label_schema_says_so_on_the_page_and_the_api(
    client, lead
):
    project = import_bundle(lines=SMALL, project_slug="t").project
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    binary = "\n".join(lines_of(edit={1: {"label_schema": BINARY_SCHEMA}})).encode()
    client.force_login(lead)
    page = client.post("/p/t/upload/", {"file": SimpleUploadedFile("b.jsonl", binary)}, follow=True)
    said = " ".join(str(m) for m in page.context["messages"])
    assert "label schema changed: support three_way → binary;" in said

    api = token_client(lead)
    three_way = "\n".join(lines_of(edit={1: {"label_schema": {"support": "three_way"}}}))
    job = finished_job(
        api,
        api.post(
            f"{API}/projects/t/bundle/",
            {"file": SimpleUploadedFile("t.jsonl", three_way.encode())},
            format="multipart",
        ),
    )
    assert job["result"]["label_schema_change"] == {
        "from": BINARY_SCHEMA,
        "to": {
            "support": "three_way",
            "claim_fields": ["severity", "requires_evidence", "evidence", "citations"],
            "answer_fields": ["relevance", "abstention", "failure_labels"],
        },
    }
    assert "label schema changed: support binary → three_way;" in job["result"]["summary"]


@pytest.mark.django_db
def test_unknown_label_schema_fields_are_named_with_the_allowed_ones():
    schema = {"support": "binary", "claim_fields": ["severity", "mood"], "colour": 1}
    assert errors_for(lines_of(edit={1: {"label_schema": schema}})) == [
        "line 1: unknown key 'colour' in label_schema "
        "(allowed: support, claim_fields, answer_fields)",
        "line 1: label_schema 'claim_fields' has unknown field(s) 'mood' "
        "(allowed: severity, requires_evidence, evidence, citations)",
    ]
    assert nothing_written()


@pytest.mark.django_db
def test_cases_from_other_tools_need_no_facts_or_evidence_and_keep_their_reference():
    plain = {
        "type": "case",
        "case_id": "plain",
        "question": "Summarise the article.",
        "answerable": True,
        "adversarial": False,
        "reference": "A reference summary.",
    }
    project = import_bundle(lines=[*SMALL, json.dumps(plain)], project_slug="t").project
    case = project.cases.get(case_id="plain")
    assert (case.required_facts, case.reference, case.evidence.count()) == (
        [],
        "A reference summary.",
        0,
    )
    exported = next(r for r in _export(project) if r.get("case_id") == "plain")
    assert exported["reference"] == "A reference summary." and exported["evidence"] == []
    # cases without a reference export no key, so bundles from before `reference` keep
    # their content hash and re-import as unchanged
    assert "reference" not in next(r for r in _export(project) if r.get("case_id") == "a2-deadline")
    again = import_bundle(lines=[*SMALL, json.dumps(plain)], project_slug="t")
    assert again.counts["case"]["unchanged"] == 4


@pytest.mark.django_db
def test_identical_messages_on_many_lines_are_grouped_for_people():
    extra = [{"type": "variant", "name": f"v{i}", "mood": "calm"} for i in range(6)]
    with pytest.raises(BundleInvalid) as caught:
        import_bundle(lines=lines_of(extra=extra), project_slug="t")
    assert len(caught.value.errors) == 6
    assert caught.value.grouped() == [
        "lines 17, 18, 19 and 3 more: unknown field 'mood' in variant "
        "(allowed: description, model, name, settings)"
    ]
    with pytest.raises(BundleInvalid) as caught:
        import_bundle(lines=lines_of(extra=extra[:2]), project_slug="t")
    assert caught.value.grouped() == [
        "lines 17 and 18: unknown field 'mood' in variant "
        "(allowed: description, model, name, settings)"
    ]


@pytest.mark.django_db
def test_a_replace_lists_what_it_would_delete_and_waits_for_a_confirmation(tmp_path):
    """Issue #15: a replace re-import of unlabelled answers deleted their judge verdicts
    without a word. It now lists the answers, their claims and the verdicts, writes nothing,
    and goes on only when confirmed."""
    from annotate.imports.bundle_plan import DeletionsNotConfirmed
    from evaluation.judges.runs import import_judge_run
    from evaluation.models import Verdict

    project = import_bundle(lines=SMALL, project_slug="t").project
    run = [
        {"type": "run", "judge": "j", "model": "m/x", "prompt": "p"},
        {
            "type": "verdict",
            "answer_id": "a2-deadline/baseline",
            "claim_index": 0,
            "raw": "{}",
            "label": "supported",
        },
        {
            "type": "verdict",
            "answer_id": "a2-deadline/baseline",
            "claim_index": 1,
            "raw": "{}",
            "label": "contradicted",
        },
    ]
    import_judge_run(lines=[json.dumps(r) for r in run], project=project)
    changed = lines_of(edit={9: {"text": "Assignment 2 is due on 14 March. No penalty at all."}})
    changed[8] = json.dumps({**json.loads(changed[8]), "claims": None})
    with pytest.raises(DeletionsNotConfirmed) as caught:
        import_bundle(lines=changed, project_slug="t", replace=True)
    assert caught.value.deletions.lines() == [
        "1 answer(s) would be deleted and imported again from the file: "
        "'a2-deadline/baseline' (line 9)",
        "their 2 claim(s) would be replaced by the file's (or proposed again)",
        "2 verdict(s) of judge run 'j' about them would be deleted for good",
    ]
    assert Verdict.objects.count() == 2  # nothing written
    path = tmp_path / "changed.jsonl"
    path.write_text("\n".join(changed))
    err = io.StringIO()
    with pytest.raises(CommandError, match="--confirm-deletions"):
        call_command("import_bundle", str(path), "--project", "t", "--replace", stderr=err)
    assert "2 verdict(s) of judge run 'j'" in err.getvalue()
    call_command(
        "import_bundle",
        str(path),
        "--project",
        "t",
        "--replace",
        "--confirm-deletions",
        stdout=io.StringIO(),
    )
    assert Verdict.objects.count() == 0
    assert Answer.objects.get(answer_id="a2-deadline/baseline").text.endswith("No penalty at all.")
