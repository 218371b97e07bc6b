"""The reviewer's queue and labelling screen: overlap, skips, drafts, submission, revisions,
the quote check, and query counts that do not grow with the task."""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotate.common import bulk
from annotate.common.errors import ServiceError
from annotate.labelling.selectors import CASE_FIELDS_NOT_SHOWN
from annotate.labelling.services import save_answer_label, save_claim_label, submit_labels
from annotate.models import Answer, Assignment, ClaimLabel, LabelRevision, Project
from annotate.projects.opening import open_labelling
from annotate.queue.services import next_task, release_task
from tests.conftest import PASSWORD


@pytest.fixture
def open_team(team) -> Project:
    return open_labelling(project=team)


def client_for(client, user):
    client.login(username=user.username, password=PASSWORD)
    return client


def task_url(project, assignment, name="task", **kwargs):
    return reverse(
        name, kwargs={"slug": project.slug, "number": assignment.answer.task_number, **kwargs}
    )


def task_with_claims(project, reviewer) -> Assignment:
    """A task on an answer with claims and retrieved passages: the queue's order is random,
    and one of small.jsonl's answers has no claims."""
    answer = Answer.objects.get(project=project, answer_id="a2-deadline/baseline")
    return Assignment.objects.create(project=project, answer=answer, reviewer=reviewer)


def label_everything(assignment):
    """Complete, valid labels for every claim and the answer."""
    answer = assignment.answer
    for claim in answer.claims.all():
        citations = {c.cited_id: "supports" for c in claim.citations.all() if c.passage is not None}
        save_claim_label(
            assignment=assignment,
            claim=claim,
            data={"support": "insufficient_evidence", "severity": "minor", "citations": citations},
        )
    save_answer_label(
        assignment=assignment,
        data={"relevance": 1, "abstention": "appropriate" if answer.abstained else ""},
    )


@pytest.mark.django_db
def test_next_task_resumes_the_task_in_progress(open_team, reviewer_a):
    first = next_task(project=open_team, reviewer=reviewer_a)
    assert next_task(project=open_team, reviewer=reviewer_a) == first


@pytest.mark.django_db
def test_an_answer_never_gets_more_reviewers_than_the_overlap(open_team, reviewer_a, reviewer_b):
    from annotate.members.services import add_member

    third = add_member(project=open_team, username="carl", role="reviewer").user
    open_team.overlap = 2
    open_team.save()
    taken = []
    for reviewer in (reviewer_a, reviewer_b, third) * 4:
        assignment = next_task(project=open_team, reviewer=reviewer)
        if assignment is None:
            continue
        taken.append(assignment.answer_id)
        label_everything(assignment)
        assert not submit_labels(assignment=assignment)
    per_answer = {a: taken.count(a) for a in taken}
    assert set(per_answer.values()) == {2}
    assert len(per_answer) == Answer.objects.filter(project=open_team).count()


@pytest.mark.django_db
def test_a_skipped_task_needs_a_reason_returns_to_the_pool_and_not_to_the_skipper(
    open_team, reviewer_a, reviewer_b, shared_queue_start
):
    open_team.overlap = 1
    open_team.save()
    skipped = next_task(project=open_team, reviewer=reviewer_a)
    with pytest.raises(ServiceError, match="Say why"):
        release_task(assignment=skipped, reason="  ")
    release_task(assignment=skipped, reason="outside my expertise")
    assert next_task(project=open_team, reviewer=reviewer_a).answer_id != skipped.answer_id
    assert next_task(project=open_team, reviewer=reviewer_b).answer_id == skipped.answer_id


@pytest.mark.django_db
def test_abandoned_tasks_return_to_the_pool(
    open_team, reviewer_a, reviewer_b, settings, shared_queue_start
):
    open_team.overlap = 1
    open_team.save()
    abandoned = next_task(project=open_team, reviewer=reviewer_a)
    Assignment.objects.filter(pk=abandoned.pk).update(
        touched_at=timezone.now() - timedelta(minutes=settings.CLAIMDESK_ABANDON_AFTER_MINUTES + 1)
    )
    assert next_task(project=open_team, reviewer=reviewer_b).answer_id == abandoned.answer_id


@pytest.mark.django_db
def test_the_abandoned_check_reads_once_and_releases_only_what_is_abandoned(
    open_team, reviewer_a, reviewer_b, settings, django_assert_num_queries
):
    """Every next_task runs it first: with nothing abandoned it is one read, no transaction
    and no UPDATE of no rows. An abandoned task is released, with its reason, and its answer
    gets its room back; a task touched in time is left alone."""
    from annotate.queue.services import release_abandoned

    open_team.overlap = 1
    open_team.save()
    idle = next_task(project=open_team, reviewer=reviewer_a)
    busy = next_task(project=open_team, reviewer=reviewer_b)
    with django_assert_num_queries(1):
        assert release_abandoned(project=open_team) == 0
    long_ago = timezone.now() - timedelta(minutes=settings.CLAIMDESK_ABANDON_AFTER_MINUTES + 1)
    Assignment.objects.filter(pk=idle.pk).update(touched_at=long_ago)
    assert Answer.objects.get(pk=idle.answer_id).full
    assert release_abandoned(project=open_team) == 1
    idle, busy = Assignment.objects.get(pk=idle.pk), Assignment.objects.get(pk=busy.pk)
    assert (idle.status, idle.release_reason) == ("released", "abandoned (no activity)")
    assert busy.status == "in_progress"
    assert not Answer.objects.get(pk=idle.answer_id).full
    assert Answer.objects.get(pk=busy.answer_id).full


@pytest.mark.django_db
def test_a_reopened_task_left_idle_keeps_its_submitted_labels(
    open_team, reviewer_a, reviewer_b, settings, shared_queue_start
):
    """Undo, then walk away: the task holds a submitted label set, so it is not released for
    inactivity (which would drop those labels from agreement and gold and hand the slot to
    somebody else); it waits for its reviewer."""
    from annotate.labelling.services import reopen_task

    open_team.overlap = 1
    open_team.save()
    task = next_task(project=open_team, reviewer=reviewer_a)
    label_everything(task)
    submit_labels(assignment=task)
    reopen_task(assignment=Assignment.objects.get(pk=task.pk))
    Assignment.objects.filter(pk=task.pk).update(
        touched_at=timezone.now() - timedelta(minutes=settings.CLAIMDESK_ABANDON_AFTER_MINUTES + 1)
    )
    taken = next_task(project=open_team, reviewer=reviewer_b)
    assert taken is None or taken.answer_id != task.answer_id
    assert Assignment.objects.get(pk=task.pk).status == Assignment.Status.IN_PROGRESS


@pytest.mark.django_db
def test_queue_is_closed_while_the_project_is_a_draft(team, reviewer_a):
    with pytest.raises(ServiceError, match="not open"):
        next_task(project=team, reviewer=reviewer_a)


@pytest.mark.django_db
def test_queue_spreads_the_answers_of_one_case_apart(open_team):
    order = list(
        Answer.objects.filter(project=open_team)
        .order_by("task_number")
        .values_list("case_id", flat=True)
    )
    assert all(a != b for a, b in zip(order, order[1:], strict=False))


@pytest.mark.django_db
def test_opening_numbers_every_answer_through_one_bulk_update_of_rows(team, monkeypatch):
    """Each answer gets its task number, queue key and `full` flag from bulk.update_rows, a
    parameterised UPDATE run for every row (bulk_update built CASE expressions per batch of
    1,000: 4.7 s of CPU for 10,000 answers)."""
    calls = []
    update_rows = bulk.update_rows
    monkeypatch.setattr(bulk, "update_rows", lambda *a: calls.append(a) or update_rows(*a))
    Answer.objects.filter(project=team).update(full=True)
    open_labelling(project=team)
    assert len(calls) == 1
    rows = list(Answer.objects.filter(project=team).values_list("task_number", "queue_key", "full"))
    total = len(rows)
    assert sorted(number for number, _, _ in rows) == list(range(1, total + 1))
    assert all(key == (number - 0.5) / total and not full for number, key, full in rows)


def test_spread_order_keeps_each_group_apart_whenever_that_is_possible():
    from collections import Counter
    from random import Random

    from annotate.projects.opening import spread_order

    for seed in range(500):
        rng = Random(seed)
        n = rng.randint(1, 40)
        items = [(pk, rng.randint(0, rng.randint(0, 15))) for pk in range(n)]
        order = spread_order(items, rng=rng)
        assert sorted(order) == list(range(n))
        group = dict(items)
        touching = sum(group[a] == group[b] for a, b in zip(order, order[1:], strict=False))
        largest = max(Counter(group.values()).values())
        # The fewest unavoidable: the largest group's items beyond what the others can divide.
        assert touching == max(0, largest - (n - largest) - 1), (seed, items, order)


@pytest.mark.django_db
def test_quote_must_occur_in_a_chosen_passage_whitespace_normalised(open_team, reviewer_a):
    assignment = task_with_claims(open_team, reviewer_a)
    claim = assignment.answer.claims.first()
    passage = assignment.answer.retrieved.first().passage
    words = passage.text.split()[:4]
    _, errors = save_claim_label(
        assignment=assignment,
        claim=claim,
        data={"evidence_ids": [passage.passage_id], "evidence_quote": "\n  ".join(words)},
    )
    assert not errors
    _, errors = save_claim_label(
        assignment=assignment,
        claim=claim,
        data={"evidence_ids": [passage.passage_id], "evidence_quote": "words nobody wrote"},
    )
    assert errors.fields[f"claim.{claim.ordinal}.evidence_quote"].startswith(
        "This quote does not occur in the chosen passage."
    )
    # the draft keeps what the reviewer typed
    assert ClaimLabel.objects.get(claim=claim).evidence_quote == "words nobody wrote"


@pytest.mark.django_db
def test_unresolvable_citations_are_set_to_not_found_and_stay_locked(open_team, reviewer_a):
    answer = Answer.objects.get(answer_id="a2-deadline/verifier")
    assignment = Assignment.objects.create(project=open_team, answer=answer, reviewer=reviewer_a)
    claim = answer.claims.get(ordinal=1)
    label, errors = save_claim_label(
        assignment=assignment, claim=claim, data={"citations": {"notes-99": "supports"}}
    )
    assert label.citations["notes-99"] == "citation_not_found" and not errors


@pytest.mark.django_db
def test_submit_requires_every_item_then_keeps_each_submission_as_a_revision(
    client, open_team, reviewer_a
):
    client_for(client, reviewer_a)
    assignment = task_with_claims(open_team, reviewer_a)
    response = client.post(task_url(open_team, assignment, "submit"))
    assert response.status_code == 400
    assert b"Choose a support label." in response.content
    assert b"Rate the answer" in response.content

    label_everything(assignment)
    response = client.post(task_url(open_team, assignment, "submit"))
    assert response.status_code == 302  # on to the next task
    assignment.refresh_from_db()
    assert assignment.status == "submitted" and assignment.revision == 1

    client.post(task_url(open_team, assignment, "reopen"))
    save_answer_label(assignment=assignment, data={"relevance": 2})
    client.post(task_url(open_team, assignment, "submit"))
    revisions = LabelRevision.objects.filter(assignment=assignment).order_by("number")
    assert [r.labels["relevance"] for r in revisions] == [1, 2]


@pytest.mark.django_db
def test_submitted_labels_cannot_be_edited_without_reopening(open_team, reviewer_a):
    assignment = next_task(project=open_team, reviewer=reviewer_a)
    label_everything(assignment)
    submit_labels(assignment=assignment)
    with pytest.raises(ServiceError, match="reopen"):
        save_answer_label(assignment=assignment, data={"relevance": 0})


@pytest.mark.django_db
def test_draft_saves_over_htmx_return_field_errors_and_keep_the_draft(
    client, open_team, reviewer_a
):
    client_for(client, reviewer_a)
    assignment = task_with_claims(open_team, reviewer_a)
    claim = assignment.answer.claims.first()
    passage = assignment.answer.retrieved.first().passage
    url = task_url(open_team, assignment, "save_claim", index=claim.ordinal)
    response = client.post(
        url,
        {
            "support": "contradicted",
            "evidence_ids": [passage.passage_id],
            "evidence_quote": "not in the passage",
        },
        headers={"HX-Request": "true"},
    )
    assert response.status_code == 200
    assert b'hx-swap-oob="true"' in response.content
    assert b"This quote does not occur" in response.content
    page = client.get(task_url(open_team, assignment))
    assert b'value="not in the passage"' in page.content
    assert b"This quote does not occur" in page.content


@pytest.mark.django_db
def test_the_status_bar_counts_the_save_that_completes_the_task(client, open_team, reviewer_a):
    """The htmx reply to the last missing label says the task is ready, and enables Submit."""
    client_for(client, reviewer_a)
    assignment = next_task(project=open_team, reviewer=reviewer_a)
    label_everything(assignment)
    save_answer_label(assignment=assignment, data={"relevance": None})
    url = task_url(open_team, assignment, "save_answer")
    before = client.get(task_url(open_team, assignment)).content.decode()
    assert "whole answer: relevance missing" in before
    data = {"relevance": "2", "abstention": "appropriate" if assignment.answer.abstained else ""}
    reply = client.post(url, data, headers={"HX-Request": "true"}).content.decode()
    state = json.loads(html.unescape(re.search(r"data-state='([^']*)'", reply).group(1)))
    assert state == {"problems": {}, "missing": {}}  # the script then says ready to submit
    after = client.get(task_url(open_team, assignment)).content.decode()
    assert "ready to submit" in after
    assert 'aria-disabled="true"' not in after  # Submit is on


@pytest.mark.django_db
def test_passage_and_answer_text_are_escaped(client, open_team, reviewer_a):
    from annotate.models import Passage

    Passage.objects.filter(project=open_team).update(text="<script>alert('x')</script> text")
    client_for(client, reviewer_a)
    assignment = next_task(project=open_team, reviewer=reviewer_a)
    page = client.get(task_url(open_team, assignment)).content.decode()
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert" in page


class _Attributes(HTMLParser):
    """The attributes of the element with an id, as a browser's parser reads them."""

    def __init__(self, element_id: str):
        super().__init__()
        self.element_id, self.found = element_id, None

    def handle_starttag(self, tag, attrs):
        if dict(attrs).get("id") == self.element_id:
            self.found = dict(attrs)


def attributes(page: str, element_id: str) -> dict:
    parser = _Attributes(element_id)
    parser.feed(page)
    return parser.found


@pytest.mark.django_db
def test_a_draft_with_quotes_and_markup_reads_back_whole_from_its_attribute(
    client, open_team, reviewer_a
):
    """data-label is JSON in a single-quoted attribute: what a reviewer typed (quotes of both
    kinds, markup, an entity, template braces) comes back exactly as a browser parses it,
    in the save's reply and on the page, and never ends the attribute."""
    client_for(client, reviewer_a)
    assignment = task_with_claims(open_team, reviewer_a)
    note = """It's "quoted" <b>bold</b> &amp; {{ x }} '>"""
    url = task_url(open_team, assignment, "save_claim", index=0)
    reply = client.post(url, {"note": note, "version": "0"}, headers={"HX-Request": "true"})
    page = client.get(task_url(open_team, assignment)).content.decode()
    for text in (reply.content.decode(), page):
        found = attributes(text, "claim-span-0")
        assert json.loads(found["data-label"])["note"] == note
        assert set(found) - {"hx-swap-oob"} == {"class", "id", "href", "data-claim", "data-label"}
        raw = re.search(r"data-label='([^']*)'", text).group(1)
        assert "<" not in raw and "{{" not in raw
    assert json.loads(attributes(page, "answer-state")["data-state"])["missing"]


def _answer_with(project, *, claims: int, passages: int, number: int) -> Answer:
    """An answer with the given number of claims (each citing a passage) and passages."""
    from annotate.imports.bundle_import import import_bundle

    case = project.cases.first()
    ids = [f"bench-{number}-{i}" for i in range(passages)]
    text = " ".join(f"Sentence {i} is here [{ids[i % passages]}]." for i in range(claims))
    lines = [
        json.dumps({"type": "passage", "passage_id": pid, "text": f"Passage {pid}."}) for pid in ids
    ]
    spans, position = [], 0
    for i in range(claims):
        sentence = f"Sentence {i} is here [{ids[i % passages]}]."
        spans.append(
            {
                "text": f"Sentence {i} is here.",
                "start": position,
                "end": position + len(sentence),
                "citations": [ids[i % passages]],
            }
        )
        position += len(sentence) + 1
    lines.append(
        json.dumps(
            {
                "type": "answer",
                "answer_id": f"q-{number}",
                "case_id": case.case_id,
                "variant": "baseline",
                "sample": number,
                "text": text,
                "claims": spans,
                "retrieved": [
                    {"passage_id": pid, "rank": r + 1, "in_prompt": True}
                    for r, pid in enumerate(ids)
                ],
            }
        )
    )
    import_bundle(lines=lines, project_slug=project.slug)
    return Answer.objects.get(project=project, answer_id=f"q-{number}")


CONTROL = ("BEGIN", "COMMIT", "SAVEPOINT", "RELEASE SAVEPOINT")


def _queries(captured) -> list[str]:
    """The statements of a request, less transaction control (SAVEPOINTs in a test)."""
    return [q["sql"] for q in captured if not q["sql"].startswith(CONTROL)]


@pytest.mark.django_db
def test_the_labelling_page_costs_nine_queries_and_little_html_per_claim(
    client, open_team, reviewer_a
):
    """10 and 60 claims over 10 passages: the same nine queries (session, user, assignment;
    claims, citations, labels, passages; the project's answers, one pass over its
    assignments for the reviewer's progress), and no claim repeats the passages' controls:
    60 claims stay far under 120 KB. (A passage cited but not retrieved costs one more.)"""
    client_for(client, reviewer_a)
    counts, sizes = [], []
    for number, claims in enumerate((10, 60), start=1):
        answer = _answer_with(open_team, claims=claims, passages=10, number=number)
        assignment = Assignment.objects.create(
            project=open_team, answer=answer, reviewer=reviewer_a
        )
        for claim in answer.claims.all()[::2]:
            save_claim_label(assignment=assignment, claim=claim, data={"support": "supported"})
        url = task_url(open_team, assignment)
        client.get(url)  # warm the session
        with CaptureQueriesContext(connection) as captured:
            page = client.get(url)
        assert page.status_code == 200
        counts.append(_queries(captured))
        sizes.append(len(page.content))
        Assignment.objects.filter(pk=assignment.pk).update(status="released")
    assert len(counts[0]) == len(counts[1]) == 9, counts
    assert sizes[1] < 120_000, sizes
    # Of the case it reads the question, not its JSON lists decoded for nothing, and the
    # assignment (one row) unsorted.
    [task] = [sql for sql in counts[1] if "JOIN annotate_case c" in sql]
    assert 'c."question"' in task
    assert not any(f'c."{name}"' in task for name in CASE_FIELDS_NOT_SHOWN)
    assert "ORDER BY" not in task
    # the passages' evidence boxes are on the page once, not once per claim
    assert page.content.decode().count('name="evidence_ids"') == 10


@pytest.mark.django_db
def test_a_draft_save_reads_only_its_own_claim(client, open_team, reviewer_a):
    """Whatever the task's size, a draft save costs the same few queries: session, user,
    assignment; the claim with its label and its citations, the chosen passages; the
    assignment's write (which is also its lock) and the label's write. Its reply is that
    claim alone."""
    client_for(client, reviewer_a)
    counts = []
    for number, (claims, passages) in enumerate(((1, 1), (60, 10)), start=1):
        answer = _answer_with(open_team, claims=claims, passages=passages, number=number)
        assignment = Assignment.objects.create(
            project=open_team, answer=answer, reviewer=reviewer_a
        )
        claim = answer.claims.order_by("ordinal").last()
        save_claim_label(assignment=assignment, claim=claim, data={"support": "supported"})
        cited = claim.citations.get().cited_id
        url = task_url(open_team, assignment, "save_claim", index=claim.ordinal)
        data = {"support": "contradicted", "evidence_ids": [cited], "version": "1"}
        with CaptureQueriesContext(connection) as captured:
            reply = client.post(url, data, headers={"HX-Request": "true"})
        assert reply.status_code == 200
        counts.append(_queries(captured))
        assert reply.content.decode().count('id="claim-span-') == 1
        assert len(reply.content) < 2000
        Assignment.objects.filter(pk=assignment.pk).update(status="released")
    assert len(counts[0]) == len(counts[1]) == 7, counts[1]
    # no SELECT ... FOR UPDATE: the assignment's row is locked by its own conditional write
    assert not any("FOR UPDATE" in sql for sql in counts[1]), counts[1]
    # the label is read with its claim, before the transaction, not again inside it
    label_reads = [sql for sql in counts[1] if sql.startswith('SELECT "annotate_claimlabel"')]
    assert not label_reads, label_reads


@pytest.mark.django_db
def test_the_status_names_what_each_claim_still_needs_and_says_saved_only_after_a_save(
    client, open_team, reviewer_a
):
    """Choosing "supported" does not make a claim look done: the status (and the claim's
    mark) say what it still needs before the task can be submitted."""
    client_for(client, reviewer_a)
    assignment = task_with_claims(open_team, reviewer_a)
    page = client.get(task_url(open_team, assignment)).content.decode()
    assert "claim 1: support missing; claim 2: support missing" in page
    assert "Drafts save as you go" in page and "Saved " not in page
    claim = assignment.answer.claims.get(ordinal=0)
    url = task_url(open_team, assignment, "save_claim", index=claim.ordinal)
    data = {"support": "supported", "requires_evidence": "on", "version": "0"}
    reply = client.post(url, data, headers={"HX-Request": "true"}).content.decode()
    # the reply is the claim: its mark says it is not finished, its state says what is missing
    assert 'class="claim supported incomplete"' in reply
    assert "supported, incomplete" in reply
    state = json.loads(html.unescape(re.search(r"data-label='([^']*)'", reply).group(1)))
    assert set(state["missing"]) == {"evidence_ids", "evidence_quote"}
    assert state["v"] == 1
    page = client.get(task_url(open_team, assignment)).content.decode()
    assert "claim 1: evidence passage, quote missing" in page
    assert "Saved " in page


@pytest.mark.django_db
def test_progress_counts_what_the_queue_will_really_give_and_reaches_its_end(
    open_team, reviewer_a, reviewer_b
):
    """'x/60 you' could never reach 60 when others filled the overlap: the reviewer's
    progress counts the answers the queue can still give them, so labelling everything it
    gives ends with submitted == reachable, whatever the co-reviewer took first."""
    from annotate.labelling.selectors import reviewer_progress

    for _ in range(3):  # bob fills some answers first
        taken = next_task(project=open_team, reviewer=reviewer_b)
        label_everything(taken)
        submit_labels(assignment=taken)
    third = add_member_for(open_team, "carl")
    for _ in range(2):  # and carl takes some, so some answers have no slot left for alice
        taken = next_task(project=open_team, reviewer=third)
        label_everything(taken)
        submit_labels(assignment=taken)
    start = reviewer_progress(reviewer_a, open_team)
    assert start.submitted == 0 and start.reachable == start.available
    given = 0
    while (task := next_task(project=open_team, reviewer=reviewer_a)) is not None:
        given += 1
        label_everything(task)
        submit_labels(assignment=task)
    end = reviewer_progress(reviewer_a, open_team)
    assert given == start.available
    assert end.submitted == end.reachable == given and end.available == 0


def add_member_for(project, username):
    from annotate.members.services import add_member

    return add_member(project=project, username=username, role="reviewer").user


def test_a_reviewer_in_a_three_way_project_is_asked_for_the_subtype_of_unsupported(
    open_team, reviewer_a
):
    """Reviewers choose the subtype; 'unsupported' is the binary scale's value (and a
    judge's). In the browser it is a field error; in an imported label file, an error on its
    line, and nothing is written."""
    from annotate.imports.label_import import import_labels
    from annotate.imports.lines import BundleInvalid

    assignment = task_with_claims(open_team, reviewer_a)
    claim = assignment.answer.claims.get(ordinal=0)
    _, errors = save_claim_label(
        assignment=assignment, claim=claim, data={"support": "unsupported"}
    )
    assert errors.fields["claim.0.support"] == (
        "Say which kind of unsupported: contradicted or insufficient evidence."
    )
    line = {
        "answer_id": "batch-premise/baseline",
        "reviewer": "bob",
        "relevance": 1,
        "failure_labels": [],
        "claims": [
            {
                "index": 0,
                "support": "unsupported",
                "severity": "major",
                "citations": {"lab-note:p1": "does_not_support"},
            }
        ],
    }
    before = Assignment.objects.count()
    with pytest.raises(BundleInvalid) as caught:
        import_labels(lines=[json.dumps(line)], project=open_team)
    assert [str(e) for e in caught.value.errors] == [
        'line 1: claims[0].support must be "supported", "contradicted" or '
        '"insufficient_evidence", got "unsupported": say which kind'
    ]
    assert Assignment.objects.count() == before


@pytest.mark.django_db
def test_your_tasks_is_a_page_at_a_time_in_the_same_queries_whatever_the_count(client, monkeypatch):
    """A reviewer of a large project submits thousands of tasks: the list shows them a page at
    a time (newest first), every page in the same few queries, and htmx gets the table alone;
    all pages together list every task once."""
    from annotate.labelling import views
    from tests.conftest import labelled_demo

    project = labelled_demo(password=PASSWORD)
    alice = Assignment.objects.filter(project=project, reviewer__username="alice")
    submitted = alice.count()
    assert submitted > 14
    monkeypatch.setattr(views, "MY_TASKS_PAGE", 7)
    client.login(username="alice", password=PASSWORD)
    url = reverse("my_tasks", args=[project.slug])
    counts, shown = [], []
    page = 1
    while True:
        with CaptureQueriesContext(connection) as queries:
            reply = client.get(url, {"page": page}).content.decode()
        counts.append(len(queries))
        numbers = [
            int(n) for n in re.findall(r'<th scope="row"><a href="/p/demo/tasks/(\d+)/">', reply)
        ]
        assert 0 < len(numbers) <= 7
        shown += numbers
        assert f"of {submitted} tasks · page {page} of" in reply
        if 'rel="next"' not in reply:
            break
        page += 1
    assert sorted(shown) == sorted(alice.values_list("answer__task_number", flat=True))
    assert len(set(counts)) == 1, counts
    partial = client.get(url, {"page": 2}, headers={"HX-Request": "true", "HX-Target": "my-tasks"})
    body = partial.content.decode()
    assert body.lstrip().startswith('<div class="card flush" id="my-tasks">')
    assert "<html" not in body and "Your submitted tasks" not in body
