"""The REST API does what the pages do, for scripts: a lead creates a project from a bundle,
opens labelling, manages members, adjudicates, exports gold, pushes judge runs and reads the
reports; a reviewer takes, drafts, submits, skips and reopens tasks. Errors are 400 with
field paths (every bundle problem with its line), 409 for what the state refuses."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.apps import apps
from django.contrib.staticfiles import finders
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotate.adjudication.queue import adjudication_queue
from annotate.members.services import allow_adding_anyone
from annotate.models import Answer, Assignment, Decision, Membership, Project, Role
from annotate.projects.opening import open_labelling
from evaluation.models import JudgeRun
from evaluation.reports.agreement import agreement_report
from jobs.models import Job
from tests import api as shared
from tests.api import API, JSONL, finished_job, token_client
from tests.conftest import FIXTURES, PASSWORD, may_create_projects

demo = shared.demo  # fixture

SMALL = (FIXTURES / "small.jsonl").read_bytes()


def defective() -> bytes:
    """small.jsonl with a passage without text (line 3) and an answer naming a case that does
    not exist (line 9)."""
    lines = SMALL.decode().splitlines()
    passage = json.loads(lines[2])
    del passage["text"]
    lines[2] = json.dumps(passage)
    answer = json.loads(lines[8])
    answer["case_id"] = "no-such-case"
    lines[8] = json.dumps(answer)
    return "\n".join(lines).encode()


def upload(content: bytes, name: str = "bundle.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/jsonl")


@pytest.fixture
def opened(team, shared_queue_start) -> Project:
    """Open, every reviewer starting at the queue's start: the spread order begins with an
    answer of the case that has two (a2-deadline), both of which have claims."""
    return open_labelling(project=team)


def complete_labels(client, slug: str, task: dict) -> None:
    """Label every claim of the task as a reviewer would: not found in the passages (which
    needs no quote), each citation judged, the answer rated."""
    number = task["task_number"]
    for claim in task["claims"]:
        citations = {
            c["passage_id"]: "does_not_support" for c in claim["citations"] if c["resolved"]
        }
        response = client.patch(
            f"{API}/projects/{slug}/tasks/{number}/claims/{claim['index']}/",
            {"support": "insufficient_evidence", "severity": "minor", "citations": citations},
            format="json",
        )
        assert response.status_code == 200, response.content
        assert response.json()["problems"] == {}
    answer = {"relevance": 1}
    if task["answer"]["abstained"]:
        answer["abstention"] = "appropriate"
    response = client.patch(f"{API}/projects/{slug}/tasks/{number}/answer/", answer, format="json")
    assert response.status_code == 200, response.content


# --- Projects and bundles --------------------------------------------------------------------


def test_a_bundle_upload_creates_the_project_and_makes_the_uploader_its_lead(db, lead):
    may_create_projects(lead)
    client = token_client(lead)
    response = client.post(
        f"{API}/projects/", {"slug": "course", "name": "Course", "file": upload(SMALL)}
    )
    job = finished_job(client, response)
    assert job["status"] == "succeeded" and job["kind"] == "bundle_import"
    body = job["result"]
    assert body["project"] == "course" and body["created_project"] is True
    assert body["counts"]["answer"] == {"created": 4, "unchanged": 0, "replaced": 0, "corrected": 0}
    assert Membership.objects.get(project__slug="course").role == Role.LEAD
    project = client.get(f"{API}/projects/course/").json()
    assert project["role"] == "lead" and project["state"] == "draft"
    assert project["corpus_version"] == "course-notes-v1"


def test_a_raw_jsonl_body_imports_too_and_importing_again_changes_nothing(db, lead):
    may_create_projects(lead)
    client = token_client(lead)
    response = client.post(f"{API}/projects/?slug=course&name=Course", SMALL, content_type=JSONL)
    assert finished_job(client, response)["result"]["created_project"] is True
    again = finished_job(
        client, client.post(f"{API}/projects/course/bundle/", SMALL, content_type=JSONL)
    )
    assert again["result"]["created_project"] is False
    assert again["result"]["counts"]["answer"] == {
        "created": 0,
        "unchanged": 4,
        "replaced": 0,
        "corrected": 0,
    }
    exported = client.get(f"{API}/projects/course/bundle/")
    assert exported["Content-Type"].startswith(JSONL)
    rows = [json.loads(line) for line in b"".join(exported.streaming_content).splitlines()]
    assert [r["type"] for r in rows].count("answer") == 4


def test_a_defective_bundle_fails_its_job_with_every_problem_by_line_and_nothing_written(db, lead):
    may_create_projects(lead)
    client = token_client(lead)
    response = client.post(f"{API}/projects/", {"slug": "course", "file": upload(defective())})
    job = finished_job(client, response)
    assert job["status"] == "failed" and not job["retryable"]
    assert "nothing was written" in job["failure"].lower()
    assert job["summary"] and len(job["summary"]) <= len(job["errors"])
    errors = job["errors"]
    assert any(e.startswith("line 3: ") for e in errors)
    assert any(e.startswith("line 9: ") and "no-such-case" in e for e in errors)
    assert not Project.objects.filter(slug="course").exists()


def test_an_empty_upload_is_refused_rather_than_creating_a_project_without_corpus(db, lead):
    may_create_projects(lead)
    response = token_client(lead).post(f"{API}/projects/?slug=empty", b"\n\n", content_type=JSONL)
    assert response.status_code == 400
    assert response.json() == {"errors": ["The file is empty."]}
    assert not Project.objects.filter(slug="empty").exists()


def test_a_slug_someone_else_uses_is_a_field_error(team, outsider):
    may_create_projects(outsider)
    response = token_client(outsider).post(
        f"{API}/projects/", {"slug": "small", "file": upload(SMALL)}
    )
    assert response.status_code == 400
    assert list(response.json()) == ["slug"]


def test_opening_labelling_twice_is_a_conflict(team, lead):
    client = token_client(lead)
    first = client.post(f"{API}/projects/small/open/")
    assert first.status_code == 200 and first.json()["state"] == "open"
    second = client.post(f"{API}/projects/small/open/")
    assert second.status_code == 409
    assert "already open" in second.json()["detail"]


def test_project_list_shows_my_role_and_filters_by_state_and_role(team, lead, reviewer_a):
    assert token_client(lead).get(f"{API}/projects/").json()["results"][0]["role"] == "lead"
    mine = token_client(reviewer_a).get(f"{API}/projects/?role=reviewer").json()
    assert [p["slug"] for p in mine["results"]] == ["small"]
    assert token_client(reviewer_a).get(f"{API}/projects/?state=open").json()["count"] == 0
    bad = token_client(reviewer_a).get(f"{API}/projects/?state=sideways")
    assert bad.status_code == 400 and "state" in bad.json()


def test_lists_are_paginated_with_limit_and_offset(team, lead):
    client = token_client(lead)
    first = client.get(f"{API}/projects/small/members/?limit=2").json()
    assert first["count"] == 3 and len(first["results"]) == 2 and first["next"]
    rest = client.get(f"{API}/projects/small/members/?limit=2&offset=2").json()
    assert len(rest["results"]) == 1 and rest["next"] is None


# --- Members ---------------------------------------------------------------------------------


def test_a_lead_adds_members_changes_roles_and_keeps_a_lead(team, lead):
    allow_adding_anyone(user=lead)
    client = token_client(lead)
    added = client.post(
        f"{API}/projects/small/members/",
        {"username": "carol", "role": "reviewer", "password": PASSWORD},
        format="json",
    )
    assert added.status_code == 201 and added.json() == {"username": "carol", "role": "reviewer"}
    reviewers = client.get(f"{API}/projects/small/members/?role=reviewer").json()["results"]
    assert [m["username"] for m in reviewers] == ["alice", "bob", "carol"]
    promoted = client.patch(f"{API}/projects/small/members/carol/", {"role": "lead"}, format="json")
    assert promoted.status_code == 200 and promoted.json()["role"] == "lead"
    assert client.delete(f"{API}/projects/small/members/carol/").status_code == 204
    last = client.patch(f"{API}/projects/small/members/lena/", {"role": "reviewer"}, format="json")
    assert last.status_code == 409
    assert client.get(f"{API}/projects/small/members/nobody/").status_code == 404


def test_a_password_for_an_existing_account_leaves_their_own_and_bad_input_is_a_field_error(
    team, lead, outsider
):
    allow_adding_anyone(user=lead)
    response = token_client(lead).post(
        f"{API}/projects/small/members/",
        {"username": outsider.username, "role": "reviewer", "password": "something long"},
        format="json",
    )
    assert response.status_code == 201  # as for a new account: existence is not confirmed
    outsider.refresh_from_db()
    assert outsider.check_password(PASSWORD)
    weak = token_client(lead).post(
        f"{API}/projects/small/members/",
        {"username": "y", "role": "reviewer", "password": "password"},
        format="json",
    )
    assert weak.status_code == 400 and list(weak.json()) == ["password"]
    bad_role = token_client(lead).post(
        f"{API}/projects/small/members/", {"username": "x", "role": "boss"}, format="json"
    )
    assert bad_role.status_code == 400 and list(bad_role.json()) == ["role"]


# --- A reviewer's tasks ----------------------------------------------------------------------


def test_next_task_carries_exactly_what_the_labelling_page_shows(opened, reviewer_a):
    task = token_client(reviewer_a).post(f"{API}/projects/small/tasks/next/").json()
    assert set(task) == {
        "task_number",
        "status",
        "label_schema",
        "question",
        "answer",
        "claims",
        "passages",
        "progress",
        "missing",
    }
    assert set(task["answer"]) == {"text", "abstained", "label"}
    assert set(task["claims"][0]) == {"index", "text", "start", "end", "citations", "label"}
    assert set(task["passages"][0]) == {
        "passage_id",
        "document",
        "location",
        "text",
        "rank",
        "in_prompt",
        "retrieved",
    }
    assert task["status"] == "in_progress"
    assert task["missing"]["answer.relevance"]


def test_next_task_is_the_one_in_progress_until_it_is_submitted(opened, reviewer_a):
    client = token_client(reviewer_a)
    first = client.post(f"{API}/projects/small/tasks/next/").json()
    assert (
        client.post(f"{API}/projects/small/tasks/next/").json()["task_number"]
        == (first["task_number"])
    )


def test_submit_lists_every_missing_label_by_field_path(opened, reviewer_a):
    client = token_client(reviewer_a)
    task = client.post(f"{API}/projects/small/tasks/next/").json()
    number = task["task_number"]
    quoted = client.patch(
        f"{API}/projects/small/tasks/{number}/claims/1/",
        {
            "support": "contradicted",
            "severity": "major",
            "evidence_ids": [task["passages"][0]["passage_id"]],
            "evidence_quote": "words that are not in the passage",
        },
        format="json",
    )
    assert quoted.status_code == 200
    assert list(quoted.json()["problems"]) == ["claims.1.evidence_quote"]
    response = client.post(f"{API}/projects/small/tasks/{number}/submit/")
    assert response.status_code == 400
    errors = response.json()
    assert "claims.1.evidence_quote" in errors and "answer.relevance" in errors
    assert all(isinstance(messages, list) for messages in errors.values())
    assert Assignment.objects.get(reviewer=reviewer_a).status == Assignment.Status.IN_PROGRESS


def test_invalid_draft_values_are_400_with_the_claims_field_path(opened, reviewer_a):
    client = token_client(reviewer_a)
    number = client.post(f"{API}/projects/small/tasks/next/").json()["task_number"]
    response = client.patch(
        f"{API}/projects/small/tasks/{number}/claims/0/",
        {"support": "maybe", "evidence_ids": ["not-shown"]},
        format="json",
    )
    assert response.status_code == 400
    assert set(response.json()) == {"claims.0.support", "claims.0.evidence_ids"}
    answer = client.patch(
        f"{API}/projects/small/tasks/{number}/answer/", {"relevance": 7}, format="json"
    )
    assert answer.status_code == 400 and list(answer.json()) == ["answer.relevance"]
    assert (
        client.patch(
            f"{API}/projects/small/tasks/{number}/claims/99/", {}, format="json"
        ).status_code
        == 404
    )


def test_a_complete_task_submits_then_reopens_and_a_skip_needs_a_reason(opened, reviewer_a):
    client = token_client(reviewer_a)
    task = client.post(f"{API}/projects/small/tasks/next/").json()
    number = task["task_number"]
    complete_labels(client, "small", task)
    submitted = client.post(f"{API}/projects/small/tasks/{number}/submit/")
    assert submitted.status_code == 200, submitted.content
    assert submitted.json()["status"] == "submitted" and submitted.json()["missing"] == {}
    assert Assignment.objects.get(reviewer=reviewer_a).revisions.get().source == "api"
    edit = client.patch(
        f"{API}/projects/small/tasks/{number}/answer/", {"note": "x"}, format="json"
    )
    assert edit.status_code == 409
    reopened = client.post(f"{API}/projects/small/tasks/{number}/reopen/")
    assert reopened.status_code == 200 and reopened.json()["status"] == "in_progress"

    other = client.post(f"{API}/projects/small/tasks/next/").json()["task_number"]
    assert other == number  # the reopened task is in progress again
    assert (
        client.post(
            f"{API}/projects/small/tasks/{number}/skip/", {"reason": ""}, format="json"
        ).status_code
        == 400
    )
    skipped = client.post(
        f"{API}/projects/small/tasks/{number}/skip/", {"reason": "unreadable"}, format="json"
    )
    assert skipped.status_code == 204
    assert client.get(f"{API}/projects/small/tasks/{number}/").status_code == 404
    assert client.get(f"{API}/projects/small/tasks/?status=released").json()["count"] == 1


def test_an_empty_queue_is_204_and_a_closed_one_409(team, reviewer_a):
    client = token_client(reviewer_a)
    assert client.post(f"{API}/projects/small/tasks/next/").status_code == 409
    open_labelling(project=team)
    taken = set()
    for _ in range(4):
        task = client.post(f"{API}/projects/small/tasks/next/").json()
        taken.add(task["task_number"])
        skip = f"{API}/projects/small/tasks/{task['task_number']}/skip/"
        assert client.post(skip, {"reason": "test"}, format="json").status_code == 204
    assert len(taken) == 4
    assert client.post(f"{API}/projects/small/tasks/next/").status_code == 204


# --- Adjudication and gold -------------------------------------------------------------------


def first_disagreement(project):
    queue = adjudication_queue(project)
    return queue[0]


def test_the_adjudication_queue_is_served_most_serious_first_and_filters(demo, lead):
    client = token_client(lead)
    queue = client.get(f"{API}/projects/demo/adjudication/?limit=500").json()
    expected = adjudication_queue(demo)
    assert [item["task_number"] for item in queue["results"]] == [d.task_number for d in expected]
    assert set(queue["results"][0]) == {"task_number", "score", "fields", "reaudit"}
    support = client.get(f"{API}/projects/demo/adjudication/?field=support&limit=500").json()
    assert support["count"] == sum("support" in d.fields for d in expected)
    answerable = client.get(f"{API}/projects/demo/adjudication/?slice=unanswerable").json()
    unanswerable = Answer.objects.filter(project=demo, case__answerable=False)
    numbers = {d.task_number for d in expected} & set(
        unanswerable.values_list("task_number", flat=True)
    )
    assert {item["task_number"] for item in answerable["results"]} == numbers


def test_a_lead_adjudicates_by_task_number_with_version_checks(demo, lead):
    client = token_client(lead)
    item = first_disagreement(demo)
    number = item.task_number
    url = f"{API}/projects/demo/adjudication/{number}/"
    screen = client.get(url).json()
    assert b"variant" not in client.get(url).content
    pending = next(
        (c["index"], f["name"])
        for c in screen["claims"]
        for f in c["fields"]
        if f["source"] == "pending"
    )
    body = {
        "version": screen["version"],
        "rationale": "The passage says otherwise.",
        "decisions": [{"claim": pending[0], "field": pending[1], "value": "contradicted"}]
        if pending[1] == "support"
        else [{"claim": pending[0], "field": pending[1], "value": "minor"}],
    }
    saved = client.post(url, body, format="json")
    assert saved.status_code == 200, saved.content
    assert saved.json()["version"] == screen["version"] + 1
    assert Decision.objects.filter(answer_id=item.answer_pk).count() == 1
    stale = client.post(url, body, format="json")
    assert stale.status_code == 409 and stale.json()["version"] == screen["version"] + 1
    no_rationale = client.post(  # the rationale is optional (issue #34)
        url, {**body, "version": screen["version"] + 1, "rationale": " "}, format="json"
    )
    assert no_rationale.status_code == 200, no_rationale.content
    wrong_field = client.post(
        url,
        {
            **body,
            "version": screen["version"] + 1,
            "decisions": [{"claim": None, "field": "support", "value": "supported"}],
        },
        format="json",
    )
    assert wrong_field.status_code == 400 and list(wrong_field.json()) == ["decisions.0.field"]


def test_gold_streams_as_jsonl_and_csv_and_filters_by_item(demo, lead):
    client = token_client(lead)
    response = client.get(f"{API}/projects/demo/gold.jsonl")
    assert response.status_code == 200 and response["Content-Type"].startswith(JSONL)
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert len(rows) == 101 and {r["item"] for r in rows} == {"claim", "answer"}
    answers = client.get(f"{API}/projects/demo/gold.jsonl?item=answer")
    answer_rows = b"".join(answers.streaming_content).splitlines()
    assert len(answer_rows) == 40
    csv_response = client.get(f"{API}/projects/demo/gold.csv?judge_split=judge_dev")
    assert csv_response["Content-Type"].startswith("text/csv")
    table = list(csv.DictReader(io.StringIO(b"".join(csv_response.streaming_content).decode())))
    assert table and {row["judge_split"] for row in table} == {"judge_dev"}
    assert client.get(f"{API}/projects/demo/gold.jsonl?item=case").status_code == 400


# --- Reports and judges ----------------------------------------------------------------------


def test_agreement_is_the_commands_json(demo, lead):
    client = token_client(lead)
    assert client.get(f"{API}/projects/demo/agreement/").json() == json.loads(
        json.dumps(agreement_report(demo))
    )
    one = client.get(f"{API}/projects/demo/agreement/?slice=adversarial").json()
    assert list(one["slices"]) == ["adversarial"]


def test_evaluation_filters_variants_and_slices_and_checks_limits(demo, lead):
    client = token_client(lead)
    report = client.get(
        f"{API}/projects/demo/evaluation/?k=1,5&variant=verifier&slice=answerable"
        "&latency_budget_ms=100000&unsupported_limit=0.5"
    ).json()
    assert report["ks"] == [1, 5] and list(report["variants"]) == ["verifier"]
    assert list(report["variants"]["verifier"]["generation"]) == ["answerable"]
    assert [row["variant"] for row in report["limits"]] == ["verifier"]
    unknown = client.get(f"{API}/projects/demo/evaluation/?variant=nope")
    assert unknown.status_code == 400 and list(unknown.json()) == ["variant"]
    assert client.get(f"{API}/projects/demo/evaluation/?k=0").status_code == 400
    compared = client.get(f"{API}/projects/demo/evaluation/compare/?a=baseline&b=verifier&k=3")
    assert compared.status_code == 200
    assert set(compared.json()["metrics"]["faithfulness"]["counts"]) >= {"fixed", "broken"}


def test_a_judge_run_is_pushed_listed_and_calibrated(demo, lead):
    client = token_client(lead)
    run_file = (FIXTURES / "demo_judge_run_v2.jsonl").read_bytes()
    pushed = client.post(f"{API}/projects/demo/judge-runs/", {"file": upload(run_file, "v2.jsonl")})
    assert pushed.status_code == 201, pushed.content
    run_id = pushed.json()["id"]
    again = client.post(
        f"{API}/projects/demo/judge-runs/?name={pushed.json()['name']}",
        run_file,
        content_type=JSONL,
    )
    assert again.status_code == 400 and "already has a judge run" in again.json()["errors"][0]
    renamed = client.post(
        f"{API}/projects/demo/judge-runs/?name=second-look", run_file, content_type=JSONL
    )
    assert renamed.status_code == 201
    runs = client.get(f"{API}/projects/demo/judge-runs/").json()
    assert runs["count"] == 3
    assert client.get(f"{API}/projects/demo/judge-runs/?name=second-look").json()["count"] == 1
    run = client.get(f"{API}/projects/demo/judge-runs/{run_id}/").json()
    assert run["verdicts"] == JudgeRun.objects.get(pk=run_id).verdicts.count()
    calibration = client.get(f"{API}/projects/demo/judge-runs/{run_id}/calibration/").json()
    assert calibration["split"] == "judge_test"
    for key in ("n", "coverage", "accuracy", "kappa", "tpr", "tnr", "confusion", "corrected"):
        assert key in calibration
    everything = client.get(f"{API}/projects/demo/judge-runs/{run_id}/calibration/?split=all")
    assert everything.json()["n"] >= calibration["n"]
    other_project = client.get(f"{API}/projects/demo/judge-runs/{run_id + 1000}/")
    assert other_project.status_code == 404


def test_a_judge_run_pushed_with_prefer_respond_async_is_imported_by_a_worker(
    demo, lead, reviewer_a
):
    client = token_client(lead)
    run_file = (FIXTURES / "demo_judge_run_v2.jsonl").read_bytes()
    url = f"{API}/projects/demo/judge-runs/"
    before = JudgeRun.objects.count()

    pushed = client.post(
        url, {"file": upload(run_file, "v2.jsonl")}, HTTP_PREFER="wait=5, Respond-Async"
    )
    assert pushed["Preference-Applied"] == "respond-async"
    job = finished_job(client, pushed)
    assert job["status"] == "succeeded" and job["kind"] == "judge_import", job
    run = JudgeRun.objects.get(pk=job["result"]["run"])
    assert run.name == job["result"]["run_name"] and run.verdicts.count() > 0
    assert client.get(f"{url}{run.pk}/").json()["verdicts"] == run.verdicts.count()

    # A raw body with ?name=, as in the request path; the same name again is refused by line.
    named = client.post(
        f"{url}?name=nightly", run_file, content_type=JSONL, HTTP_PREFER="respond-async"
    )
    assert finished_job(client, named)["result"]["run_name"] == "nightly"
    again = client.post(
        f"{url}?name=nightly", run_file, content_type=JSONL, HTTP_PREFER="respond-async"
    )
    refused = finished_job(client, again)
    assert refused["status"] == "failed"
    assert any("already has a judge run" in error for error in refused["errors"]), refused
    assert JudgeRun.objects.count() == before + 2

    # Without the preference, as before: imported in the request.
    inline = client.post(url, {"file": upload(run_file, "v3.jsonl"), "name": "inline"})
    assert inline.status_code == 201 and "Preference-Applied" not in inline
    # A reviewer gets no further by asking for a worker: refused as without it, no job.
    reviewer = token_client(reviewer_a)
    jobs_before = Job.objects.count()
    for prefer in ("respond-async", ""):
        denied = reviewer.post(url, {"file": upload(run_file, "v4.jsonl")}, HTTP_PREFER=prefer)
        assert denied.status_code == 403, denied.content
    assert JudgeRun.objects.count() == before + 3 and Job.objects.count() == jobs_before


def test_labels_import_through_the_api_is_all_or_nothing(team, lead):
    open_labelling(project=team)
    line = json.dumps({"answer_id": "a2-deadline/baseline", "reviewer": "nobody", "claims": []})
    client = token_client(lead)
    response = client.post(f"{API}/projects/small/labels/", line.encode(), content_type=JSONL)
    job = finished_job(client, response)
    assert job["status"] == "failed" and job["kind"] == "label_import"
    assert all(e.startswith("line 1: ") for e in job["errors"])
    assert not Assignment.objects.exists()


# --- Query counts ----------------------------------------------------------------------------


@pytest.mark.parametrize("extra_members", [0, 5])
def test_member_and_project_lists_cost_a_fixed_number_of_queries(
    team, lead, reviewer_a, extra_members, django_assert_num_queries
):
    from annotate.members.services import add_member

    for i in range(extra_members):
        add_member(project=team, username=f"extra{i}", role="reviewer")
    client = token_client(lead)
    # token and its owner's others (knox drops expired ones), membership (project_for),
    # count, page
    with django_assert_num_queries(5):
        assert client.get(f"{API}/projects/small/members/").status_code == 200
    with django_assert_num_queries(4):  # token, owner's tokens, count, page
        assert client.get(f"{API}/projects/").status_code == 200


@pytest.mark.parametrize("skipped", [1, 3])
def test_task_list_and_task_cost_a_fixed_number_of_queries(
    opened, reviewer_a, skipped, django_assert_num_queries, django_assert_max_num_queries
):
    client = token_client(reviewer_a)
    for _ in range(skipped):
        number = client.post(f"{API}/projects/small/tasks/next/").json()["task_number"]
        skip = f"{API}/projects/small/tasks/{number}/skip/"
        client.post(skip, {"reason": "later"}, format="json")
    number = client.post(f"{API}/projects/small/tasks/next/").json()["task_number"]
    with django_assert_num_queries(5):  # token, owner's tokens, membership, count, page
        assert client.get(f"{API}/projects/small/tasks/").json()["count"] == skipped + 1
    # token, owner's tokens, membership, assignment, then the labelling screen's own set (one
    # fewer when the answer has no claims, whose citations need no prefetch)
    with django_assert_max_num_queries(10):
        assert client.get(f"{API}/projects/small/tasks/{number}/").status_code == 200


def test_judge_run_list_costs_a_fixed_number_of_queries(demo, lead, django_assert_num_queries):
    client = token_client(lead)
    client.post(
        f"{API}/projects/demo/judge-runs/?name=copy",
        (FIXTURES / "demo_judge_run.jsonl").read_bytes(),
        content_type=JSONL,
    )
    # token, owner's tokens, membership, count, page, then self-judged counts: variants,
    # verdicts
    with django_assert_num_queries(7):
        assert client.get(f"{API}/projects/demo/judge-runs/").json()["count"] == 2


# --- Tokens, session, schema, docs -----------------------------------------------------------


def test_the_browser_session_works_and_needs_the_csrf_token_to_write(opened, reviewer_a):
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(reviewer_a)
    assert browser.get(f"{API}/projects/small/").json()["role"] == "reviewer"
    refused = browser.post(f"{API}/projects/small/tasks/next/")
    assert refused.status_code == 403 and "CSRF" in refused.json()["detail"]


def test_a_script_without_a_token_gets_401_with_the_scheme_to_use(db):
    response = APIClient().get(f"{API}/projects/")
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Token"


def test_the_api_root_says_who_you_are_and_where_to_start(db, lead):
    client = token_client(lead)
    root = client.get(f"{API}/")
    assert root.status_code == 200 and root["Content-Type"] == "application/json"
    body = root.json()
    assert body == {
        "user": lead.username,
        "projects": "http://testserver/api/v1/projects/",
        "project": "http://testserver/api/v1/projects/{slug}/",
        "job": "http://testserver/api/v1/jobs/{id}/",
        "schema": "http://testserver/api/schema/",
        "docs": "http://testserver/api/docs/",
        "token": "http://testserver/account/token/",
    }
    assert client.get(body["projects"]).status_code == 200
    assert client.get(body["schema"]).status_code == 200
    assert APIClient().get(f"{API}/").status_code == 401  # as the rest of the API


def test_unknown_api_paths_are_json_404s(db, lead):
    response = token_client(lead).get(f"{API}/projects/small/tasks/not-a-number/")
    assert response.status_code == 404 and response.json() == {"detail": "Not found."}


def test_the_schema_and_its_docs_are_served_without_a_cdn(db):
    client = APIClient()
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    paths = json.loads(schema.content)["paths"]
    assert "/api/v1/projects/{slug}/tasks/{number}/submit/" in paths
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower()
    # Nothing inline (the Content-Security-Policy forbids it): the start-up script is a file.
    assert "<style" not in html and re.findall(r"<script(?![^>]*\bsrc=)", html) == []
    script = client.get("/api/docs/?script=")
    assert script["Content-Type"].startswith("application/javascript")
    assert '"validatorUrl": null' in script.content.decode()
    assert client.options("/api/docs/").status_code == 405  # was a 500 (a missing template)


def test_the_docs_assets_are_among_the_static_files():
    if not apps.is_installed("drf_spectacular_sidecar"):
        pytest.skip("add 'drf_spectacular_sidecar' to INSTALLED_APPS to serve the docs' assets")
    for name in ("swagger-ui-bundle.js", "swagger-ui-standalone-preset.js", "swagger-ui.css"):
        assert finders.find(f"drf_spectacular_sidecar/swagger-ui-dist/{name}")


def test_the_label_schema_is_set_by_a_lead_in_draft_and_followed_by_the_task_api(
    team, lead, reviewer_a, shared_queue_start
):
    from annotate.projects.opening import open_labelling

    url = f"{API}/projects/small/label-schema/"
    assert (
        token_client(reviewer_a).put(url, {"support": "binary"}, format="json").status_code == 403
    )
    bad = token_client(lead).put(
        url, {"support": "binary", "claim_fields": ["mood"]}, format="json"
    )
    assert bad.status_code == 400 and "claim_fields" in bad.json()
    ok = token_client(lead).put(
        url, {"support": "binary", "claim_fields": ["evidence"]}, format="json"
    )
    assert ok.status_code == 200
    assert ok.json()["label_schema"] == {
        "support": "binary",
        "claim_fields": ["evidence"],
        "answer_fields": [],
    }
    open_labelling(project=team)
    locked = token_client(lead).put(url, {"support": "three_way"}, format="json")
    assert locked.status_code == 409
    client = token_client(reviewer_a)
    task = client.post(f"{API}/projects/small/tasks/next/").json()
    assert task["label_schema"]["support"] == "binary"
    number = task["task_number"]
    refused = client.patch(
        f"{API}/projects/small/tasks/{number}/claims/0/",
        {"support": "supported", "severity": "none"},
        format="json",
    )
    assert refused.status_code == 400 and "claims.0.severity" in json.dumps(refused.json())
    saved = client.patch(
        f"{API}/projects/small/tasks/{number}/claims/0/", {"support": "unsupported"}, format="json"
    )
    assert saved.status_code == 200
    assert set(saved.json()["label"]) == {
        "support",
        "evidence_ids",
        "evidence_quote",
        "note",
        "version",
    }
    answer = client.patch(
        f"{API}/projects/small/tasks/{number}/answer/", {"relevance": 2}, format="json"
    )
    assert answer.status_code == 400 and "relevance" in json.dumps(answer.json())


def test_a_slice_of_the_evaluation_of_a_project_without_judgments_is_no_500(demo, lead):
    """Without relevance judgments retrieval is not available (None, never a number): the
    slice filter passes it through instead of failing on it."""
    from annotate.models import Judgment

    Judgment.objects.filter(case__project=demo).delete()
    report = token_client(lead).get(f"{API}/projects/demo/evaluation/?k=5&slice=answerable")
    assert report.status_code == 200, report.content[:300]
    for variant in report.json()["variants"].values():
        assert variant["retrieval"] is None
        assert list(variant["generation"]) == ["answerable"]
