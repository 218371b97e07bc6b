"""What the client raises, against a live server: a refused file's every line (from the
request and from its job), 400 field paths, 401/403/429, 404, 409, and 503 sent again after
its Retry-After; jobs polled to their end, a replace's deletions confirmed by a retry, a job
that no worker took."""

from __future__ import annotations

import json
import uuid

import pytest
from claimdesk_client import (
    AuthError,
    ClaimdeskError,
    Client,
    Conflict,
    JobFailed,
    LineError,
    LineErrors,
    NotFound,
    Refused,
    Unavailable,
)

from annotate.models import Answer, Project
from evaluation.models import JudgeRun, Verdict
from jobs.models import Job
from tests.conftest import FIXTURES

pytestmark = pytest.mark.django_db(transaction=True)

SMALL = (FIXTURES / "small.jsonl").read_text().splitlines()


def write(tmp_path, name: str, lines: list) -> str:
    path = tmp_path / name
    text = [line if isinstance(line, str) else json.dumps(line) for line in lines]
    path.write_text("\n".join(text))
    return str(path)


def broken_small(tmp_path) -> str:
    """small.jsonl with line 14 (a judgment) not JSON and line 10's answer naming an unknown
    case."""
    lines = list(SMALL)
    lines[13] = "{not json"
    lines[9] = json.dumps({**json.loads(lines[9]), "case_id": "no-such-case"})
    return write(tmp_path, "broken.jsonl", lines)


# --- A refused file: every line --------------------------------------------------------------


def test_a_bundle_with_bad_lines_raises_line_errors_with_their_numbers(claimdesk, tmp_path):
    with pytest.raises(LineErrors) as refused:
        claimdesk.import_bundle(broken_small(tmp_path), project="small")
    error = refused.value
    assert isinstance(error, Refused) and isinstance(error, ClaimdeskError)
    assert sorted({problem.line for problem in error.lines}) == [10, 14]
    assert all(problem.unit == "line" for problem in error.lines)
    assert any("no-such-case" in problem.message for problem in error.lines)
    # The job it came from, with the API's own text of every line.
    assert error.job["status"] == "failed" and error.status is None
    assert [str(problem) for problem in error.lines] == error.job["errors"]
    assert error.errors == {"errors": error.job["errors"]}
    assert error.summary == error.job["summary"]
    assert "line 14: " in str(error) and "nothing was written" in str(error)
    assert not Project.objects.filter(slug="small").exists()


def test_a_refused_csv_names_its_rows(claimdesk, tmp_path):
    rows = (FIXTURES / "ragas" / "baseline.csv").read_text().splitlines()
    rows[2] = "only one column"
    path = write(tmp_path, "broken.csv", rows)
    with pytest.raises(LineErrors) as refused:
        claimdesk.import_ragas(path, project="rag", variant="baseline")
    assert {problem.unit for problem in refused.value.lines} == {"row"}
    assert 3 in {problem.line for problem in refused.value.lines}


def test_an_empty_file_is_refused_at_once(claimdesk, tmp_path):
    with pytest.raises(LineErrors) as refused:
        claimdesk.import_bundle(write(tmp_path, "empty.jsonl", ["", "  "]), project="empty")
    assert refused.value.status == 400 and refused.value.job is None
    assert refused.value.lines == [LineError(None, "The file is empty.")]


def test_a_judge_run_with_bad_lines_in_the_request_and_by_a_worker(claimdesk, tmp_path):
    claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small")
    run = {"type": "run", "judge": "j", "model": "m/x", "prompt": "p"}
    verdict = {"type": "verdict", "answer_id": "a2-deadline/baseline", "raw": "{}"}
    lines = [run, {**verdict, "claim_index": 0, "label": "supported"}, "[1, 2", {"type": "x"}]
    path = write(tmp_path, "run.jsonl", lines)
    with pytest.raises(LineErrors) as refused:
        claimdesk.push_judge_run(path, project="small")
    assert refused.value.status == 400 and refused.value.job is None
    assert {problem.line for problem in refused.value.lines} == {3, 4}
    with pytest.raises(LineErrors) as in_job:
        claimdesk.push_judge_run(path, project="small", background=True)
    assert in_job.value.job["kind"] == "judge_import"
    assert in_job.value.lines == refused.value.lines
    assert not JudgeRun.objects.exists()


def test_labels_with_bad_lines(claimdesk, tmp_path):
    claimdesk.import_bundle(FIXTURES / "demo.jsonl", project="demo")
    for name in ("alice", "bob"):
        claimdesk.add_member("demo", name, role="reviewer")
    claimdesk.open_labelling("demo")
    labels = (FIXTURES / "demo_labels.jsonl").read_text().splitlines()
    labels[1] = json.dumps({**json.loads(labels[1]), "reviewer": "nobody-here"})
    with pytest.raises(LineErrors) as refused:
        claimdesk.import_labels(write(tmp_path, "labels.jsonl", labels), project="demo")
    assert [problem.line for problem in refused.value.lines] == [2]


def test_the_message_lists_twenty_problems_and_counts_the_rest():
    lines = [LineError(n, "bad") for n in range(1, 31)]
    message = str(LineErrors(lines))
    assert "30 problem(s)" in message and "line 20: bad" in message
    assert "line 21: bad" not in message and "... and 10 more (see .lines)" in message


# --- Other answers ---------------------------------------------------------------------------


def test_400_keeps_the_apis_field_paths(claimdesk, connect, reviewer_a):
    claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small")
    with pytest.raises(Refused) as refused:
        claimdesk.add_member("small", "al ice", role="boss")
    assert refused.value.status == 400
    assert set(refused.value.errors) == {"username", "role"}
    assert "role: " in str(refused.value) and "POST /api/v1/projects/small/members/" in str(
        refused.value
    )
    with pytest.raises(Refused) as refused:
        claimdesk.evaluation("small", k=[0])
    assert list(refused.value.errors) == ["k"]
    # A nested one: a reviewer's draft of the answer's label with a relevance off the scale.
    claimdesk.add_member("small", reviewer_a.username, role="reviewer")
    claimdesk.open_labelling("small")
    reviewer = connect(reviewer_a)
    task = reviewer.request("POST", "projects/small/tasks/next/")
    number = task["task_number"]
    with pytest.raises(Refused) as refused:
        reviewer.request("PATCH", f"projects/small/tasks/{number}/answer/", json={"relevance": 9})
    assert list(refused.value.errors) == ["answer.relevance"]


def test_404_for_what_is_not_there_or_not_yours(claimdesk, connect, outsider):
    claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small")
    for call in (
        lambda: claimdesk.project("nope"),
        lambda: claimdesk.judge_run("small", 999),
        lambda: claimdesk.calibration("small", "no-such-judge"),
        lambda: claimdesk.job(str(uuid.uuid4())),
        lambda: connect(outsider).project("small"),  # exists, but not for them
    ):
        with pytest.raises(NotFound) as missing:
            call()
        assert missing.value.status == 404


def test_401_403_and_429_are_auth_errors(claimdesk, connect, live_server, reviewer_a, settings):
    claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small")
    claimdesk.add_member("small", reviewer_a.username, role="reviewer")
    with pytest.raises(AuthError) as denied:
        connect(reviewer_a).agreement("small")  # a lead's report
    assert denied.value.status == 403
    settings.CLAIMDESK_TOKEN_FAILURE_LIMIT = 1
    with Client(live_server.url, "not-a-token") as wrong:
        with pytest.raises(AuthError) as unknown:
            wrong.whoami()
        assert unknown.value.status == 401
        with pytest.raises(AuthError) as paused:
            wrong.whoami()
    assert paused.value.status == 429 and paused.value.retry_after > 0


def test_409_is_a_conflict(claimdesk):
    claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small")
    claimdesk.open_labelling("small")
    with pytest.raises(Conflict) as conflict:
        claimdesk.open_labelling("small")
    assert conflict.value.status == 409 and conflict.value.body["detail"]
    with pytest.raises(Conflict):
        claimdesk.set_label_schema("small", support="binary")


@pytest.fixture
def queue_down_once(monkeypatch):
    """The task queue refuses the next upload's job (a 503 with Retry-After), then is back."""
    from jobs import accept, framework

    real, calls = accept.start_import, []

    def start_import(**kwargs):
        calls.append(kwargs["kind"])
        if len(calls) == 1:
            raise framework.BackendUnavailable("Redis is restarting")
        return real(**kwargs)

    monkeypatch.setattr(accept, "start_import", start_import)
    return calls


def test_503_is_sent_again_after_retry_after_when_asked(claimdesk, queue_down_once):
    waits = []
    claimdesk.retries = 1
    claimdesk.sleep = waits.append
    # An open file is sent again from where it stood: read to its end by the first attempt,
    # it would arrive empty ("The file is empty.").
    with open(FIXTURES / "small.jsonl", "rb") as bundle:
        job = claimdesk.import_bundle(bundle, project="small")
    assert job["status"] == "succeeded" and job["file_name"] == "small.jsonl"
    assert waits == [10.0] and len(queue_down_once) == 2


def test_503_raises_unavailable_without_retries(claimdesk, queue_down_once):
    with pytest.raises(Unavailable) as unavailable:
        claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small")
    assert unavailable.value.status == 503 and unavailable.value.retry_after == 10.0
    assert not Job.objects.exists()
    assert claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small")["status"] == (
        "succeeded"
    )


# --- Jobs ------------------------------------------------------------------------------------


def test_wait_polls_a_queued_job_until_a_worker_has_run_it(claimdesk, database_tasks):
    """With the database backend and no worker the upload's job waits in the queue; the
    client polls it, and between two polls a worker (here the test) runs it."""
    from jobs import services

    job = claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small", wait=False)
    assert job["status"] == "queued"
    polls = []

    def worker_runs_it(seconds):
        polls.append(seconds)
        if len(polls) == 2:
            services.run(job["id"])

    claimdesk.sleep = worker_runs_it
    claimdesk.poll_interval = 0.25
    done = claimdesk.wait(job)
    assert done["status"] == "succeeded" and polls == [0.25, 0.25]
    assert done["result"]["counts"]["answer"]["created"] == 4 == Answer.objects.count()


def test_a_job_no_worker_took_raises_and_is_retried(claimdesk, database_tasks):
    from jobs import services

    job = claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small", wait=False)
    Job.objects.filter(pk=job["id"]).update(
        created_at=Job.objects.get().created_at.replace(year=2020)
    )
    with pytest.raises(JobFailed) as lost:
        claimdesk.wait(job)
    assert lost.value.job["retryable"] and "no worker took it" in str(lost.value)
    claimdesk.sleep = lambda seconds: services.run(job["id"])
    assert claimdesk.retry(job)["status"] == "succeeded"


def test_wait_timeout(claimdesk, database_tasks):
    claimdesk.wait_timeout = 0
    job = claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small", wait=False)
    with pytest.raises(TimeoutError, match=f"job {job['id']} did not end"):
        claimdesk.wait(job)


def test_a_replace_that_deletes_fails_listing_them_until_confirmed(claimdesk, tmp_path):
    """Verdicts about an answer whose claims a replace proposes afresh would go: the job
    fails with the deletions; retrying it with the confirmation imports the same file."""
    claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small")
    run = [{"type": "run", "judge": "j", "model": "m/x", "prompt": "p"}] + [
        {"type": "verdict", "answer_id": "a2-deadline/baseline", "claim_index": i, "raw": "{}"}
        | {"label": "supported"}
        for i in (0, 1)
    ]
    claimdesk.push_judge_run(write(tmp_path, "run.jsonl", run), project="small")
    lines = list(SMALL)
    answer = json.loads(lines[8])
    lines[8] = json.dumps({**answer, "text": answer["text"] + " No penalty.", "claims": None})
    changed = write(tmp_path, "changed.jsonl", lines)
    with pytest.raises(JobFailed) as refused:
        claimdesk.import_bundle(changed, project="small", replace=True)
    assert refused.value.deletions and "deletes data" in refused.value.failure
    assert Verdict.objects.count() == 2
    done = claimdesk.retry(refused.value.job, confirm_deletions=True)
    assert done["status"] == "succeeded" and Verdict.objects.count() == 0
    # Confirmed up front, the same holds in one call.
    claimdesk.push_judge_run(write(tmp_path, "run.jsonl", run), project="small", name="k")
    lines[8] = json.dumps({**answer, "text": answer["text"] + " None.", "claims": None})
    again = write(tmp_path, "again.jsonl", lines)
    job = claimdesk.import_bundle(again, project="small", replace=True, confirm_deletions=True)
    assert job["status"] == "succeeded" and Verdict.objects.count() == 0


def test_request_reaches_any_endpoint(claimdesk):
    claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small")
    assert claimdesk.request("GET", "projects/small/members/lena/") == {
        "username": "lena",
        "role": "lead",
    }
    assert claimdesk.request("GET", "/api/v1/projects/small/")["slug"] == "small"
    claimdesk.add_member("small", "alice", role="reviewer")
    assert claimdesk.request("DELETE", "projects/small/members/alice/") is None
