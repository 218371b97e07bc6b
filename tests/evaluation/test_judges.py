"""Importing a model judge's run: malformed and timed-out verdicts, quote checks, import errors
by line (nothing written), run names, self-judging, and the command and upload faces."""

from __future__ import annotations

import hashlib
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotate.imports.lines import BundleInvalid
from annotate.members.services import add_member
from annotate.models import Claim, Role
from evaluation.judges.runs import (
    import_judge_run,
    parse_judge_run,
    quote_found,
    same_model,
    self_judged_counts,
)
from evaluation.models import JudgeRun, Verdict
from tests.conftest import FIXTURES, PASSWORD, import_fixture

# config.urls includes the judge pages at p/<slug>/judges/; until then the tests add them here.

RUN = {
    "type": "run",
    "judge": "strict-judge-v2",
    "model": "northwind/grader-large",
    "model_version": "2026-10-01",
    "prompt": "You are grading one claim ...",
    "settings": {"temperature": 0},
}


def verdict(answer_id="a2-deadline/baseline", claim_index=0, **fields):
    row = {"type": "verdict", "answer_id": answer_id, "raw": fields.pop("raw", "{}")}
    if claim_index is not None:
        row["claim_index"] = claim_index
    return {**row, **fields}


def jsonl(*rows) -> list[str]:
    return [json.dumps(row) + "\n" for row in rows]


def run_file(*verdicts, **run) -> list[str]:
    return jsonl({**RUN, **run}, *verdicts)


def supported(answer_id="a2-deadline/baseline", claim_index=0, **fields):
    return verdict(answer_id, claim_index, label="supported", **fields)


# --- parsing ---------------------------------------------------------------------------------


def test_a_null_missing_or_unknown_label_is_malformed_and_a_timeout_is_a_timeout():
    parsed = parse_judge_run(
        run_file(
            verdict(claim_index=0, raw="I think it is fine", label=None),
            verdict(claim_index=1, raw='{"label": "supp'),
            verdict("b", 0, raw='{"label": "mostly_supported"}', label="mostly_supported"),
            verdict("b", 1, raw="", status="timeout", label="supported"),
            verdict("b", None, raw='{"relevance": 3}', relevance=3),
            verdict("c", 0, raw="{}", label="contradicted", evidence_ids="notes-17"),
            verdict("c", None, raw='{"relevance": 2}', relevance=2),
        ),
        claim_counts={"a2-deadline/baseline": 2, "b": 2, "c": 1},
    )
    got = [(v.status, v.label, v.relevance, v.problem) for v in parsed.verdicts]
    assert got == [
        ("malformed", "", None, "label is null"),
        ("malformed", "", None, "no label"),
        (
            "malformed",
            "",
            None,
            "label 'mostly_supported' is outside the vocabulary "
            "(supported, contradicted, insufficient_evidence, unsupported)",
        ),
        ("timeout", "", None, ""),
        ("malformed", "", None, "relevance 3 is not 0, 1 or 2"),
        ("malformed", "", None, "'evidence_ids' must be a list of passage ids"),
        ("ok", "", 2, ""),
    ]
    assert parsed.verdicts[0].raw == "I think it is fine"


def test_every_import_error_is_reported_by_line_at_once():
    lines = run_file(
        supported("nope/baseline", 0),  # line 2
        supported(claim_index=2),  # line 3: the answer has claims 0-1
        supported(claim_index=0),  # line 4: fine
        supported(claim_index=0),  # line 5: duplicate of line 4
        verdict(None, None),  # line 6: no answer_id
        supported(claim_index=1, certainty=0.9),  # line 7: unknown field
        "not json",  # line 8
    )
    lines[-1] = "not json\n"
    with pytest.raises(BundleInvalid) as caught:
        parse_judge_run(lines, claim_counts={"a2-deadline/baseline": 2})
    messages = [str(e) for e in caught.value.errors]
    assert messages == [
        "line 2: unknown answer_id 'nope/baseline'",
        "line 3: claim_index 2 is out of range: answer 'a2-deadline/baseline' has claims 0–1",
        "line 5: a second verdict for claim 0 of answer 'a2-deadline/baseline' "
        "(the first is on line 4)",
        "line 6: missing required field 'answer_id'",
        "line 7: unknown field 'certainty' in a verdict line (allowed: answer_id, claim_index, "
        "confidence, evidence_ids, label, quote, raw, relevance, status)",
        "line 8: not valid JSON (Expecting value at column 1)",
    ]


def test_the_run_line_comes_first_and_needs_a_judge_a_model_and_the_prompt():
    with pytest.raises(BundleInvalid) as caught:
        parse_judge_run(
            jsonl(supported(), {"type": "run", "judge": "x"}),
            claim_counts={"a2-deadline/baseline": 2},
        )
    assert [str(e) for e in caught.value.errors] == [
        "line 1: the run line (type 'run') must come first",
        "line 2: the run line must come first, and only once",
    ]
    with pytest.raises(BundleInvalid) as caught:
        parse_judge_run(
            jsonl({"type": "run"}, supported()), claim_counts={"a2-deadline/baseline": 1}
        )
    assert [str(e) for e in caught.value.errors] == [
        "line 1: missing required field 'judge'",
        "line 1: missing required field 'model'",
        "line 1: missing required field 'prompt'",
    ]


def test_a_label_on_an_answer_verdict_or_relevance_on_a_claim_verdict_is_an_error():
    with pytest.raises(BundleInvalid) as caught:
        parse_judge_run(
            run_file(verdict(claim_index=None, label="supported"), supported(relevance=2)),
            claim_counts={"a2-deadline/baseline": 2},
        )
    assert [str(e) for e in caught.value.errors] == [
        "line 2: 'label' without 'claim_index': an answer-level verdict carries 'relevance'",
        "line 3: 'relevance' is about the answer: give it without 'claim_index'",
    ]


def test_quotes_are_checked_whitespace_normalised_against_the_evidence_passages():
    passages = {"notes-17": "Assignment 2 is due on 14 March. Late submissions are accepted."}
    assert quote_found("due on\n 14   March.", ["notes-17"], passages) is True
    assert quote_found("due on 14 April", ["notes-17"], passages) is False
    assert quote_found("due on 14 March", [], passages) is False  # no evidence to hold it
    assert quote_found("due on 14 March", ["notes-99"], passages) is False  # unknown id
    assert quote_found("  ", ["notes-17"], passages) is None


def test_another_pinned_version_of_the_generator_is_still_the_generator():
    assert same_model("acme/gen-small", "acme/gen-small@2026-09-01")
    assert same_model("ACME/gen-small@2026-10-01", "acme/gen-small@2026-09-01")
    assert not same_model("northwind/grader-large", "acme/gen-small@2026-09-01")
    assert not same_model("acme/gen-small", "")


# --- importing -------------------------------------------------------------------------------


@pytest.fixture
def claims(small_project):
    return {
        (c.answer.answer_id, c.ordinal): c
        for c in Claim.objects.filter(answer__project=small_project).select_related("answer")
    }


def test_import_keeps_raw_responses_counts_failures_and_flags_quotes(small_project, claims):
    prompt = "You are grading one claim of a study assistant's answer."
    result = import_judge_run(
        lines=run_file(
            supported(
                claim_index=0,
                raw='{"label": "supported"}',
                evidence_ids=["notes-17"],
                quote="Assignment 2 is due   on 14 March.",
            ),
            verdict(
                claim_index=1,
                label="contradicted",
                evidence_ids=["notes-17"],
                quote="no penalty at all",
            ),
            verdict("batch-premise/baseline", 0, raw="I think it is fine", label=None),
            verdict("a2-deadline/verifier", 0, raw="", status="timeout"),
            verdict("missing-rate/baseline", None, raw='{"relevance": 2}', relevance=2),
            prompt=prompt,
        ),
        project=small_project,
        source_name="run.jsonl",
    )
    run = result.run
    assert (run.name, run.model, run.model_version) == (
        "strict-judge-v2",
        "northwind/grader-large",
        "2026-10-01",
    )
    assert run.prompt == prompt
    assert run.prompt_sha256 == hashlib.sha256(prompt.encode()).hexdigest()
    assert run.settings == {"temperature": 0} and run.source_name == "run.jsonl"
    assert (result.verdicts, result.claim_verdicts, result.ok) == (5, 4, 3)
    assert (result.malformed, result.timeouts, result.quotes_not_found) == (1, 1, 1)

    rows = {
        (v.answer.answer_id, v.claim.ordinal if v.claim else None): v for v in run.verdicts.all()
    }
    first = rows[("a2-deadline/baseline", 0)]
    assert first.claim == claims[("a2-deadline/baseline", 0)]
    assert (first.status, first.label, first.quote_found) == ("ok", "supported", True)
    assert rows[("a2-deadline/baseline", 1)].quote_found is False
    malformed = rows[("batch-premise/baseline", 0)]
    assert (malformed.status, malformed.label, malformed.raw) == (
        "malformed",
        "",
        "I think it is fine",
    )
    assert rows[("a2-deadline/verifier", 0)].status == "timeout"
    answer_level = rows[("missing-rate/baseline", None)]
    assert answer_level.claim is None and answer_level.relevance == 2
    listed = JudgeRun.objects.with_counts().get()
    assert (listed.n_verdicts, listed.n_ok, listed.n_malformed, listed.n_timeout) == (5, 3, 1, 1)
    assert listed.n_quote_not_found == 1


def test_an_invalid_file_writes_nothing(small_project):
    with pytest.raises(BundleInvalid) as caught:
        import_judge_run(
            lines=run_file(supported(), supported("a2-deadline/baseline", 7)),
            project=small_project,
        )
    assert [str(e) for e in caught.value.errors] == [
        "line 3: claim_index 7 is out of range: answer 'a2-deadline/baseline' has claims 0–1"
    ]
    assert not JudgeRun.objects.exists() and not Verdict.objects.exists()


def test_a_second_run_with_the_same_name_needs_a_new_name(small_project):
    import_judge_run(lines=run_file(supported()), project=small_project)
    with pytest.raises(BundleInvalid) as caught:
        import_judge_run(lines=run_file(supported()), project=small_project)
    assert [str(e) for e in caught.value.errors] == [
        "line 1: project 'small' already has a judge run named 'strict-judge-v2': import it "
        "under a new name (--name, or the name field of the upload form)"
    ]
    assert JudgeRun.objects.count() == 1 and Verdict.objects.count() == 1
    again = import_judge_run(lines=run_file(supported()), project=small_project, name="rerun")
    assert again.run.name == "rerun"
    assert sorted(JudgeRun.objects.values_list("name", flat=True)) == ["rerun", "strict-judge-v2"]


def test_a_judge_grading_its_own_generator_is_counted_as_self_judging(small_project):
    result = import_judge_run(
        lines=run_file(
            supported(),
            supported("batch-premise/baseline", 0),
            verdict("missing-rate/baseline", None, relevance=1),
            model="acme/gen-small",  # the small project's generator, unpinned
            model_version="2026-10-01",
        ),
        project=small_project,
    )
    assert result.self_judged == 3
    other = import_judge_run(lines=run_file(supported()), project=small_project, name="independent")
    assert other.self_judged == 0
    assert self_judged_counts(small_project, [result.run, other.run]) == {
        result.run.pk: 3,
        other.run.pk: 0,
    }


# --- the command -----------------------------------------------------------------------------


def test_command_imports_the_demo_run_and_refuses_it_twice(db, tmp_path):
    import_fixture("demo.jsonl", "demo")
    out = io.StringIO()
    call_command(
        "import_judge_run", str(FIXTURES / "demo_judge_run.jsonl"), project="demo", stdout=out
    )
    assert out.getvalue().startswith(
        "Judge run 'strict-judge-v2' imported: 144 verdicts (84 about claims, 60 about answers), "
        "3 malformed, 1 timed out, 4 quote(s) not found in their evidence."
    )
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 problem"):
        call_command(
            "import_judge_run",
            str(FIXTURES / "demo_judge_run.jsonl"),
            project="demo",
            stdout=io.StringIO(),
            stderr=err,
        )
    assert (
        "line 1: project 'demo' already has a judge run named 'strict-judge-v2'" in err.getvalue()
    )
    call_command(
        "import_judge_run",
        str(FIXTURES / "demo_judge_run.jsonl"),
        project="demo",
        name="strict-judge-v2-again",
        stdout=io.StringIO(),
    )
    assert JudgeRun.objects.count() == 2
    assert Verdict.objects.filter(run__name="strict-judge-v2-again").count() == 144


def test_every_demo_verdict_names_a_demo_answer_and_claim(db):
    """The fixture covers every claim of all 60 demo answers and answer-level relevance."""
    project = import_fixture("demo.jsonl", "demo")
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        result = import_judge_run(lines=stream, project=project)
    assert result.claim_verdicts == Claim.objects.filter(answer__project=project).count() == 84
    assert result.verdicts - result.claim_verdicts == 60
    assert result.self_judged == 0


# --- the upload page -------------------------------------------------------------------------


@pytest.fixture
def led(small_project, reviewer_a, lead, outsider):
    add_member(project=small_project, username=reviewer_a.username, role=Role.REVIEWER)
    add_member(project=small_project, username=lead.username, role=Role.LEAD)
    return small_project


def _upload(client, project, lines, name=""):
    content = "".join(lines).encode()
    return client.post(
        reverse("judge_upload", kwargs={"slug": project.slug}),
        {"file": SimpleUploadedFile("run.jsonl", content), "name": name},
    )


def test_lead_uploads_a_run_and_lands_on_its_calibration(client, led, lead):
    client.login(username=lead.username, password=PASSWORD)
    response = _upload(client, led, run_file(supported()))
    run = JudgeRun.objects.get()
    assert run.imported_by == lead and run.source_name == "run.jsonl"
    assert response.status_code == 302
    assert response["Location"] == reverse("judge_run", kwargs={"slug": "small", "run_pk": run.pk})
    page = client.get(reverse("judges", kwargs={"slug": "small"}))
    assert page.status_code == 200 and b"strict-judge-v2" in page.content


def test_a_run_uploaded_with_a_worker_is_imported_by_it_and_followed_on_the_job_page(
    client, led, lead, database_tasks
):
    """A run of 100,000 verdicts takes seconds to check and write: the upload stores the file
    and a worker imports it, while the job page follows it and then leads to the run."""
    from django_tasks_db.models import DBTaskResult

    from jobs.models import Job
    from jobs.tasks import run_job

    client.login(username=lead.username, password=PASSWORD)
    response = _upload(client, led, run_file(supported()), name="nightly")
    job = Job.objects.get()
    assert job.kind == Job.Kind.JUDGE_IMPORT and job.status == Job.Status.QUEUED
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert not JudgeRun.objects.exists()
    assert "Judge run import" in client.get(f"/jobs/{job.pk}/").content.decode()
    (task,) = DBTaskResult.objects.all()
    run_job.call(*task.args_kwargs["args"])
    run = JudgeRun.objects.get()
    assert run.name == "nightly" and run.imported_by == lead and run.source_name == "run.jsonl"
    page = client.get(f"/jobs/{job.pk}/", follow=True)
    assert page.redirect_chain[-1][0] == reverse(
        "judge_run", kwargs={"slug": "small", "run_pk": run.pk}
    )
    assert "Imported judge run &#x27;nightly&#x27;: 1 verdicts" in page.content.decode()


def test_a_run_a_worker_refuses_lists_every_problem_on_the_job_page(
    client, led, lead, database_tasks
):
    from django_tasks_db.models import DBTaskResult

    from jobs.tasks import run_job

    client.login(username=lead.username, password=PASSWORD)
    response = _upload(client, led, run_file(supported("nope", 0)))
    (task,) = DBTaskResult.objects.all()
    run_job.call(*task.args_kwargs["args"])
    page = client.get(response["Location"]).content.decode()
    assert "line 2: unknown answer_id &#x27;nope&#x27;" in page
    assert 'href="/p/small/judges/"' in page  # upload a corrected file there
    assert not JudgeRun.objects.exists()


def test_a_refused_upload_lists_every_problem_and_writes_nothing(client, led, lead):
    client.login(username=lead.username, password=PASSWORD)
    response = _upload(client, led, run_file(supported("nope", 0), supported(claim_index=9)))
    assert response.status_code == 400
    body = response.content.decode()
    assert "line 2: unknown answer_id &#x27;nope&#x27;" in body
    assert "line 3: claim_index 9 is out of range" in body
    assert not JudgeRun.objects.exists()


def test_reviewers_and_outsiders_cannot_upload(client, led, reviewer_a, outsider):
    for person in (reviewer_a, outsider):
        client.login(username=person.username, password=PASSWORD)
        assert _upload(client, led, run_file(supported())).status_code == 404
    assert not JudgeRun.objects.exists()
