"""Ragas datasets import as a bundle would: passages, cases, one variant's answers with their
ranked retrieval, claims proposed; every problem by the dataset's own line (JSONL) or row
(CSV), nothing written; the same file twice changes nothing; a second variant's file adds
answers to the same cases and passages. The sample files were written by Ragas itself
(fixtures/ragas/make_samples.py)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotate.imports import ragas
from annotate.imports.lines import BundleInvalid
from annotate.imports.ragas_import import import_ragas
from annotate.members.services import add_member
from annotate.models import Answer, Case, Claim, Membership, Passage, Project, Role, Variant
from annotate.projects.opening import open_labelling
from annotate.schema import LabelSchema
from tests.api import API, finished_job, token_client
from tests.conftest import FIXTURES, may_create_projects

RAGAS = FIXTURES / "ragas"
DEADLINE = "When is Assignment 2 due, and are late submissions allowed?"
# baseline.jsonl asks DEADLINE on lines 1 and 3 with other contexts: two cases.
DEADLINE_FIRST = ragas.case_id_for(DEADLINE, ["notes-17", "notes-18"])
DEADLINE_AGAIN = ragas.case_id_for(DEADLINE, ["notes-17"])


def rows(*samples: dict) -> list[str]:
    return [json.dumps(sample) for sample in samples]


def sample(question: str = "Q?", response: str = "An answer.", **columns) -> dict:
    return {"user_input": question, "response": response, **columns}


def errors_for(lines, slug: str = "rg", variant: str = "baseline") -> list[str]:
    with pytest.raises(BundleInvalid) as caught:
        import_ragas(lines=lines, project_slug=slug, variant=variant)
    return [str(e) for e in caught.value.errors]


def nothing_written() -> bool:
    return not any(m.objects.exists() for m in (Project, Passage, Case, Answer, Claim, Variant))


def read(name: str) -> bytes:
    return (RAGAS / name).read_bytes()


# --- What arrives ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_ragas_dataset_arrives_as_passages_cases_answers_and_proposed_claims():
    result = import_ragas(
        lines=io.BytesIO(read("baseline.jsonl")), project_slug="rg", variant="baseline"
    )

    project = result.project
    assert result.created_project and result.samples == 4
    assert project.corpus_version.startswith("ragas:")
    assert sorted(project.passages.values_list("passage_id", flat=True)) == [
        "lab-note:p1",
        "notes-17",
        "notes-18",
    ]
    # The file asks the deadline question twice with other contexts: its first row's case.
    deadline = Case.objects.get(project=project, case_id=DEADLINE_FIRST)
    assert deadline.question == DEADLINE
    assert (deadline.answerable, deadline.adversarial) == (True, False)
    assert deadline.reference.startswith("Assignment 2 is due on 14 March;")
    assert deadline.required_facts == [] and not deadline.evidence.exists()
    first = Answer.objects.get(project=project, case=deadline, sample=0)
    assert first.variant.name == "baseline"
    assert [
        (r.passage.passage_id, r.rank, r.in_prompt, r.score)
        for r in first.retrieved.order_by("rank")
    ] == [("notes-17", 1, True, None), ("notes-18", 2, True, None)]
    assert [c.text for c in first.claims.order_by("ordinal")] == [
        "Assignment 2 is due on 14 March.",
        "Late submissions receive no penalty.",
    ]
    assert all(c.proposed for c in Claim.objects.filter(answer__project=project))
    assert result.proposed_claims == Claim.objects.filter(answer__project=project).count()


@pytest.mark.django_db
def test_the_same_question_and_contexts_answered_twice_by_a_variant_is_samples_0_and_1():
    contexts = {"retrieved_contexts": ["Due 14 March."], "retrieved_context_ids": ["n17"]}
    import_ragas(
        lines=rows(
            sample(DEADLINE, "On 14 March.", **contexts),
            sample("Other?", retrieved_contexts=["Due 14 March."], retrieved_context_ids=["n17"]),
            sample(DEADLINE, "14 March, I think.", **contexts),
        ),
        project_slug="rg",
        variant="baseline",
    )

    case = Case.objects.get(question=DEADLINE)
    assert case.case_id == ragas.case_id_for(DEADLINE)  # named by its question alone
    assert [(a.sample, a.answer_id, a.text) for a in case.answers.order_by("sample")] == [
        (0, f"{case.case_id}/baseline", "On 14 March."),
        (1, f"{case.case_id}/baseline/1", "14 March, I think."),
    ]


@pytest.mark.django_db
def test_one_instruction_over_fifty_sources_is_fifty_cases_not_fifty_samples():
    """A summarisation set: one user_input, 50 different contexts. Merged into one case, its
    50 summaries read as 50 samples of one generation, and `evaluate` reported a generation
    variance of 1.000; each source is a case of its own."""
    instruction = "Summarise the document in one sentence."
    lines = rows(
        *(
            sample(instruction, f"Summary {i}.", retrieved_contexts=[f"Document {i} says {i}."])
            for i in range(50)
        )
    )
    result = import_ragas(lines=lines, project_slug="rg", variant="baseline")

    assert result.counts["case"]["created"] == 50 and Case.objects.count() == 50
    assert set(Case.objects.values_list("question", flat=True)) == {instruction}
    assert set(Answer.objects.values_list("sample", flat=True)) == {0}
    assert all(case.answers.count() == 1 for case in Case.objects.all())
    ids = set(Case.objects.values_list("case_id", flat=True))
    assert ids == {
        ragas.case_id_for(instruction, [ragas.passage_id_for(f"Document {i} says {i}.")])
        for i in range(50)
    }

    again = import_ragas(lines=lines, project_slug="rg", variant="baseline")
    assert set(Case.objects.values_list("case_id", flat=True)) == ids  # deterministic
    assert again.counts["case"]["unchanged"] == 50 and again.counts["answer"]["unchanged"] == 50
    assert Answer.objects.count() == 50


@pytest.mark.django_db
def test_the_same_question_with_other_contexts_in_one_file_is_a_case_of_its_own():
    """baseline.jsonl asks the deadline question twice, with other retrieved contexts: two
    cases of one answer each, not two samples of one case."""
    import_ragas(lines=io.BytesIO(read("baseline.jsonl")), project_slug="rg", variant="baseline")

    deadline = Case.objects.filter(question=DEADLINE).order_by("case_id")
    assert sorted(c.case_id for c in deadline) == sorted([DEADLINE_FIRST, DEADLINE_AGAIN])
    assert [
        (a.case.case_id, a.sample, a.answer_id)
        for a in Answer.objects.filter(case__question=DEADLINE).order_by("text")
    ] == [
        (DEADLINE_AGAIN, 0, f"{DEADLINE_AGAIN}/baseline"),
        (DEADLINE_FIRST, 0, f"{DEADLINE_FIRST}/baseline"),
    ]


@pytest.mark.django_db
def test_ragas_csv_and_jsonl_of_one_dataset_are_the_same_project():
    """baseline.csv is what EvaluationDataset.to_csv wrote: its list cells are Python
    literals (quotes of both kinds, an escaped newline, a non-ASCII dash)."""
    from_csv = ragas.to_bundle(
        ragas.read_dataset([read("baseline.csv")]), variant="v", corpus_version="c"
    )
    from_jsonl = ragas.to_bundle(
        ragas.read_dataset(read("baseline.jsonl").splitlines()), variant="v", corpus_version="c"
    )
    assert from_csv.lines == from_jsonl.lines

    import_ragas(lines=io.BytesIO(read("baseline.csv")), project_slug="rg", variant="baseline")
    again = import_ragas(
        lines=io.BytesIO(read("baseline.jsonl")), project_slug="rg", variant="baseline"
    )
    assert not again.created_project
    assert again.counts["answer"] == {"unchanged": 4, "created": 0, "corrected": 0}
    lab = Passage.objects.get(passage_id="lab-note:p1").text
    assert lab.startswith("Lab set-up (weeks 1–4)\nThe lab uses") and "it's left" in lab


@pytest.mark.django_db
def test_reimporting_changes_nothing_and_a_second_variant_adds_answers_to_the_same_cases():
    import_ragas(lines=io.BytesIO(read("baseline.jsonl")), project_slug="rg", variant="baseline")
    before = {m: m.objects.count() for m in (Passage, Case, Answer, Claim)}

    again = import_ragas(
        lines=io.BytesIO(read("baseline.jsonl")), project_slug="rg", variant="baseline"
    )
    assert {m: m.objects.count() for m in before} == before
    assert again.summary() == (
        "variants: 1 unchanged; passages: 3 unchanged; cases: 4 unchanged; answers: 4 "
        f"unchanged; claims: {before[Claim]} unchanged; judgments: none"
    )

    verifier = import_ragas(
        lines=io.BytesIO(read("verifier.jsonl")), project_slug="rg", variant="verifier"
    )
    assert verifier.counts["answer"]["created"] == 3
    # Each question the verifier asks once: the learning-rate and batch-size cases are the
    # baseline's (the batch question with other contexts: a retrieval that differs); the
    # deadline question, which the baseline asked with two sets of contexts, is a new case.
    assert verifier.counts["case"] == {"unchanged": 2, "created": 1, "replaced": 0}
    assert set(
        Answer.objects.filter(variant__name="verifier").values_list("case__case_id", flat=True)
    ) == {
        ragas.case_id_for(DEADLINE),
        ragas.case_id_for("What learning rate does the lab use?"),
        ragas.case_id_for("Why does the lab require batch size 64?"),
    }
    assert Passage.objects.count() == before[Passage] and Case.objects.count() == before[Case] + 1
    assert set(Variant.objects.values_list("name", flat=True)) == {"baseline", "verifier"}


@pytest.mark.django_db
def test_contexts_without_ids_are_named_by_their_text_and_shared_across_rows():
    text = "Office hours are on Tuesdays."
    import_ragas(
        lines=rows(
            sample("When are office hours?", retrieved_contexts=[text, "Room 4."]),
            sample("Where are office hours?", retrieved_contexts=["Room 4."]),
        ),
        project_slug="rg",
        variant="baseline",
    )
    assert sorted(Passage.objects.values_list("passage_id", flat=True)) == sorted(
        [ragas.passage_id_for(text), ragas.passage_id_for("Room 4.")]
    )
    assert ragas.passage_id_for(text).startswith("ctx:") and len(ragas.passage_id_for(text)) == 16


@pytest.mark.django_db
def test_a_byte_order_mark_is_no_problem_in_either_format():
    for content in (
        b"\xef\xbb\xbf" + read("baseline.jsonl"),
        b"\xef\xbb\xbf" + read("baseline.csv"),
    ):
        dataset = ragas.read_dataset(io.BytesIO(content))
        assert len(dataset.rows) == 4 and dataset.rows[0].user_input == DEADLINE


@pytest.mark.django_db
def test_a_sample_without_contexts_or_reference_is_an_answer_without_retrieval():
    import_ragas(lines=rows(sample(retrieved_contexts=None)), project_slug="rg", variant="v")
    answer = Answer.objects.get()
    assert not answer.retrieved.exists() and answer.case.reference == ""


@pytest.mark.django_db
def test_passed_over_ragas_columns_are_named_and_integer_ids_become_text():
    result = import_ragas(
        lines=rows(
            sample(
                retrieved_contexts=["A."],
                retrieved_context_ids=[7],
                reference_contexts=["A."],
                persona_name="student",
            )
        ),
        project_slug="rg",
        variant="v",
    )
    assert result.passed_over == ["reference_contexts", "persona_name"]
    assert Passage.objects.get().passage_id == "7"


@pytest.mark.django_db
def test_a_reference_given_later_fills_a_case_that_had_none():
    import_ragas(lines=rows(sample("Q?")), project_slug="rg", variant="a")
    import_ragas(lines=rows(sample("Q?")), project_slug="rg", variant="b")  # still none
    assert Case.objects.get().reference == ""
    errors = errors_for(rows(sample("Q?", reference="R.")), variant="c")
    assert errors == [
        f"line 1: case '{ragas.case_id_for('Q?')}' already exists in this project with "
        "different content; import with replace to overwrite unlabelled items"
    ]


# --- Refused, all or nothing -----------------------------------------------------------------


@pytest.mark.django_db
def test_every_problem_is_reported_by_jsonl_line_and_column_and_nothing_is_written():
    lines = rows(
        sample(),
        {"response": "No question."},
        sample(retrieved_contexts="['a', 'b']"),
        sample(retrieved_contexts=["a", "b"], retrieved_context_ids=["x"]),
        sample(retrieved_contexts=["a", 3]),
        sample(retrieved_contexts=["a", "a"]),
        sample(response=""),
        sample(retreived_contexts=["a"]),
        sample(reference=["R."]),
    )
    lines.insert(1, "")  # a blank line still counts
    assert errors_for(lines) == [
        "line 3: column 'user_input' is missing: every sample needs its question",
        "line 4: column 'retrieved_contexts' must be a list of strings, got a string",
        "line 5: column 'retrieved_context_ids' has 1 id(s) for 2 retrieved_contexts: one id "
        "per context, in the same order",
        "line 6: column 'retrieved_contexts' must be a list of strings; [1] is a number",
        "line 7: retrieved_contexts[1] repeats retrieved_contexts[0] word for word; a passage "
        "is ranked once",
        "line 8: column 'response' must not be empty: claimdesk labels the answer claim by "
        "claim, so it needs one",
        "line 9: unknown column 'retreived_contexts' (did you mean 'retrieved_contexts'?): "
        "claimdesk reads user_input, response, retrieved_contexts, retrieved_context_ids, "
        "reference and passes over Ragas' reference_contexts, reference_context_ids, "
        "multi_responses, rubrics, persona_name, query_style, query_length, synthesizer_name",
        "line 10: column 'reference' must be a string, got a list",
    ]
    assert nothing_written()


@pytest.mark.django_db
def test_csv_problems_are_reported_by_row_counting_the_header_as_row_1():
    """A quoted cell may hold newlines, so a row is not a line of text: row 3 below starts on
    the file's fourth line. Rows are what a spreadsheet shows."""
    csv_text = (
        "user_input,response,retrieved_contexts,retrieved_context_ids\r\n"
        '"Q1?","A.","[""first\nsecond""]","[""p1""]"\r\n'
        "Q2?,,\"['x']\",\r\n"
        "Q3?,A.,just text,\r\n"
        "Q4?,A.,\"['x', 'y'\",\r\n"
        "Q5?,A.,\"['x']\",\"['p1', 'p2']\"\r\n"
        "Q6?,A.,\"['other text']\",\"['p1']\"\r\n"
    )
    errors = errors_for([csv_text.encode()])
    assert errors == [
        "row 3: column 'response' is missing: claimdesk labels the answer claim by claim, so "
        "it needs one",
        "row 4: column 'retrieved_contexts' must be a JSON list or a Python list literal (as "
        "Ragas' to_csv writes it); this cell does not start with '['",
        "row 5: column 'retrieved_contexts' is neither a JSON list nor a Python list literal "
        "(as Ragas' to_csv writes it)",
        "row 6: column 'retrieved_context_ids' has 2 id(s) for 1 retrieved_contexts: one id "
        "per context, in the same order",
        "row 7: retrieved_contexts[0]: passage 'p1' has another text on row 2; an id names "
        "one passage",
    ]
    assert nothing_written()


@pytest.mark.django_db
def test_a_csv_header_without_the_columns_is_one_problem_not_one_per_row():
    errors = errors_for([b"question,answer\nQ?,A.\nQ2?,A2.\n"])
    assert errors[:2] == [
        "row 1: the header row names no 'user_input' column (a Ragas CSV's first row holds "
        "its column names: user_input, response, retrieved_contexts, retrieved_context_ids, "
        "reference)",
        "row 1: the header row names no 'response' column (a Ragas CSV's first row holds its "
        "column names: user_input, response, retrieved_contexts, retrieved_context_ids, "
        "reference)",
    ]
    assert all(e.startswith("row 1:") for e in errors)


@pytest.mark.django_db
def test_one_case_with_two_references_is_refused_on_the_second():
    errors = errors_for(rows(sample("Q?", reference="A."), sample("Q?", reference="B.")))
    assert errors == [
        "line 2: column 'reference' differs from line 1's for the same user_input and "
        "retrieved_contexts; a case has one reference answer"
    ]
    # Other contexts: another case, with its own reference.
    import_ragas(
        lines=rows(
            sample("Q?", reference="A.", retrieved_contexts=["One."]),
            sample("Q?", reference="B.", retrieved_contexts=["Two."]),
        ),
        project_slug="rg",
        variant="v",
    )
    assert sorted(Case.objects.values_list("reference", flat=True)) == ["A.", "B."]


@pytest.mark.django_db
def test_a_bundle_rule_broken_by_a_row_is_reported_on_that_row():
    """The bundle importer's own checks (here: an id the project already holds with other
    text) come back numbered by the dataset's rows, not by the bundle lines made from them."""
    import_ragas(
        lines=rows(sample("Q?", retrieved_contexts=["Old."], retrieved_context_ids=["p1"])),
        project_slug="rg",
        variant="v",
    )
    errors = errors_for(
        rows(
            sample("Other?"),
            sample("Q?", retrieved_contexts=["New."], retrieved_context_ids=["p1"]),
        ),
        variant="w",
    )
    assert errors == [
        "line 2: passage 'p1' already exists in this project with different content; import "
        "with replace to overwrite unlabelled items"
    ]


@pytest.mark.django_db
def test_a_claimdesk_bundle_given_as_a_ragas_dataset_says_so_once_per_line():
    errors = errors_for((FIXTURES / "small.jsonl").read_bytes().splitlines()[:2])
    assert errors == [
        "line 1: a 'type' field: this looks like a claimdesk bundle; import it as a bundle",
        "line 2: a 'type' field: this looks like a claimdesk bundle; import it as a bundle",
    ]


@pytest.mark.django_db
def test_multi_turn_samples_empty_files_and_nul_characters_are_refused():
    messages = [{"content": "Hi", "type": "human"}]
    assert errors_for(rows({"user_input": messages, "response": "A."})) == [
        "line 1: column 'user_input' is a list of messages (a multi-turn sample): claimdesk "
        "labels single-turn answers"
    ]
    assert errors_for(["", "  "]) == ["the file holds no samples"]
    assert errors_for(rows(sample(response="A\u0000B."))) == [
        "line 1: response: NUL U+0000 at character 1 is not allowed in text (tab, newline and "
        "carriage return are)"
    ]
    assert errors_for(rows(sample()), variant=" ") == [
        "name the variant (the system that wrote these answers), e.g. baseline"
    ]


@pytest.mark.django_db
def test_new_answers_are_refused_once_labelling_is_open_but_a_reimport_is_a_no_op():
    result = import_ragas(lines=rows(sample("Q?")), project_slug="rg", variant="v")
    open_labelling(project=result.project)

    assert import_ragas(lines=rows(sample("Q?")), project_slug="rg", variant="v").counts[
        "answer"
    ] == {"unchanged": 1, "created": 0, "corrected": 0}
    errors = errors_for(rows(sample("Q?"), sample("New?")), variant="v")
    assert errors == [
        "line 2: labelling is open in this project, and a Ragas sample has no claims for a "
        "lead to review first: import new answers into a project in set-up"
    ]


# --- The label schema ------------------------------------------------------------------------

BINARY = '{"support": "binary", "claim_fields": [], "answer_fields": []}'


def summaries(n: int = 50) -> list[str]:
    """One instruction over n sources: the summarisation set of issue #30."""
    return rows(
        *(
            sample(
                "Summarise the document in one sentence.",
                f"Document {i} is about topic {i}.",
                retrieved_contexts=[f"Document {i} discusses topic {i} at length."],
            )
            for i in range(n)
        )
    )


def binary_labels(project, reviewers=("alice", "bob")) -> str:
    """A label line per reviewer and answer: every claim supported or unsupported."""
    lines = []
    for answer in project.answers.order_by("answer_id"):
        claims = [
            {"index": i, "support": "unsupported" if i % 2 else "supported"}
            for i in range(answer.claims.count())
        ]
        for reviewer in reviewers:
            lines.append(
                json.dumps({"answer_id": answer.answer_id, "reviewer": reviewer, "claims": claims})
            )
    return "\n".join(lines) + "\n"


def opened_with_reviewers(slug: str):
    project = Project.objects.get(slug=slug)
    for name in ("alice", "bob"):
        add_member(project=project, username=name, role=Role.REVIEWER)
    return open_labelling(project=project)


@pytest.mark.django_db
def test_label_schema_binary_on_the_command_lets_import_labels_take_binary_labels(tmp_path):
    dataset = tmp_path / "summaries.jsonl"
    dataset.write_text("\n".join(summaries()) + "\n")
    out = io.StringIO()
    call_command(
        "import_ragas",
        str(dataset),
        "--project",
        "sum",
        "--variant",
        "baseline",
        "--label-schema",
        BINARY,
        stdout=out,
    )
    assert "cases: 50 created" in out.getvalue()
    assert "label schema: support (binary); other claim fields: none; answer fields: none" in (
        out.getvalue()
    )
    labels = tmp_path / "labels.jsonl"
    labels.write_text(binary_labels(opened_with_reviewers("sum")))
    out = io.StringIO()
    call_command("import_labels", str(labels), "--project", "sum", stdout=out)
    assert out.getvalue() == "Imported 100 label set(s) into 'sum' (0 unchanged).\n"
    assert Project.objects.get(slug="sum").schema.binary

    # The same file without the schema: a three-way project, which refuses every line.
    call_command(
        "import_ragas", str(dataset), "--project", "plain", "--variant", "baseline", stdout=out
    )
    labels.write_text(binary_labels(opened_with_reviewers("plain")))
    with pytest.raises(CommandError, match="problem"):
        call_command("import_labels", str(labels), "--project", "plain", stderr=io.StringIO())


@pytest.mark.django_db
def test_label_schema_may_be_a_file_and_a_bad_one_is_refused_with_every_problem(tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(BINARY)
    command = ["import_ragas", str(RAGAS / "baseline.jsonl"), "--project", "rg", "--variant", "b"]
    call_command(*command, "--label-schema", str(path), stdout=io.StringIO())
    assert Project.objects.get(slug="rg").schema == LabelSchema.parse(json.loads(BINARY))

    bad = '{"support": "five_way", "claim_fields": ["mood"]}'
    with pytest.raises(CommandError) as caught:
        call_command(*command, "--label-schema", bad, stdout=io.StringIO())
    assert str(caught.value) == (
        "--label-schema: label_schema 'support' must be one of three_way, binary, got "
        "'five_way'; label_schema 'claim_fields' has unknown field(s) 'mood' (allowed: "
        "severity, requires_evidence, evidence, citations)"
    )
    with pytest.raises(CommandError, match="--label-schema: the label schema is not JSON"):
        call_command(*command, "--label-schema", "{support: binary}", stdout=io.StringIO())
    with pytest.raises(CommandError, match="neither a JSON object nor a readable file"):
        call_command(*command, "--label-schema", str(tmp_path / "no.json"))


@pytest.mark.django_db
def test_a_label_schema_for_a_project_in_set_up_changes_it_and_the_result_says_so():
    import_ragas(lines=io.BytesIO(read("baseline.jsonl")), project_slug="rg", variant="baseline")
    result = import_ragas(
        lines=io.BytesIO(read("verifier.jsonl")),
        project_slug="rg",
        variant="verifier",
        label_schema=LabelSchema.parse(json.loads(BINARY)),
    )
    assert result.project.schema.binary and Project.objects.get(slug="rg").schema.binary
    assert result.summary().endswith(
        "label schema changed: support three_way → binary; claim fields severity, "
        "requires_evidence, evidence, citations → none; answer fields relevance, abstention, "
        "failure_labels → none"
    )
    assert result.counts["answer"]["created"] == 3


@pytest.mark.django_db
def test_once_labelling_is_open_only_the_project_s_own_label_schema_is_accepted():
    binary = LabelSchema.parse(json.loads(BINARY))
    result = import_ragas(lines=rows(sample("Q?")), project_slug="rg", variant="v")
    open_labelling(project=result.project)

    with pytest.raises(BundleInvalid) as caught:
        import_ragas(lines=rows(sample("Q?")), project_slug="rg", variant="v", label_schema=binary)
    assert [str(e) for e in caught.value.errors] == [
        "the label schema given (support (binary); other claim fields: none; answer fields: "
        "none) differs from the project's (support (three-way); other claim fields: severity, "
        "requires_evidence, evidence, citations; answer fields: relevance, abstention, "
        "failure_labels), which is locked once labelling opens: give the project's schema, "
        "or none"
    ]
    assert not Project.objects.get(slug="rg").schema.binary
    same = import_ragas(
        lines=rows(sample("Q?")), project_slug="rg", variant="v", label_schema=LabelSchema()
    )
    assert same.label_schema_change is None and same.counts["answer"]["unchanged"] == 1


# --- The command -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_import_ragas_command_prints_counts_and_exits_non_zero_on_problems(tmp_path):
    out = io.StringIO()
    call_command(
        "import_ragas",
        str(RAGAS / "baseline.csv"),
        "--project",
        "rg",
        "--variant",
        "baseline",
        "--name",
        "Ragas sample",
        stdout=out,
    )
    assert out.getvalue().startswith(
        "Project 'rg' created from 4 Ragas sample(s) of variant 'baseline': variants: 1 "
        "created; passages: 3 created; cases: 4 created; answers: 4 created;"
    )
    assert "claim(s) were proposed by the sentence splitter" in out.getvalue()
    assert Project.objects.get().name == "Ragas sample"

    bad = tmp_path / "bad.csv"
    bad.write_text("user_input,response\nQ?,\nQ2?,\n")
    err = io.StringIO()
    with pytest.raises(CommandError, match="2 problem"):
        call_command("import_ragas", str(bad), "--project", "rg", "--variant", "x", stderr=err)
    assert err.getvalue().startswith("rows 2 and 3: column 'response' is missing")


@pytest.mark.django_db
def test_import_ragas_confirm_deletions_lets_a_replace_go_on(tmp_path):
    """--confirm-deletions was accepted and then not passed on, so a replace that deletes
    anything could never go on from the command."""
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(sample("Q?", "First answer.")) + "\n")
    command = ["import_ragas", str(path), "--project", "rg", "--variant", "v", "--replace"]
    call_command(*command, stdout=io.StringIO())
    path.write_text(json.dumps(sample("Q?", "Second answer.")) + "\n")
    with pytest.raises(CommandError, match="--confirm-deletions"):
        call_command(*command, stdout=io.StringIO(), stderr=io.StringIO())
    call_command(*command, "--confirm-deletions", stdout=io.StringIO())
    assert Answer.objects.get().text == "Second answer."


# --- The pages and the API -------------------------------------------------------------------


def upload(name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, read(name))


@pytest.mark.django_db
def test_new_project_page_imports_a_ragas_dataset_and_makes_the_uploader_lead(client, outsider):
    may_create_projects(outsider)
    client.force_login(outsider)
    form = client.get(reverse("project_new")).content.decode()
    assert 'value="ragas"' in form and "<legend>File format</legend>" in form
    assert 'data-required-when="format=ragas"' in form

    response = client.post(
        reverse("project_new"),
        {"slug": "rg", "format": "ragas", "variant": "baseline", "file": upload("baseline.csv")},
    )

    assert response.status_code == 302
    project = Project.objects.get(slug="rg")
    assert Membership.objects.get(project=project, user=outsider).role == Role.LEAD
    assert project.answers.count() == 4


@pytest.mark.django_db
def test_new_project_page_asks_for_the_variant_and_lists_row_problems(client, outsider):
    may_create_projects(outsider)
    client.force_login(outsider)
    missing = client.post(
        reverse("project_new"), {"slug": "rg", "format": "ragas", "file": upload("baseline.csv")}
    )
    assert missing.status_code == 400
    assert "Name the system that wrote these responses." in missing.content.decode()

    bad = client.post(
        reverse("project_new"),
        {
            "slug": "rg",
            "format": "ragas",
            "variant": "v",
            "file": SimpleUploadedFile("bad.csv", b"user_input,response\nQ?,\n"),
        },
    )
    assert bad.status_code == 400
    assert "row 2: column &#x27;response&#x27; is missing" in bad.content.decode()
    assert nothing_written()


@pytest.mark.django_db
def test_upload_page_adds_a_second_variants_ragas_answers(client, lead):
    project = import_ragas(
        lines=io.BytesIO(read("baseline.jsonl")), project_slug="rg", variant="baseline"
    ).project
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    client.force_login(lead)

    response = client.post(
        reverse("project_upload", kwargs={"slug": "rg"}),
        {"format": "ragas", "variant": "verifier", "file": upload("verifier.jsonl")},
    )

    assert response.status_code == 302
    assert project.answers.filter(variant__name="verifier").count() == 3


@pytest.mark.django_db
def test_the_api_takes_a_ragas_dataset_with_format_and_variant(lead):
    may_create_projects(lead)
    api = token_client(lead)
    created = api.post(
        f"{API}/projects/",
        {"slug": "rg", "format": "ragas", "variant": "baseline", "file": upload("baseline.csv")},
        format="multipart",
    )
    assert finished_job(api, created)["result"]["counts"]["answer"]["created"] == 4

    added = api.post(
        f"{API}/projects/rg/bundle/",
        {"format": "ragas", "variant": "verifier", "file": upload("verifier.jsonl")},
        format="multipart",
    )
    assert finished_job(api, added)["result"]["counts"]["answer"]["created"] == 3

    no_variant = api.post(
        f"{API}/projects/rg/bundle/",
        {"format": "ragas", "file": upload("verifier.jsonl")},
        format="multipart",
    )
    assert no_variant.status_code == 400 and "variant" in no_variant.json()

    refused = api.post(
        f"{API}/projects/rg/bundle/",
        {
            "format": "ragas",
            "variant": "x",
            "file": SimpleUploadedFile("b.csv", b"user_input\nQ?\n"),
        },
        format="multipart",
    )
    assert finished_job(api, refused)["errors"] == [
        "row 1: the header row names no 'response' column (a Ragas CSV's first row holds its "
        "column names: user_input, response, retrieved_contexts, retrieved_context_ids, "
        "reference)"
    ]


@pytest.mark.django_db
def test_a_csv_list_cell_nested_past_the_interpreter_s_limit_is_a_row_error():
    """[[[[... 60,000 deep fits in a CSV cell: json and ast both give up with RecursionError,
    which is the row's error, not a crashed job."""
    deep = "[" * 60_000 + "]" * 60_000  # within the CSV reader's 131,072-character cell
    rows = io.StringIO()
    import csv

    writer = csv.writer(rows)
    writer.writerow(["user_input", "retrieved_contexts", "response"])
    writer.writerow(["Q?", deep, "An answer."])
    errors = errors_for([rows.getvalue().encode()])
    assert any("retrieved_contexts" in e and "neither a JSON list" in e for e in errors), errors
    assert nothing_written()


@pytest.mark.django_db
def test_the_upload_page_takes_a_label_schema_with_a_ragas_dataset(client, lead):
    project = import_ragas(
        lines=io.BytesIO(read("baseline.jsonl")), project_slug="rg", variant="baseline"
    ).project
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    client.force_login(lead)
    url = reverse("project_upload", kwargs={"slug": "rg"})
    page = client.get(url).content.decode()
    assert 'data-shown-when="format=ragas"' in page and 'name="label_schema"' in page

    bad = client.post(
        url,
        {
            "format": "ragas",
            "variant": "verifier",
            "label_schema": '{"support": "five_way"}',
            "file": upload("verifier.jsonl"),
        },
    )
    assert bad.status_code == 400
    assert "label_schema &#x27;support&#x27; must be one of three_way, binary" in (
        bad.content.decode()
    )
    assert not project.answers.filter(variant__name="verifier").exists()

    response = client.post(
        url,
        {
            "format": "ragas",
            "variant": "verifier",
            "label_schema": BINARY,
            "file": upload("verifier.jsonl"),
        },
        follow=True,
    )
    assert response.redirect_chain[-1][0] == reverse("project_setup", kwargs={"slug": "rg"})
    project.refresh_from_db()
    assert project.schema.binary and project.answers.filter(variant__name="verifier").count() == 3
    said = " ".join(str(m) for m in response.context["messages"])
    assert "label schema changed: support three_way → binary" in said

    # A bundle's schema is in its header: what the hidden field still holds is not read.
    bundle = client.post(
        url,
        {
            "format": "bundle",
            "label_schema": "not JSON",
            "file": SimpleUploadedFile("v.jsonl", read("verifier.jsonl")),
        },
    )
    assert "label_schema" not in (bundle.context["form"].errors if bundle.context else {})


@pytest.mark.django_db
def test_the_upload_page_refuses_another_label_schema_once_labelling_is_open(client, lead):
    project = import_ragas(lines=rows(sample("Q?")), project_slug="rg", variant="v").project
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    open_labelling(project=project)
    client.force_login(lead)

    response = client.post(
        reverse("project_upload", kwargs={"slug": "rg"}),
        {
            "format": "ragas",
            "variant": "v",
            "label_schema": BINARY,
            "file": SimpleUploadedFile("q.jsonl", "\n".join(rows(sample("Q?"))).encode()),
        },
    )
    assert response.status_code == 400
    assert response.context["form"].errors["label_schema"] == [
        "The label schema given (support (binary); other claim fields: none; answer fields: "
        "none) differs from the project's (support (three-way); other claim fields: severity, "
        "requires_evidence, evidence, citations; answer fields: relevance, abstention, "
        "failure_labels), which is locked once labelling opens: give the project's schema, "
        "or none"
    ]
    assert not Project.objects.get(slug="rg").schema.binary


@pytest.mark.django_db
def test_the_new_project_page_takes_a_label_schema_with_a_ragas_dataset(client, outsider):
    may_create_projects(outsider)
    client.force_login(outsider)
    response = client.post(
        reverse("project_new"),
        {
            "slug": "rg",
            "format": "ragas",
            "variant": "baseline",
            "label_schema": BINARY,
            "file": upload("baseline.csv"),
        },
    )
    assert response.status_code == 302
    assert Project.objects.get(slug="rg").schema.binary


@pytest.mark.django_db
def test_the_api_takes_a_label_schema_with_a_ragas_dataset_and_says_it_changed(lead):
    may_create_projects(lead)
    api = token_client(lead)
    created = api.post(
        f"{API}/projects/",
        {
            "slug": "rg",
            "format": "ragas",
            "variant": "baseline",
            "label_schema": BINARY,
            "file": upload("baseline.csv"),
        },
        format="multipart",
    )
    result = finished_job(api, created)["result"]
    assert result["label_schema_change"] == {
        "from": LabelSchema().as_dict(),
        "to": json.loads(BINARY),
    }
    assert result["summary"].endswith(
        "label schema: support (binary); other claim fields: none; answer fields: none"
    )
    assert api.get(f"{API}/projects/rg/").json()["label_schema"] == json.loads(BINARY)

    three_way = '{"support": "three_way", "claim_fields": [], "answer_fields": []}'
    added = api.post(
        f"{API}/projects/rg/bundle/",
        {
            "format": "ragas",
            "variant": "verifier",
            "label_schema": three_way,
            "file": upload("verifier.jsonl"),
        },
        format="multipart",
    )
    job = finished_job(api, added)
    assert job["result"]["label_schema_change"]["to"]["support"] == "three_way"
    assert "label schema changed: support binary → three_way" in job["result"]["summary"]
    unchanged = api.post(
        f"{API}/projects/rg/bundle/",
        {"format": "ragas", "variant": "verifier", "file": upload("verifier.jsonl")},
        format="multipart",
    )
    assert finished_job(api, unchanged)["result"]["label_schema_change"] is None


@pytest.mark.django_db
def test_the_api_refuses_a_bad_or_locked_label_schema_with_a_field_error(lead):
    may_create_projects(lead)
    api = token_client(lead)

    def post(path, **fields):
        return api.post(
            f"{API}/{path}",
            {"format": "ragas", "variant": "v", "file": upload("baseline.csv"), **fields},
            format="multipart",
        )

    bad = post("projects/", slug="rg", label_schema='{"support": "binary", "colour": 1}')
    assert bad.status_code == 400
    assert bad.json()["label_schema"] == [
        "unknown key 'colour' in label_schema (allowed: support, claim_fields, answer_fields)"
    ]
    not_json = post("projects/", slug="rg", label_schema="binary")
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["label_schema"][0]
    for_a_bundle = post("projects/", slug="rg", format="bundle", label_schema=BINARY)
    assert for_a_bundle.status_code == 400
    assert for_a_bundle.json()["label_schema"] == [
        "Only with format=ragas: a bundle gives its label_schema in its header."
    ]
    assert not Project.objects.exists()

    finished_job(api, post("projects/", slug="rg"))
    open_labelling(project=Project.objects.get(slug="rg"))
    locked = post("projects/rg/bundle/", label_schema=BINARY)
    assert locked.status_code == 400
    assert locked.json()["label_schema"][0].startswith(
        "The label schema given (support (binary); other claim fields: none; answer fields: "
        "none) differs from the project's"
    )
