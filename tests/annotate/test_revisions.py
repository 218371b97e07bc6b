"""Reports are kept per project revision (annotate.common.computed), and every write that
changes a report moves the revision: a lead never reads a report of data that has since
changed. (Once annotate.report_cache's data version: a fingerprint of counts and largest ids.)"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate.adjudication.queue import adjudication_queue
from annotate.common import computed
from annotate.gold.summary import label_states
from annotate.imports.bundle_import import import_bundle
from annotate.labelling.services import reopen_task
from annotate.members.services import add_member
from annotate.models import Assignment, Claim, Passage, Project, Role
from annotate.projects.boundaries import adjust_span, edit_citations, split_claim
from annotate.projects.opening import open_labelling
from annotate.projects.services import set_label_schema
from annotate.report_kinds import QUEUE
from annotate.schema import LabelSchema
from tests.conftest import (
    FIXTURES,
    PASSWORD,
    decide_support,
    import_fixture,
    labelled_demo,
    project_calls,
)

pytestmark = pytest.mark.django_db
SMALL = (FIXTURES / "small.jsonl").read_text()


def version(project) -> int:
    return computed.revisions(project)[0]


def data_versions(project) -> tuple[int, int]:
    """The project's revision and content revision."""
    return computed.revisions(project)


def delete_in_the_admin(client, obj) -> None:
    """Delete through the Django admin, as an administrator would (the admin moves the
    revisions; a deletion in SQL, behind the application's back, does not)."""
    meta = obj._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_delete", args=[obj.pk])
    assert client.post(url, {"post": "yes"}).status_code == 302


def reimport(project, edit) -> None:
    """Import the small bundle again with one line changed by ``edit`` (replace on)."""
    lines = [json.loads(line) for line in SMALL.splitlines()]
    for row in lines:
        edit(row)
    import_bundle(lines=[json.dumps(r) for r in lines], project_slug=project.slug, replace=True)


@pytest.fixture
def labelled(db, reviewer_a, reviewer_b, lead):
    return labelled_demo(
        reviewers=[reviewer_a.username, reviewer_b.username], leads=[lead.username]
    )


def test_the_version_is_stable_while_nothing_changes(labelled):
    assert version(labelled) == version(labelled)


def test_a_kept_report_is_served_until_the_data_changes(labelled, lead):
    reports = computed.reports_of(labelled)
    calls = []

    def compute():
        calls.append(1)
        return adjudication_queue(labelled)

    first = reports.get(QUEUE, "", compute)
    assert computed.reports_of(labelled).get(QUEUE, "", compute) is first
    assert len(calls) == 1
    decide_support(labelled, lead)
    again = computed.reports_of(labelled).get(QUEUE, "", compute)
    assert len(calls) == 2 and again is not first


def test_a_decision_a_reopen_and_a_new_submission_each_change_the_version(labelled, lead):
    before = version(labelled)
    decide_support(labelled, lead)
    decided = version(labelled)
    assert decided != before
    # a reviewer reopens a task nobody adjudicates yet: their label set leaves the reports
    free = (
        Assignment.objects.filter(project=labelled, status=Assignment.Status.SUBMITTED)
        .exclude(answer__adjudication__isnull=False)
        .first()
    )
    Assignment.objects.filter(pk=free.pk).update(  # as if submitted a moment ago
        undo_until=timezone.now() + timedelta(minutes=5)
    )
    reopen_task(assignment=free)
    reopened = version(labelled)
    assert reopened != decided


def test_gold_imported_from_elsewhere_changes_the_version_and_not_the_content(labelled):
    """import_gold is a label write: every report moves with it (the same file again moves
    nothing), and what reads no label (the blinding check) stays kept."""
    from annotate.imports.gold_import import import_gold
    from tests.conftest import gold_for_every_answer

    data, content = data_versions(labelled)
    lines = gold_for_every_answer(labelled, note="from elsewhere")
    import_gold(lines=lines, project=labelled, source="bench", file_name="bench.jsonl")
    imported, unchanged = data_versions(labelled)
    assert imported != data and unchanged == content
    import_gold(lines=lines, project=labelled, source="bench", file_name="bench.jsonl")
    assert data_versions(labelled) == (imported, content)
    replaced = [line.replace(b"from elsewhere", b"corrected") for line in lines[:1]]
    import_gold(
        lines=replaced, project=labelled, source="bench", file_name="v2.jsonl", replace=True
    )
    after, still = data_versions(labelled)
    assert after != imported and still == content


def test_reimports_that_change_cases_judgments_or_latency_change_the_version(
    db, reviewer_a, reviewer_b
):
    project = import_fixture("small.jsonl", "small")
    versions = [version(project)]

    def flag(row):
        if row.get("case_id") == "missing-rate" and row["type"] == "case":
            row["adversarial"] = True

    def grade(row):
        if row["type"] == "judgment" and row["case_id"] == "a2-deadline":
            row["grade"] = 2 if row["grade"] == 1 else row["grade"]

    def latency(row):
        if row["type"] == "answer" and row["answer_id"] == "a2-deadline/baseline":
            row["elapsed_ms"] = 999.0

    for edit in (flag, grade, latency):
        reimport(project, edit)
        versions.append(version(project))
    assert len(set(versions)) == len(versions), versions


def test_boundary_edits_passage_deletion_schema_and_opening_change_the_version(
    db, reviewer_a, reviewer_b, admin_client
):
    project = import_fixture("small.jsonl", "small")
    versions = [version(project)]
    claim = Claim.objects.filter(answer__project=project).order_by("answer_id", "ordinal").first()
    adjust_span(claim=claim, start=claim.start, end=claim.end - 1)
    versions.append(version(project))
    claim.refresh_from_db()
    split_claim(claim=claim, at=claim.text.index(" ") + claim.start + 1)
    versions.append(version(project))
    edit_citations(claim=Claim.objects.get(pk=claim.pk), cited_ids=["no-such-passage"])
    versions.append(version(project))
    set_label_schema(project=project, schema=LabelSchema("binary", (), ()))
    versions.append(version(project))
    for person in ("alice", "bob"):
        add_member(project=project, username=person, role=Role.REVIEWER)
    project = open_labelling(project=project)
    versions.append(version(project))
    delete_in_the_admin(admin_client, Passage.objects.get(project=project, passage_id="notes-18"))
    versions.append(version(project))
    assert len(set(versions)) == len(versions), versions


def test_the_evaluation_page_shows_a_decision_at_once(client, labelled, lead):
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("evaluation:report", kwargs={"slug": labelled.slug})

    def faithfulness_rows():
        body = b"".join(client.get(url + "?format=csv&table=generation").streaming_content)
        return [line for line in body.decode().splitlines() if ",faithfulness," in line]

    before = faithfulness_rows()
    assert faithfulness_rows() == before  # kept
    decide_support(labelled, lead)
    assert faithfulness_rows() != before


def test_the_gold_page_and_every_view_of_the_queue_share_one_derivation(
    client, labelled, lead, derived_shares
):
    """Deriving every pair took 1.1-1.3 s at 10,000 answers, and the gold page, the queue and
    each filter of the queue did it again. Now one derivation serves them all, until a
    decision changes the data: then the next page derives again, for all of them -- only the
    decided answer, the other answers' shares are kept."""
    derived = derived_shares
    client.login(username=lead.username, password=PASSWORD)
    slug = labelled.slug
    pages = [
        reverse("gold", args=[slug]),
        reverse("adjudication_queue", args=[slug]),
        reverse("adjudication_queue", args=[slug]) + "?slice=adversarial",
    ]
    for url in pages[:3]:
        assert client.get(url).status_code == 200
    doubly = set(label_states(labelled))
    assert derived == [doubly] and len(doubly) > 1
    pair = decide_support(labelled, lead)
    assert client.get(pages[0]).status_code == 200
    assert derived == [doubly, {pair.answer_id}]
    assert client.get(pages[1]).status_code == 200
    assert derived == [doubly, {pair.answer_id}]


def test_a_summary_kept_as_shares_is_the_summary_derived_afresh(
    labelled, reviewer_a, reviewer_b, lead
):
    """After each kind of change to the labels -- a decision, a label set reopened and
    submitted again with other labels, one reopened, an answer newly labelled twice -- the
    summary built from kept shares and the answers that changed is the one derived from
    nothing."""
    from annotate.gold.selectors import pair_summary
    from annotate.labelling.services import submit_labels
    from annotate.models import Answer
    from tests.annotate.test_labelling import label_everything

    reports = lambda: computed.reports_of(labelled)  # noqa: E731
    summaries = []

    def check():
        kept = pair_summary(labelled, reports())
        assert kept == pair_summary(labelled)
        summaries.append(kept)

    check()
    decide_support(labelled, lead)
    check()
    free = (
        Assignment.objects.filter(project=labelled, reviewer=reviewer_a, status="submitted")
        .exclude(answer__adjudication__isnull=False)
        .order_by("pk")
    )
    Assignment.objects.filter(pk__in=[a.pk for a in free[:2]]).update(  # submitted just now
        undo_until=timezone.now() + timedelta(minutes=5)
    )
    task, other = free[:2]
    # reopened and submitted again with other labels, between two reads: the same label
    # sets as before, one of them at its next revision
    before = summaries[-1]
    reopen_task(assignment=task)
    task.refresh_from_db()
    label_everything(task)  # every claim insufficient_evidence
    assert not submit_labels(assignment=task)
    check()
    assert summaries[-1] != before
    reopen_task(assignment=other)
    check()  # that answer has one label set now: it leaves the summary
    assert summaries[-1].answers.total() == summaries[-2].answers.total() - 1
    unlabelled = Answer.objects.filter(project=labelled).exclude(assignments__status="submitted")
    open_answer = unlabelled.first()
    for reviewer in (reviewer_a, reviewer_b):
        held = Assignment.objects.create(project=labelled, answer=open_answer, reviewer=reviewer)
        label_everything(held)
        assert not submit_labels(assignment=held)
    check()
    assert summaries[-1].answers.total() == summaries[-2].answers.total() + 1


def test_the_cache_can_be_switched_off(labelled, settings):
    settings.CLAIMDESK_REPORT_CACHE = False
    calls = []
    reports = computed.reports_of(labelled)
    reports.get(QUEUE, "x", lambda: calls.append(1))
    reports.get(QUEUE, "x", lambda: calls.append(1))
    assert len(calls) == 2


def test_each_project_has_its_own_revision(db, reviewer_a, reviewer_b):
    """Writes to one project leave another's reports current."""
    first = import_fixture("small.jsonl", "small")
    version_of_first = version(first)
    other = import_fixture("demo.jsonl", "demo")
    set_label_schema(project=other, schema=LabelSchema("binary", (), ()))
    assert version(other) > 0
    assert version(first) == version_of_first


def test_reading_the_revision_is_one_query_of_the_project_row(labelled, django_assert_num_queries):
    """The data version took two queries, the claims' scan skipped only once labelling was
    open; the revision is one row's two columns, whatever the project's size or state."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        version(labelled)
    (query,) = queries.captured_queries
    assert "annotate_project" in query["sql"] and "annotate_claim" not in query["sql"]
    Project.objects.filter(pk=labelled.pk).update(state=Project.State.DRAFT)
    with django_assert_num_queries(1):
        version(labelled)


def test_the_content_version_moves_with_the_answers_not_with_the_labels(
    labelled, lead, admin_client
):
    """What reads no label (the blinding check) is kept while reviewers submit and leads
    decide; a change of the answers themselves still moves it."""
    data, content = data_versions(labelled)
    assert data == version(labelled)
    decide_support(labelled, lead)
    decided, unchanged = data_versions(labelled)
    assert decided != data and unchanged == content
    free = (
        Assignment.objects.filter(project=labelled, status=Assignment.Status.SUBMITTED)
        .exclude(answer__adjudication__isnull=False)
        .first()
    )
    Assignment.objects.filter(pk=free.pk).update(undo_until=timezone.now() + timedelta(minutes=5))
    reopen_task(assignment=free)
    assert data_versions(labelled)[1] == content
    # the answers change: a passage goes, and with it what the screen shows
    delete_in_the_admin(admin_client, Passage.objects.filter(project=labelled).first())
    assert data_versions(labelled)[1] != content


def test_the_set_up_page_checks_blinding_once_while_reviewers_label(
    client, labelled, lead, monkeypatch
):
    from annotate.projects import views

    checks = project_calls(monkeypatch, views, "blinding_check")
    lead.set_password(PASSWORD)
    lead.save()
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("project_setup", args=[labelled.slug])
    assert client.get(url).status_code == 200
    decide_support(labelled, lead)  # the labels move on ...
    assert client.get(url).status_code == 200
    assert checks == [labelled.slug]  # ... the answers did not
