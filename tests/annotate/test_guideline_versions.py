"""Guidelines have versions (SPEC.md "Quality control"): an edit of the text is a new version
with its author and time, the labelling screen shows the current one beside the task, every
submitted label set and every decision records the version it was made under, agreement can
be read per version, and after a change the lead re-audits the gold decided under older
versions (keep it, or re-open it into the adjudication queue)."""

from __future__ import annotations

import importlib
import io
import json
import re
from collections import defaultdict

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotate.adjudication import reaudit
from annotate.adjudication.queue import adjudication_queue
from annotate.common.errors import ServiceError
from annotate.imports.label_import import import_labels
from annotate.labelling.services import save_answer_label, save_claim_label
from annotate.members.services import add_member
from annotate.models import (
    Answer,
    Assignment,
    ClaimLabel,
    Decision,
    GuidelineVersion,
    Project,
    Reaudit,
    Role,
)
from annotate.projects.opening import open_labelling
from annotate.projects.services import update_guidelines
from annotate.queue.services import next_task
from evaluation.reports.agreement import agreement_report
from tests import guidelines
from tests.api import API, token_client
from tests.conftest import PASSWORD, import_fixture
from tests.guidelines import (
    V1,
    V2,
    V3,
    answers_under,
    decide_everything,
    label_lines,
    settled,
)

versioned = guidelines.versioned  # fixture


def _login(client, user):
    client.login(username=user.username, password=PASSWORD)
    return client


# --- Versions --------------------------------------------------------------------------------


def test_an_edit_of_the_text_is_a_new_numbered_version_with_its_author_and_time(client, team, lead):
    url = reverse("guidelines", kwargs={"slug": team.slug})
    _login(client, lead)
    first = client.post(url, {"guidelines": V1, "overlap": 2}, follow=True)
    assert "Guidelines saved as v1." in first.content.decode()
    client.post(url, {"guidelines": V2, "overlap": 2})
    # the same text again (the overlap alone, say) is no new version
    client.post(url, {"guidelines": V2, "overlap": 3})
    versions = list(GuidelineVersion.objects.filter(project=team).order_by("number"))
    assert [(v.number, v.text, v.author) for v in versions] == [(1, V1, lead), (2, V2, lead)]
    assert versions[0].created_at <= versions[1].created_at
    team.refresh_from_db()
    assert (team.guidelines, team.guidelines_version) == (V2, 2)
    assert team.guidelines_changed_at == versions[1].created_at
    page = client.get(url).content.decode()
    start = page.index('id="guideline-versions"')
    table = page[start : page.index("</table>", start)]
    rows = re.findall(r'<th scope="row">v(\d+)( <span class="badge">current</span>)?</th>', table)
    assert rows == [("2", ' <span class="badge">current</span>'), ("1", "")]
    assert table.count(lead.username) == 2


def _label_everything(assignment):
    for claim in assignment.answer.claims.all():
        citations = {c.cited_id: "supports" for c in claim.citations.all() if c.passage is not None}
        save_claim_label(
            assignment=assignment,
            claim=claim,
            data={"support": "insufficient_evidence", "severity": "minor", "citations": citations},
        )
    save_answer_label(
        assignment=assignment,
        data={"relevance": 1, "abstention": "appropriate" if assignment.answer.abstained else ""},
    )


def test_label_sets_made_before_and_after_an_edit_carry_different_versions(
    client, team, reviewer_a, reviewer_b, lead, shared_queue_start
):
    update_guidelines(project=team, guidelines=V1, author=lead)
    project = open_labelling(project=team)
    # on the screen, under v1
    mine = next_task(project=project, reviewer=reviewer_a)
    _label_everything(mine)
    submit = reverse("submit", kwargs={"slug": project.slug, "number": mine.answer.task_number})
    assert _login(client, reviewer_a).post(submit).status_code == 302
    update_guidelines(project=project, guidelines=V2, author=lead)
    # through the API, under v2
    theirs = next_task(project=project, reviewer=reviewer_b)
    _label_everything(theirs)
    number = theirs.answer.task_number
    api = token_client(reviewer_b).post(f"{API}/projects/{project.slug}/tasks/{number}/submit/")
    assert api.status_code == 200, api.content
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.status, mine.guideline_version) == ("submitted", 1)
    assert (theirs.status, theirs.guideline_version) == ("submitted", 2)


def test_imported_label_sets_take_the_version_current_when_they_are_written(versioned):
    lines = label_lines()
    first_half = set(list(lines)[: len(lines) // 2])
    ids = dict(Answer.objects.filter(project=versioned).values_list("pk", "answer_id"))
    under_1 = {ids[pk] for pk in answers_under(versioned, 1)}
    under_2 = {ids[pk] for pk in answers_under(versioned, 2)}
    assert under_1 == first_half and under_2 == set(lines) - first_half
    assert not Assignment.objects.filter(project=versioned, guideline_version=0).exists()


def test_decisions_record_the_guidelines_version_they_were_made_under(versioned, lead):
    pending = [pk for pk in answers_under(versioned, 1) if pk not in settled(versioned)]
    answer = Answer.objects.get(pk=pending[0])
    decide_everything(versioned, answer, lead)
    assert set(
        Decision.objects.filter(answer=answer).values_list("guideline_version", flat=True)
    ) == {2}


# --- The labelling screen --------------------------------------------------------------------


CONTROL = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE SAVEPOINT")


def test_the_labelling_page_shows_the_current_version_beside_the_task_at_no_query_more(
    client, team, reviewer_a, lead
):
    update_guidelines(project=team, guidelines=V1, author=lead)
    update_guidelines(project=team, guidelines=V2, author=lead)
    project = open_labelling(project=team)
    answer = Answer.objects.get(project=project, answer_id="a2-deadline/baseline")
    assignment = Assignment.objects.create(project=project, answer=answer, reviewer=reviewer_a)
    url = reverse("task", kwargs={"slug": project.slug, "number": answer.task_number})
    _login(client, reviewer_a).get(url)  # warm the session

    def measured():
        with CaptureQueriesContext(connection) as captured:
            page = client.get(url)
        assert page.status_code == 200
        return page, [q["sql"] for q in captured if not q["sql"].startswith(CONTROL)]

    page, queries = measured()
    # The version and its date come with the project, in the task's own query: the page
    # costs what it costs without guidelines (test_labelling pins that at nine).
    assert not any("guidelineversion" in sql for sql in queries)
    Project.objects.filter(pk=project.pk).update(
        guidelines="", guidelines_version=0, guidelines_changed_at=None
    )
    bare, without = measured()
    assert len(queries) == len(without) == 9, (queries, without)
    assert "guidelines-panel" not in bare.content.decode()
    body = page.content.decode()
    panel = re.search(r'<aside class="guidelines-panel".*?</aside>', body, re.S).group(0)
    heading = re.search(r'id="guidelines-title">(.*?)</h2>', panel, re.S).group(1)
    assert re.sub(r"<[^>]+>|\s+", " ", heading).split()[:2] == ["Guidelines", "v2"]
    assert "changed" in heading and "ago" in heading
    assert "A hedge (&#x27;may&#x27;, &#x27;about&#x27;) needs no evidence." in panel
    # open beside the question, not folded under a toggle
    assert "<details" not in panel
    assert (
        body.index('id="question-title"')
        < body.index("guidelines-panel")
        < body.index('id="answer-title"')
    )
    assert assignment.pk  # the reviewer's own task


# --- Agreement per version -------------------------------------------------------------------


def _without_version(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "guideline_version"}


def test_agreement_for_one_version_is_agreement_over_just_its_label_sets(versioned):
    by_version = {v: agreement_report(versioned, guideline_version=v) for v in (1, 2)}
    assert by_version[1]["guideline_version"] == 1
    n = {v: r["slices"]["all"]["support"]["n"] for v, r in by_version.items()}
    assert n[1] > 0 and n[2] > 0
    assert n[1] + n[2] == agreement_report(versioned)["slices"]["all"]["support"]["n"]
    # The same report, computed over a project where only v1's label sets are submitted.
    Assignment.objects.filter(project=versioned, guideline_version=2).update(status="released")
    assert _without_version(by_version[1]) == _without_version(agreement_report(versioned))

    # and kappa of support over v1's aligned claim labels, by scikit-learn
    a, b = [], []
    sets = Assignment.objects.filter(project=versioned, guideline_version=1, status="submitted")
    by_answer = defaultdict(list)
    for assignment in sets.order_by("submitted_at", "pk"):
        by_answer[assignment.answer_id].append(assignment.pk)
    for first, second in (pks[:2] for pks in by_answer.values() if len(pks) >= 2):
        labels_b = dict(
            ClaimLabel.objects.filter(assignment_id=second).values_list("claim_id", "support")
        )
        for claim, support in ClaimLabel.objects.filter(assignment_id=first).values_list(
            "claim_id", "support"
        ):
            a.append(support)
            b.append(labels_b[claim])
    support = by_version[1]["slices"]["all"]["support"]
    assert support["n"] == len(a)
    labels = ["supported", "contradicted", "insufficient_evidence"]
    assert support["kappa"] == pytest.approx(cohen_kappa_score(a, b, labels=labels), abs=1e-9)


def test_agreement_by_version_in_the_command_the_api_and_the_page(versioned, client, lead):
    expected = agreement_report(versioned, guideline_version=1)
    out = io.StringIO()
    call_command("agreement", "--project", "demo", "--guideline-version", "1", "--json", stdout=out)
    assert json.loads(out.getvalue()) == json.loads(json.dumps(expected))
    text = io.StringIO()
    call_command("agreement", "--project", "demo", "--guideline-version", "1", stdout=text)
    assert text.getvalue().startswith("Label sets made under guidelines v1 only")
    with pytest.raises(Exception, match="No guidelines version 7"):
        call_command("agreement", "--project", "demo", "--guideline-version", "7")

    api = token_client(lead)
    response = api.get(f"{API}/projects/demo/agreement/", {"guideline_version": 1})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["guideline_version"] == 1
    assert body["slices"] == json.loads(json.dumps(expected["slices"]))
    assert api.get(f"{API}/projects/demo/agreement/", {"guideline_version": 7}).status_code == 400

    url = reverse("agreement", kwargs={"slug": "demo"})
    page = _login(client, lead).get(url, {"guideline_version": 1}).content.decode()
    assert 'id="guideline-version-shown">guidelines v1 only' in page
    shown = re.search(r'<th scope="row">Support</th>\s*<td class="num">(\d+)</td>', page)
    assert int(shown.group(1)) == expected["slices"]["all"]["support"]["n"]
    kappa = expected["slices"]["all"]["support"]["kappa"]
    assert f"{kappa:.2f}" in page[shown.end() : shown.end() + 400]
    assert 'href="?guideline_version=1&amp;format=json"' in page
    assert client.get(url, {"guideline_version": 7}).status_code == 404


# --- Re-audit after a change -----------------------------------------------------------------


def test_the_reaudit_list_holds_exactly_the_gold_decided_under_the_old_version(versioned, lead):
    # A pending answer of v1's half decided under v2: its gold stands under v2 now.
    v1_answers = answers_under(versioned, 1)
    decided_now = next(pk for pk in sorted(v1_answers) if pk not in settled(versioned))
    decide_everything(versioned, Answer.objects.get(pk=decided_now), lead)
    expected = (settled(versioned) & v1_answers) - {decided_now}
    found = reaudit.reaudit_list(versioned)
    assert found.current == 2
    assert {row.answer_pk for row in found.rows} == expected and expected
    assert {row.version for row in found.rows} == {1}
    assert found.by_version == {1: len(expected)}
    assert found.current_count == len(settled(versioned) - expected)
    assert {row.state for row in found.rows} == {"agreed"}


def test_a_decision_made_under_v1_is_listed_as_adjudicated_after_the_change(
    reviewer_a, reviewer_b, lead, outsider
):
    project = import_fixture("demo.jsonl", "demo")
    for person in (reviewer_a, reviewer_b):
        add_member(project=project, username=person.username, role=Role.REVIEWER)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    update_guidelines(project=project, guidelines=V1, author=lead)
    project = open_labelling(project=project)
    import_labels(lines=[ln for lines in label_lines().values() for ln in lines], project=project)
    pending = next(pk for pk in answers_under(project, 1) if pk not in settled(project))
    decide_everything(project, Answer.objects.get(pk=pending), lead)
    assert not reaudit.reaudit_list(project).rows  # nothing older than v1 yet
    update_guidelines(project=project, guidelines=V2, author=lead)
    project.refresh_from_db()
    found = {row.answer_pk: row for row in reaudit.reaudit_list(project).rows}
    assert set(found) == settled(project)
    assert (found[pending].state, found[pending].version) == ("adjudicated", 1)


def test_keep_records_that_the_gold_stands_under_the_current_version(versioned, lead, client):
    row = reaudit.reaudit_list(versioned).rows[0]
    answer = Answer.objects.get(pk=row.answer_pk)
    url = reverse("reaudit_action", kwargs={"slug": "demo", "number": answer.task_number})
    response = _login(client, lead).post(url, {"action": "keep"}, follow=True)
    assert f"Task {answer.task_number}: its gold stands under guidelines v2." in (
        response.content.decode()
    )
    kept = Reaudit.objects.get(answer=answer)
    assert (kept.action, kept.guideline_version, kept.created_by) == ("keep", 2, lead)
    after = reaudit.reaudit_list(versioned)
    assert answer.pk not in {r.answer_pk for r in after.rows} and after.kept == 1
    with pytest.raises(ServiceError, match="already stands under guidelines v2"):
        reaudit.keep_decision(project=versioned, answer=answer, lead=lead)
    # the next change lists it again, as kept under v2
    update_guidelines(project=versioned, guidelines=V3, author=lead)
    versioned.refresh_from_db()
    again = {r.answer_pk: r for r in reaudit.reaudit_list(versioned).rows}
    assert again[answer.pk].version == 2
    # the gold itself did not change
    assert not Decision.objects.filter(answer=answer).exists()


def test_reopen_puts_the_task_in_the_adjudication_queue_until_a_lead_saves_it(
    versioned, lead, client
):
    row = reaudit.reaudit_list(versioned).rows[0]
    answer = Answer.objects.get(pk=row.answer_pk)
    before = [d.answer_pk for d in adjudication_queue(versioned)]
    assert answer.pk not in before
    url = reverse("reaudit_action", kwargs={"slug": "demo", "number": answer.task_number})
    response = _login(client, lead).post(url, {"action": "reopen"}, follow=True)
    assert f"Task {answer.task_number} is back in the adjudication queue." in (
        response.content.decode()
    )
    queue = adjudication_queue(versioned)
    assert [d.answer_pk for d in queue if d.reaudit] == [answer.pk]
    assert [d.answer_pk for d in queue if not d.reaudit] == before
    listed = reaudit.reaudit_list(versioned)
    assert answer.pk not in {r.answer_pk for r in listed.rows} and listed.reopened == 1
    # the queue page shows it, after the disagreements
    page = client.get(reverse("adjudication_queue", kwargs={"slug": "demo"})).content.decode()
    tasks = re.findall(r'<th scope="row" class="nowrap">Task (\d+)</th>', page)
    assert tasks[-1] == str(answer.task_number)
    assert "re-opened after the guidelines changed" in page
    # the lead opens it and saves without changing a value: answered under v2
    decide_everything(versioned, answer, lead, keep_only=True)
    assert answer.pk not in {d.answer_pk for d in adjudication_queue(versioned)}
    closed = Reaudit.objects.get(answer=answer)
    assert closed.closed_at is not None and closed.closed_version == 2
    after = reaudit.reaudit_list(versioned)
    assert answer.pk not in {r.answer_pk for r in after.rows} and after.reopened == 0


def test_the_guidelines_page_and_the_reaudit_page_show_the_counts(versioned, client, lead):
    found = reaudit.reaudit_list(versioned)
    _login(client, lead)
    page = client.get(reverse("guidelines", kwargs={"slug": "demo"})).content.decode()
    assert f'<strong id="reaudit-count">{len(found.rows)}</strong>' in page
    assert f"{len(found.rows)} under v1" in page
    listing = client.get(reverse("reaudit", kwargs={"slug": "demo"})).content.decode()
    counts = re.search(r'id="reaudit-counts"><strong>(\d+)</strong>', listing)
    assert int(counts.group(1)) == len(found.rows)
    shown = re.findall(r'<tr data-task="(\d+)">', listing)
    assert shown == [str(r.task_number) for r in found.rows[:50]]
    assert f"{found.current_count} under v2" in listing


# --- Who may ---------------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["reviewer_a", "outsider"])
def test_only_a_lead_edits_the_guidelines_or_sees_the_reaudit_list(versioned, client, who, request):
    person = request.getfixturevalue(who)
    _login(client, person)
    number = Answer.objects.get(pk=reaudit.reaudit_list(versioned).rows[0].answer_pk).task_number
    guidelines = reverse("guidelines", kwargs={"slug": "demo"})
    assert client.get(guidelines).status_code == 404
    assert client.post(guidelines, {"guidelines": "mine now", "overlap": 2}).status_code == 404
    assert client.get(reverse("reaudit", kwargs={"slug": "demo"})).status_code == 404
    action = reverse("reaudit_action", kwargs={"slug": "demo", "number": number})
    assert client.post(action, {"action": "reopen"}).status_code == 404
    keep_all = reverse("reaudit_keep_all", kwargs={"slug": "demo"})
    assert client.post(keep_all, {"decided_under": "1"}).status_code == 404
    assert GuidelineVersion.objects.filter(project=versioned).count() == 2
    assert not Reaudit.objects.exists()
    versioned.refresh_from_db()
    assert versioned.guidelines == V2


# --- The data migration ----------------------------------------------------------------------


def test_the_migration_makes_version_1_from_the_text_each_project_has(
    reviewer_a, reviewer_b, lead, small_project
):
    """annotate/migrations/0021 run over projects as they stood before versions: version 1
    holds the text, dated from the save that set it (the audit history), and the label sets
    and decisions made before it count as made under it. A project without guidelines gets
    none."""
    from django.apps import apps

    migration = importlib.import_module("annotate.migrations.0021_first_guideline_version")
    project = import_fixture("demo.jsonl", "demo")
    for person in (reviewer_a, reviewer_b):
        add_member(project=project, username=person.username, role=Role.REVIEWER)
    project = open_labelling(project=project)
    import_labels(lines=[ln for lines in label_lines().values() for ln in lines], project=project)
    pending = next(pk for pk in answers_under(project, 0) if pk not in settled(project))
    decide_everything(project, Answer.objects.get(pk=pending), lead)
    # as before versions: the text saved straight onto the project, twice, then another edit
    for text in ("An old text.", V1):
        project.guidelines = text
        project.save()
    set_at = project.history.latest().history_date
    project.name = "Demo, renamed"
    project.save()
    GuidelineVersion.objects.all().delete()
    Project.objects.update(guidelines_version=0, guidelines_changed_at=None)

    migration.first_versions(apps, None)

    version = GuidelineVersion.objects.get(project=project)
    assert (version.number, version.text, version.created_at) == (1, V1, set_at)
    project.refresh_from_db()
    assert (project.guidelines_version, project.guidelines_changed_at) == (1, set_at)
    submitted = Assignment.objects.filter(project=project, status="submitted")
    assert set(submitted.values_list("guideline_version", flat=True)) == {1}
    assert set(Decision.objects.values_list("guideline_version", flat=True)) == {1}
    assert not GuidelineVersion.objects.filter(project=small_project).exists()
    assert Project.objects.get(pk=small_project.pk).guidelines_version == 0


def test_keep_all_keeps_every_listed_answer_of_one_version_and_nothing_else(
    versioned, lead, client
):
    listed = reaudit.reaudit_list(versioned)
    assert listed.versions == [(1, len(listed.rows))]
    reopened = Answer.objects.get(pk=listed.rows[0].answer_pk)
    reaudit.reopen_decision(project=versioned, answer=reopened, lead=lead)
    url = reverse("reaudit_keep_all", kwargs={"slug": "demo"})
    page = _login(client, lead).post(url, {"decided_under": "1"}, follow=True).content.decode()
    kept = len(listed.rows) - 1
    assert f"Kept {kept} answers decided under v1: they stand under v2." in page
    after = reaudit.reaudit_list(versioned)
    assert not after.rows and after.kept == kept and after.reopened == 1
    keeps = Reaudit.objects.filter(action="keep")
    assert set(keeps.values_list("answer_id", flat=True)) == {r.answer_pk for r in listed.rows[1:]}
    assert set(keeps.values_list("guideline_version", flat=True)) == {2}


def test_keep_all_of_the_current_version_is_refused_and_keeps_nothing(versioned, lead, client):
    url = reverse("reaudit_keep_all", kwargs={"slug": "demo"})
    page = _login(client, lead).post(url, {"decided_under": "2"}, follow=True).content.decode()
    assert "Choose a version older than the current v2" in page
    with pytest.raises(ServiceError, match="older than the current v2"):
        reaudit.keep_all(project=versioned, lead=lead, decided_under=3)
    assert not Reaudit.objects.exists()
