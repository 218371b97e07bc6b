"""The labelling screen's hot queries stay bounded by an index however large the database
grows. A second project, much larger than the reviewer's, fills the tables; after ANALYZE,
every statement of the task page, a draft save, next task and submit is EXPLAINed, and each
read of answers, claims, assignments and claim labels must go through an index: a
sequential scan there would cost every request the whole table (the progress count once
did, counting every project's answers to keep one)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotate.models import (
    Answer,
    Assignment,
    Case,
    Claim,
    ClaimLabel,
    Membership,
    Project,
    Role,
    Variant,
)
from annotate.projects.opening import open_labelling
from tests.annotate.test_labelling import label_everything
from tests.conftest import PASSWORD

pytestmark = pytest.mark.postgres

BIG_ANSWERS = 4000
WATCHED = {
    "annotate_answer",
    "annotate_claim",
    "annotate_assignment",
    "annotate_claimlabel",
}
# The tables a chunk of the gold export reads by its answers, and a chunk's answers here: the
# share of this project that 500 answers are of a 20,000-answer one.
CHUNK = BIG_ANSWERS // 40
CHUNKED = {"annotate_answer", "annotate_assignment", "annotate_claim", "annotate_claimlabel"}
INDEXED = {"Index Scan", "Index Only Scan", "Bitmap Heap Scan", "Bitmap Index Scan"}


def big_project(reviewers) -> Project:
    """A project ten times the size of anything the reviewer holds: answers, two claims
    each, two submitted assignments per answer, a label per claim and assignment."""
    project = Project.objects.create(slug="big", name="Big", corpus_version="v", state="open")
    variant = Variant.objects.create(project=project, name="v", content_hash="x")
    cases = Case.objects.bulk_create(
        Case(
            project=project,
            case_id=f"c{i}",
            question="q",
            answerable=True,
            adversarial=False,
            content_hash="x",
        )
        for i in range(BIG_ANSWERS)
    )
    answers = Answer.objects.bulk_create(
        Answer(
            project=project,
            case=case,
            variant=variant,
            answer_id=f"a{i}",
            text="One. Two.",
            task_number=i + 1,
            content_hash="x",
        )
        for i, case in enumerate(cases)
    )
    claims = Claim.objects.bulk_create(
        Claim(answer=answer, ordinal=k, text="One.", start=5 * k, end=5 * k + 4)
        for answer in answers
        for k in range(2)
    )
    assignments = Assignment.objects.bulk_create(
        Assignment(project=project, answer=answer, reviewer=person, status="submitted")
        for answer in answers
        for person in reviewers
    )
    by_answer = {}
    for claim in claims:
        by_answer.setdefault(claim.answer_id, []).append(claim)
    ClaimLabel.objects.bulk_create(
        ClaimLabel(assignment=a, claim=c, support="supported")
        for a in assignments
        for c in by_answer[a.answer_id]
    )
    return project


def scans(plan: dict) -> list[tuple[str, str]]:
    """(node type, relation) of every scan in an EXPLAIN (FORMAT JSON) plan."""
    found = []
    if "Relation Name" in plan and plan["Node Type"] != "ModifyTable":  # the write, not a read
        found.append((plan["Node Type"], plan["Relation Name"]))
    for child in plan.get("Plans", []):
        found += scans(child)
    return found


def plan_of(sql: str, options: str = "") -> dict:
    """The statement's plan (EXPLAIN (`options`, FORMAT JSON)), from its root node."""
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN ({options}{', ' if options else ''}FORMAT JSON) {sql}")
        raw = cursor.fetchone()[0]
    return (raw if isinstance(raw, list) else json.loads(raw))[0]["Plan"]


def explain(sql: str) -> list[tuple[str, str]]:
    return scans(plan_of(sql))


def watched_scans(captured) -> dict[str, list[tuple[str, str]]]:
    out = {}
    for query in captured:
        sql = query["sql"]
        if not sql.startswith(("SELECT", "UPDATE", "DELETE", "WITH")):
            continue
        touched = [s for s in explain(sql) if s[1] in WATCHED]
        if touched:
            out[sql] = touched
    return out


@pytest.mark.django_db
def test_the_hot_queries_of_labelling_use_indexes_on_a_large_database(
    client, team, reviewer_a, reviewer_b
):
    others = [
        get_user_model().objects.create_user(username=f"big{i}", password="x") for i in range(2)
    ]
    big_project(others)
    project = open_labelling(project=team)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

    client.login(username=reviewer_a.username, password=PASSWORD)
    take = reverse("take_next", args=[project.slug])
    with CaptureQueriesContext(connection) as next_task:
        assert client.post(take).status_code == 302
    assignment = Assignment.objects.get(reviewer=reviewer_a, status="in_progress")
    number = assignment.answer.task_number
    page_url = reverse("task", args=[project.slug, number])
    client.get(page_url)
    with CaptureQueriesContext(connection) as page:
        assert client.get(page_url).status_code == 200
    claim = assignment.answer.claims.order_by("ordinal").first()
    requests = {"next task": next_task, "page": page}
    if claim is not None:
        save_url = reverse("save_claim", args=[project.slug, number, claim.ordinal])
        passage = assignment.answer.retrieved.first()
        data = {"support": "supported", "version": "0"}
        if passage is not None:
            data["evidence_ids"] = [passage.passage.passage_id]
        with CaptureQueriesContext(connection) as save:
            assert client.post(save_url, data, headers={"HX-Request": "true"}).status_code == 200
        requests["draft save"] = save
    label_everything(assignment)
    with CaptureQueriesContext(connection) as submit:
        assert client.post(reverse("submit", args=[project.slug, number])).status_code == 302
    requests["submit"] = submit

    problems = []
    shapes = {}
    for name, captured in requests.items():
        for sql, touched in watched_scans(captured).items():
            shapes.setdefault(name, set()).update(touched)
            bad = [s for s in touched if s[0] not in INDEXED]
            if bad:
                problems.append(f"{name}: {bad} in\n  {sql}")
    assert not problems, "\n".join(problems)
    # The plans' shape: each request reads the watched tables through their indexes only.
    for name in requests:
        assert shapes.get(name), f"{name} read none of the watched tables?"
        assert {node for node, _ in shapes[name]} <= INDEXED, shapes[name]


def rows_read(sql: str) -> int:
    """Rows the watched tables' scans produced, over all their loops (EXPLAIN ANALYZE)."""

    def walk(node):
        own = 0
        if node.get("Relation Name") in WATCHED and node["Node Type"] != "ModifyTable":
            own = node["Actual Rows"] * node["Actual Loops"]
        return own + sum(walk(child) for child in node.get("Plans", []))

    return walk(plan_of(sql, "ANALYZE"))


@pytest.mark.django_db
def test_a_reviewer_s_progress_reads_their_rows_and_the_open_queue_only(reviewer_a):
    """The progress line on every labelling page: in a project of 4,000 answers, 8,000
    submitted assignments and ten answers still open, it reads the reviewer's own
    assignments and the open-queue index, not every assignment of the project (which it
    once grouped by answer: 8-11 ms a page at 10,000 answers)."""
    from annotate.labelling.selectors import reviewer_progress

    others = [
        get_user_model().objects.create_user(username=f"big{i}", password="x") for i in range(2)
    ]
    project = big_project(others)
    answers = list(Answer.objects.filter(project=project).order_by("task_number"))
    for answer in answers:
        answer.queue_key = answer.task_number / (len(answers) + 1)
        answer.full = answer.task_number > 10
    Answer.objects.bulk_update(answers, ["queue_key", "full"], batch_size=1000)
    # The first ten have room again: their second holder let them go.
    Assignment.objects.filter(answer__in=answers[:10], reviewer=others[1]).update(status="released")
    # The reviewer holds two of the open ten (one submitted, one in progress), one full answer.
    Assignment.objects.bulk_create(
        [
            Assignment(project=project, answer=answers[0], reviewer=reviewer_a, status="submitted"),
            Assignment(project=project, answer=answers[1], reviewer=reviewer_a),
            Assignment(
                project=project, answer=answers[50], reviewer=reviewer_a, status="submitted"
            ),
        ]
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

    with CaptureQueriesContext(connection) as captured:
        progress = reviewer_progress(reviewer_a, project)
    assert (progress.submitted, progress.in_progress, progress.available) == (2, 1, 8)
    assert len(captured) == 2
    read = {query["sql"]: rows_read(query["sql"]) for query in captured}
    assert sum(read.values()) <= 3 + 10 + 3, read  # my rows, the open answers, their joins


@pytest.mark.django_db
def test_the_project_list_counts_each_project_s_answers_by_its_index(client, team, reviewer_a):
    """The project list every person lands on shows each of their projects' answer count.
    Each count is an aggregate straight over the answer table's project index. It once
    joined every answer to the memberships and grouped the wide rows: 8.7 ms a page for a
    reviewer of a 10,000-answer project, against 0.8 ms now."""
    others = [
        get_user_model().objects.create_user(username=f"big{i}", password="x") for i in range(2)
    ]
    big = big_project(others)
    Membership.objects.create(project=big, user=reviewer_a, role=Role.REVIEWER)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

    client.login(username=reviewer_a.username, password=PASSWORD)
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("home"))
    assert response.status_code == 200
    page = response.content.decode()
    for count in (team.answers.count(), BIG_ANSWERS):
        assert f'data-label="Answers">{count}</td>' in page
    [listing] = [q["sql"] for q in captured if "annotate_membership" in q["sql"]]
    counted = [s for s in parented_scans(listing) if s[2] == "annotate_answer"]
    assert counted, listing
    for parent, node, _ in counted:
        assert parent == "Aggregate" and node in INDEXED, counted


def parented_scans(sql: str) -> list[tuple[str, str, str]]:
    """(parent node type, node type, relation) of every scan in the statement's plan."""

    def walk(node, parent):
        found = []
        if "Relation Name" in node:
            found.append((parent, node["Node Type"], node["Relation Name"]))
        for child in node.get("Plans", []):
            found += walk(child, node["Node Type"])
        return found

    return walk(plan_of(sql), "")


@pytest.mark.django_db
def test_releasing_abandoned_tasks_reads_the_tasks_in_progress_only(reviewer_a):
    """Every next_task first releases the project's abandoned tasks. In a project of 8,000
    submitted assignments and one task in progress, that reads the one row in progress (the
    partial index of tasks in progress), not every assignment of the project."""
    from annotate.queue.services import release_abandoned

    others = [
        get_user_model().objects.create_user(username=f"big{i}", password="x") for i in range(2)
    ]
    project = big_project(others)
    answer = Answer.objects.filter(project=project).order_by("task_number").first()
    Assignment.objects.filter(answer=answer, reviewer=others[1]).delete()
    Assignment.objects.create(project=project, answer=answer, reviewer=reviewer_a)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

    with CaptureQueriesContext(connection) as captured:
        assert release_abandoned(project=project) == 0
    [select] = [q["sql"] for q in captured if q["sql"].startswith("SELECT")]
    # Index entries visited do not show as rows: the project's (project, reviewer, status)
    # index yields the one row too, after walking all 8,000 entries. Pages read tell them apart.
    assert pages_read(select) <= 3
    assert "assignment_in_progress_idx" in [index for _, index in explain_indexes(select)]


def pages_read(sql: str) -> int:
    """Shared buffers the statement touched, hit or read (EXPLAIN ANALYZE, BUFFERS)."""
    plan = plan_of(sql, "ANALYZE, BUFFERS")
    return plan["Shared Hit Blocks"] + plan["Shared Read Blocks"]


def explain_indexes(sql: str) -> list[tuple[str, str]]:
    """(node type, index name) of every index scan in the statement's plan."""

    def walk(node):
        found = [(node["Node Type"], node["Index Name"])] if "Index Name" in node else []
        for child in node.get("Plans", []):
            found += walk(child)
        return found

    return walk(plan_of(sql))


@pytest.mark.django_db
def test_the_gold_export_and_queue_read_each_chunk_through_indexes(reviewer_a, monkeypatch):
    """The gold export and the adjudication queue's summary read a project 500 answers at a
    time (here a fortieth of the project, CHUNK). Asked for by a list alone (`= ANY`), a
    chunk's rows cost PostgreSQL one index descent per answer, which it prices above one
    sequential scan of the table, so every chunk read every answer's claims and labels
    again (each chunk of a 10,000-answer export scanned 100,000 claims, 200,000 labels and
    100,000 citations). `__among` adds the list's bounds, which lower the planner's
    estimate until it takes the index (annotate/common/lookups.py says how)."""
    from annotate.gold import exports, summary
    from annotate.gold.exports import gold_rows
    from annotate.gold.summary import pair_summary

    others = [
        get_user_model().objects.create_user(username=f"big{i}", password="x") for i in range(2)
    ]
    project = big_project(others)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    monkeypatch.setattr(exports, "GOLD_CHUNK", CHUNK)
    monkeypatch.setattr(summary, "QUEUE_CHUNK", CHUNK)

    with CaptureQueriesContext(connection) as export:
        rows = sum(1 for _ in gold_rows(project))
    assert rows == BIG_ANSWERS * 3  # two claim rows and an answer row each
    with CaptureQueriesContext(connection) as queue:
        summary = pair_summary(project)
    assert sum(summary.claims.values()) == 2 * BIG_ANSWERS

    read = set()
    for name, captured in (("gold export", export), ("queue summary", queue)):
        chunked = [q["sql"] for q in captured if "= ANY(" in q["sql"]]
        assert len(chunked) >= 4 * BIG_ANSWERS // CHUNK, name
        for sql in chunked:
            touched = [s for s in explain(sql) if s[1] in CHUNKED]
            assert {node for node, _ in touched} <= INDEXED, (name, touched, sql)
            read.update(table for _, table in touched)
    assert read == CHUNKED
