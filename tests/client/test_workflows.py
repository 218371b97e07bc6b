"""A lead's workflows through claimdesk_client against a live server: import a bundle (and a
Ragas dataset, labels, gold from elsewhere) and wait for the job, add members, set the label
schema, open labelling, read the gold set (streamed, and to a CSV file), push judge runs and
read their calibration, agreement and evaluation. What the client returns is checked against
the database and against the same endpoints read without the client."""

from __future__ import annotations

import csv
import io
import json

import pytest
from claimdesk_client import Client
from django.test import Client as DjangoClient

from annotate.api import base
from annotate.models import Answer, Membership, Project, Role
from evaluation.models import JudgeRun
from tests.conftest import FIXTURES

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo(claimdesk):
    """The demo bundle, its two reviewers, labelling open and their labels imported: all
    through the client."""
    claimdesk.import_bundle(FIXTURES / "demo.jsonl", project="demo", name="Demo")
    for name in ("alice", "bob"):
        claimdesk.add_member("demo", name, role="reviewer")
    claimdesk.open_labelling("demo")
    claimdesk.import_labels(FIXTURES / "demo_labels.jsonl", project="demo")
    return "demo"


def read_without_client(user, path: str) -> bytes:
    """An endpoint's body as the server streams it, read with Django's test client."""
    browser = DjangoClient()
    browser.force_login(user)
    response = browser.get(path)
    assert response.status_code == 200
    return b"".join(response.streaming_content)


def test_whoami_names_the_tokens_owner(claimdesk, lead, live_server):
    assert claimdesk.whoami() == lead.username
    # A token read from a file or a terminal keeps its newline: it is not part of the key.
    key = claimdesk.session.headers["Authorization"].removeprefix("Token ")
    with Client(live_server.url, f" {key}\n") as pasted:
        assert pasted.whoami() == lead.username


def test_import_bundle_creates_the_project_waits_for_its_job_and_is_idempotent(claimdesk, lead):
    job = claimdesk.import_bundle(FIXTURES / "demo.jsonl", project="demo", name="Demo")
    assert job["status"] == "succeeded" and job["kind"] == "bundle_import"
    assert job["result"]["created_project"] is True
    assert job["result"]["counts"]["answer"]["created"] == 60 == Answer.objects.count()
    assert Membership.objects.get(project__slug="demo", user=lead).role == Role.LEAD

    again = claimdesk.import_bundle(FIXTURES / "demo.jsonl", project="demo")
    assert again["result"]["counts"]["answer"] == {
        "created": 0,
        "unchanged": 60,
        "replaced": 0,
        "corrected": 0,
    }
    project = claimdesk.project("demo")
    assert (project["slug"], project["name"], project["state"], project["role"]) == (
        "demo",
        "Demo",
        "draft",
        "lead",
    )
    assert [p["slug"] for p in claimdesk.projects()] == ["demo"]
    assert claimdesk.projects(state="open") == []
    assert [p["slug"] for p in claimdesk.projects(role="lead", state="draft")] == ["demo"]


def test_import_bundle_takes_an_open_file_and_without_wait_returns_the_queued_job(claimdesk):
    with open(FIXTURES / "small.jsonl", "rb") as bundle:
        job = claimdesk.import_bundle(bundle, project="small", wait=False)
    # Jobs run in the request in the tests: it has ended by the time the 202 arrives.
    assert job["url"] == f"/api/v1/jobs/{job['id']}/" and job["file_name"] == "small.jsonl"
    assert claimdesk.job(job["id"])["status"] == "succeeded"
    assert claimdesk.wait(job["id"])["result"]["counts"]["answer"]["created"] == 4


def test_projects_reads_every_page(claimdesk, lead, monkeypatch):
    """Lists are paginated: the client asks for the next page until it has `count` items."""
    monkeypatch.setattr(base.Pagination, "max_limit", 2)
    for slug in ("p1", "p2", "p3", "p4", "p5"):
        Membership.objects.create(
            project=Project.objects.create(slug=slug, name=slug.upper()), user=lead, role="lead"
        )
    assert [p["slug"] for p in claimdesk.projects()] == ["p1", "p2", "p3", "p4", "p5"]


def test_import_ragas_makes_a_variants_answers_with_the_label_schema(claimdesk):
    schema = {"support": "binary", "claim_fields": [], "answer_fields": []}
    job = claimdesk.import_ragas(
        FIXTURES / "ragas" / "baseline.jsonl",
        project="rag",
        variant="baseline",
        name="From Ragas",
        label_schema=schema,
    )
    assert job["kind"] == "ragas_import" and job["status"] == "succeeded"
    created = job["result"]["counts"]["answer"]["created"]
    assert created > 0
    assert Answer.objects.filter(project__slug="rag", variant__name="baseline").count() == created
    assert claimdesk.project("rag")["label_schema"] == schema
    second = claimdesk.import_ragas(
        FIXTURES / "ragas" / "verifier.jsonl", project="rag", variant="verifier"
    )
    assert second["result"]["counts"]["answer"]["created"] > 0
    assert set(Answer.objects.values_list("variant__name", flat=True)) == {"baseline", "verifier"}


def test_members_label_schema_and_opening(claimdesk):
    claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small")
    added = claimdesk.add_member("small", "alice", role="reviewer", password="a long passphrase")
    assert added == {"username": "alice", "role": "reviewer"}
    claimdesk.add_member("small", "bob", role="reviewer")
    assert claimdesk.members("small", role="reviewer") == [
        {"username": "alice", "role": "reviewer"},
        {"username": "bob", "role": "reviewer"},
    ]
    project = claimdesk.set_label_schema(
        "small", support="binary", claim_fields=["severity"], answer_fields=["relevance"]
    )
    assert project["label_schema"] == {
        "support": "binary",
        "claim_fields": ["severity"],
        "answer_fields": ["relevance"],
    }
    opened = claimdesk.open_labelling("small")
    assert opened["state"] == "open" == Project.objects.get(slug="small").state


def test_import_labels_then_gold_streams_what_the_endpoint_streams(claimdesk, demo, lead):
    rows = list(claimdesk.gold(demo))
    assert len(rows) == 101
    raw = read_without_client(lead, "/api/v1/projects/demo/gold.jsonl")
    assert rows == [json.loads(line) for line in raw.splitlines()]

    claims = list(claimdesk.gold(demo, item="claim", split="judge_test", decided_only=True))
    assert claims and all(r["item"] == "claim" and r["judge_split"] == "judge_test" for r in claims)
    raw = read_without_client(
        lead,
        "/api/v1/projects/demo/gold.jsonl?item=claim&judge_split=judge_test&decided_only=true",
    )
    assert claims == [json.loads(line) for line in raw.splitlines()]
    with_context = next(claimdesk.gold(demo, item="claim", with_context=True))
    assert with_context["user_input"] and with_context["retrieved_contexts"]


def test_export_gold_writes_the_csv_and_the_jsonl_the_server_sends(claimdesk, demo, lead, tmp_path):
    written = claimdesk.export_gold(tmp_path / "gold.csv", project=demo, item="answer")
    assert written == tmp_path / "gold.csv"
    expected = read_without_client(lead, "/api/v1/projects/demo/gold.csv?item=answer")
    assert written.read_bytes() == expected
    table = list(csv.DictReader(io.StringIO(expected.decode())))
    answers = list(claimdesk.gold(demo, item="answer"))
    assert [row["answer_id"] for row in table] == [row["answer_id"] for row in answers]
    assert {row["item"] for row in table} == {"answer"}

    jsonl = claimdesk.export_gold(tmp_path / "gold.jsonl", project=demo, split="judge_dev")
    expected = read_without_client(lead, "/api/v1/projects/demo/gold.jsonl?judge_split=judge_dev")
    assert jsonl.read_bytes() == expected
    forced = claimdesk.export_gold(tmp_path / "gold.txt", project=demo, format="csv")
    assert forced.read_bytes() == read_without_client(lead, "/api/v1/projects/demo/gold.csv")


def test_a_gold_set_too_large_to_stream_is_read_from_its_export_job(
    claimdesk, demo, settings, lead
):
    from jobs.models import Job

    settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS = 10
    rows = list(claimdesk.gold(demo))
    assert len(rows) == 101
    assert Job.objects.get(kind=Job.Kind.GOLD_EXPORT).status == Job.Status.SUCCEEDED
    settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS = 20_000
    assert rows == list(claimdesk.gold(demo))  # the streamed set is the same


def test_import_gold_from_elsewhere(claimdesk):
    claimdesk.import_bundle(FIXTURES / "halu" / "bundle.jsonl", project="halu")
    for name in ("ann1", "ann2"):
        claimdesk.add_member("halu", name, role="reviewer")
    claimdesk.open_labelling("halu")
    job = claimdesk.import_gold(FIXTURES / "halu" / "gold.jsonl", project="halu", source="bench")
    assert job["kind"] == "gold_import" and job["result"]["source"] == "bench"
    assert job["result"]["created"] == 24
    again = claimdesk.import_gold(FIXTURES / "halu" / "gold.jsonl", project="halu", source="bench")
    assert (again["result"]["created"], again["result"]["unchanged"]) == (0, 24)
    gold = list(claimdesk.gold("halu", item="answer"))
    assert sum(1 for row in gold if row["imported"]["source"] == "bench") == 24 == len(gold)


def test_export_bundle_round_trips_into_a_new_project(claimdesk, tmp_path):
    claimdesk.import_bundle(FIXTURES / "small.jsonl", project="small")
    path = claimdesk.export_bundle(tmp_path / "small-export.jsonl", project="small")
    assert path.read_bytes().startswith(b'{"type": "bundle"')
    copy = claimdesk.import_bundle(path, project="copy")
    assert copy["result"]["counts"]["answer"]["created"] == 4
    assert Answer.objects.filter(project__slug="copy").count() == 4


def test_judge_runs_pushed_in_the_request_and_by_a_worker(claimdesk, demo):
    run = claimdesk.push_judge_run(FIXTURES / "demo_judge_run.jsonl", project=demo)
    assert run["name"] == "strict-judge-v2" and run["verdicts"] > 0
    assert run["id"] == JudgeRun.objects.get(name="strict-judge-v2").pk

    second = claimdesk.push_judge_run(
        FIXTURES / "demo_judge_run.jsonl", project=demo, name="again", background=True
    )
    stored = JudgeRun.objects.get(name="again")
    assert second["id"] == stored.pk and second["verdicts"] == run["verdicts"]
    assert {r["name"] for r in claimdesk.judge_runs(demo)} == {"strict-judge-v2", "again"}
    assert [r["id"] for r in claimdesk.judge_runs(demo, name="again")] == [stored.pk]
    assert claimdesk.judge_runs(demo, model="nobody/none") == []
    assert claimdesk.judge_run(demo, "again") == claimdesk.judge_run(demo, stored.pk) == second


def test_calibration_agreement_and_evaluation(claimdesk, demo):
    run = claimdesk.push_judge_run(FIXTURES / "demo_judge_run.jsonl", project=demo)
    calibration = claimdesk.calibration(demo, run["id"])
    assert calibration["judge"] == "strict-judge-v2"
    assert calibration["split"] == "judge_test" and calibration["n"] > 0
    assert claimdesk.calibration(demo, "strict-judge-v2") == calibration  # by name
    assert claimdesk.calibration(demo, run) == calibration  # the dict the push returned
    everything = claimdesk.calibration(demo, run["id"], split="all")
    assert everything["split"] == "all" and everything["n"] > calibration["n"]

    agreement = claimdesk.agreement(demo)
    assert agreement["project"] == "demo" and agreement["slices"]["all"]["support"]["n"] > 0
    assert set(claimdesk.agreement(demo, slice="answerable")["slices"]) == {"answerable"}
    # no guidelines were written in this demo: every label set was made under "none" (0)
    unversioned = claimdesk.agreement(demo, guideline_version=0)
    assert unversioned["guideline_version"] == 0
    assert unversioned["slices"] == agreement["slices"]

    evaluation = claimdesk.evaluation(demo)
    assert set(evaluation["variants"]) == {"baseline", "verifier"}
    chosen = claimdesk.evaluation(
        demo, k=[1, 5], variants=["verifier"], slice="answerable", unsupported_limit=0.2
    )
    assert set(chosen["variants"]) == {"verifier"}
    assert [limit["variant"] for limit in chosen["limits"]] == ["verifier"]
    comparison = claimdesk.compare(demo, "baseline", "verifier", k=3)
    assert (comparison["a"], comparison["b"]) == ("baseline", "verifier")


def test_a_report_being_computed_is_asked_for_again_after_its_retry_after(
    claimdesk, demo, settings
):
    """A large project's first report is computed by a worker: 202 with Retry-After. The
    client waits that long and asks again (here the worker is the request itself, once the
    task backend is switched to run in process)."""
    from tests.conftest import IMMEDIATE_TASKS
    from tests.workers import DATABASE_TASKS

    settings.TASKS, settings.CLAIMDESK_TASKS = DATABASE_TASKS, "database"
    waits = []

    def worker_computes(seconds):
        waits.append(seconds)
        settings.TASKS, settings.CLAIMDESK_TASKS = IMMEDIATE_TASKS, "immediate"

    claimdesk.sleep = worker_computes
    assert claimdesk.agreement(demo)["project"] == "demo"
    assert waits == [3.0]
