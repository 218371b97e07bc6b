"""Agreement, adjudication and gold, on the demo project with its two reviewers' labels."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from annotate.adjudication.queue import adjudication_queue
from annotate.adjudication.services import (
    Conflict,
    DecisionInput,
    StillUndoable,
    adjudicate,
    start_adjudication,
)
from annotate.common.errors import ServiceError
from annotate.common.jsonl import jsonl
from annotate.gold.exports import GOLD_CSV_COLUMNS, gold_rows
from annotate.gold.pairs import ADJUDICATED, AGREED, PENDING, pairs_for_project
from annotate.labelling.services import reopen_task, submit_labels
from annotate.members.services import add_member
from annotate.models import AdjudicationLock, Answer, Assignment, Decision, Project
from tests.conftest import PASSWORD, decide_support, labelled_demo


@pytest.fixture
def demo(db, lead, outsider) -> Project:
    return labelled_demo(leads=[lead.username], password=PASSWORD, reset_password=True)


def first_disagreement(project, field_name="support"):
    _, claim_pairs = pairs_for_project(project)
    return next(p for p in claim_pairs if p.source[field_name] == PENDING)


def test_agreed_fields_are_gold_and_disagreements_wait_for_a_lead(demo):
    answer_pairs, claim_pairs = pairs_for_project(demo)
    assert len(answer_pairs) == 40 and len(claim_pairs) == 61
    agreed = [p for p in claim_pairs if p.source["support"] == AGREED]
    pending = [p for p in claim_pairs if p.source["support"] == PENDING]
    assert len(agreed) == 55 and len(pending) == 6
    assert all(p.gold["support"] == p.a["support"] == p.b["support"] for p in agreed)
    assert all(p.gold["support"] is None for p in pending)


def test_queue_puts_the_most_serious_disagreements_first(demo):
    queue = adjudication_queue(demo)
    scores = [item.score for item in queue]
    assert scores == sorted(scores, reverse=True)
    assert {"support", "abstention"} <= set(queue[0].fields)
    relevance_only = [item for item in queue if item.fields == ["relevance"]]
    assert relevance_only and all(item.score < queue[0].score for item in relevance_only)


def test_a_decision_makes_the_field_adjudicated_with_its_rationale(demo, lead):
    pair = first_disagreement(demo)
    answer = Answer.objects.get(pk=pair.answer_id)
    claim = answer.claims.get(pk=pair.claim_id)
    adjudicate(
        answer=answer,
        lead=lead,
        version=0,
        decisions=[DecisionInput(claim=claim, field="support", value="insufficient_evidence")],
        rationale="The note never states a rate.",
    )
    _, claim_pairs = pairs_for_project(demo, answer_ids=[answer.pk])
    decided = next(p for p in claim_pairs if p.claim_id == claim.pk)
    assert decided.source["support"] == ADJUDICATED
    assert decided.gold["support"] == "insufficient_evidence"
    assert decided.rationale["support"] == "The note never states a rate."
    assert Decision.objects.get().decided_by == lead


def test_second_lead_saving_the_same_item_gets_a_conflict_and_nothing_is_lost(demo, lead):
    other_lead = add_member(project=demo, username="lou", role="lead").user
    pair = first_disagreement(demo)
    answer = Answer.objects.get(pk=pair.answer_id)
    claim = answer.claims.get(pk=pair.claim_id)
    seen_version = start_adjudication(answer=answer, lead=lead).version
    adjudicate(
        answer=answer,
        lead=lead,
        version=seen_version,
        rationale="first",
        decisions=[DecisionInput(claim=claim, field="support", value="supported")],
    )
    with pytest.raises(Conflict):
        adjudicate(
            answer=answer,
            lead=other_lead,
            version=seen_version,
            rationale="second",
            decisions=[DecisionInput(claim=claim, field="support", value="contradicted")],
        )
    assert list(Decision.objects.values_list("value", flat=True)) == ["supported"]


def test_invalid_gold_values_are_refused_and_a_rationale_is_optional(demo, lead):
    """Issue #34: one optional rationale per task (as Prodigy's review), per-field ones
    optional too; a decision without any is stored with an empty rationale."""
    pair = first_disagreement(demo)
    answer = Answer.objects.get(pk=pair.answer_id)
    claim = answer.claims.get(pk=pair.claim_id)
    with pytest.raises(ServiceError, match="not a valid support"):
        adjudicate(
            answer=answer,
            lead=lead,
            version=0,
            rationale="x",
            decisions=[DecisionInput(claim=claim, field="support", value="maybe")],
        )
    assert not Decision.objects.exists()
    adjudicate(
        answer=answer,
        lead=lead,
        version=0,
        rationale=" ",
        decisions=[DecisionInput(claim=claim, field="support", value="supported")],
    )
    assert list(Decision.objects.values_list("value", "rationale")) == [("supported", "")]


def test_adjudication_waits_until_no_reviewer_can_undo_and_no_reopen_follows(demo, client, lead):
    """Issue #15: no reopen after a lead started adjudicating, and a refused reopen must not
    tell the reviewer that their co-reviewer submitted. A submission can be undone for a
    while after it is made (its own clock alone); the answer opens for adjudication once
    every such window on it has closed -- the page and the API say until when."""
    pair = first_disagreement(demo)
    answer = Answer.objects.get(pk=pair.answer_id)
    first, second = Assignment.objects.filter(answer=answer).order_by("pk")[:2]
    with pytest.raises(ServiceError, match="can no longer be reopened"):  # imported: no undo
        reopen_task(assignment=first)
    reopen_task(assignment=_undoable(second))
    assert not submit_labels(assignment=Assignment.objects.get(pk=second.pk))
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("adjudicate", kwargs={"slug": demo.slug, "number": answer.task_number})
    page = client.get(url)
    assert page.status_code == 200 and "not open for adjudication yet" in page.content.decode()
    assert "can still undo their submission of this task, until" in page.content.decode()
    with pytest.raises(StillUndoable):
        start_adjudication(answer=answer, lead=lead)
    assert (
        not Decision.objects.exists()
        and not AdjudicationLock.objects.filter(answer=answer).exists()
    )
    Assignment.objects.filter(pk=second.pk).update(undo_until=timezone.now())  # time passes
    assert client.get(url).context["screen"] is not None
    with pytest.raises(ServiceError, match="can no longer be reopened") as refused:
        reopen_task(assignment=second)
    assert "lead" not in str(refused.value).split(".")[0]  # the reason is the time rule


def _undoable(assignment):
    """As if its reviewer had just submitted on the labelling screen."""
    Assignment.objects.filter(pk=assignment.pk).update(
        undo_until=timezone.now() + timedelta(minutes=5)
    )
    return Assignment.objects.get(pk=assignment.pk)


def test_adjudication_page_hides_the_variant_and_saves_choices(client, demo, lead):
    client.login(username=lead.username, password=PASSWORD)
    item = adjudication_queue(demo)[0]
    url = reverse("adjudicate", kwargs={"slug": demo.slug, "number": item.task_number})
    page = client.get(url).content.decode()
    assert "baseline" not in page and "verifier" not in page
    assert Answer.objects.get(pk=item.answer_pk).answer_id not in page
    summary = re.search(r'<p class="disagreement-summary">Disagreement: (.*?)</p>', page)
    assert summary and " vs " in summary.group(1)  # e.g. claim 1 support (supported vs ...)
    assert 'class="quote-a"' in page or 'class="quote-b"' in page or "◆" in page
    pair = next(
        p
        for p in pairs_for_project(demo, answer_ids=[item.answer_pk])[1]
        if p.source["support"] == PENDING
    )
    response = client.post(
        url,
        {
            "version": "0",
            f"f-{pair.ordinal}-support": "b",
            "rationale": "B read the note right.",
        },
    )
    assert response.status_code == 302
    assert Decision.objects.get().value == pair.b["support"]


def test_saving_with_nothing_chosen_stays_on_the_task_and_says_so(client, demo, lead):
    client.login(username=lead.username, password=PASSWORD)
    item = adjudication_queue(demo)[0]
    url = reverse("adjudicate", kwargs={"slug": demo.slug, "number": item.task_number})
    client.get(url)
    response = client.post(url, {"version": "0", "rationale": "looked at it"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "Nothing was chosen" in page and "looked at it" in page
    assert not Decision.objects.exists()


def test_adjudication_conflict_on_the_page_keeps_the_second_leads_choices(client, demo, lead):
    client.login(username=lead.username, password=PASSWORD)
    item = adjudication_queue(demo)[0]
    url = reverse("adjudicate", kwargs={"slug": demo.slug, "number": item.task_number})
    client.get(url)
    pair = next(
        p
        for p in pairs_for_project(demo, answer_ids=[item.answer_pk])[1]
        if p.source["support"] == PENDING
    )
    key = f"f-{pair.ordinal}-support"
    client.post(url, {"version": "0", key: "a", "rationale": "first lead"})
    response = client.post(url, {"version": "0", key: "b", "rationale": "my reasons"})
    assert response.status_code == 409
    page = response.content.decode()
    assert "Another lead saved this item" in page
    assert "my reasons" in page
    assert f'name="{key}" value="b" checked' in page


def test_agreement_command_json_has_the_spec_shape(demo):
    out = io.StringIO()
    call_command("agreement", "--project", demo.slug, "--json", stdout=out)
    report = json.loads(out.getvalue())
    assert report["project"] == "demo"
    assert set(report["slices"]) == {"all", "answerable", "unanswerable", "adversarial"}
    support = report["slices"]["all"]["support"]
    assert support["n"] == 61 and support["weighting"] is None
    assert support["confusion"]["labels"] == ["supported", "contradicted", "insufficient_evidence"]
    assert sum(map(sum, support["confusion"]["matrix"])) == 61
    assert round(support["raw_agreement"], 4) == round(55 / 61, 4)
    assert report["slices"]["all"]["severity"]["weighting"] == "linear"
    assert report["pairs"][0]["reviewers"] == ["alice", "bob"]


def test_gold_export_is_byte_identical_until_something_changes(demo, lead):
    first = "".join(jsonl(gold_rows(demo)))
    assert first == "".join(jsonl(gold_rows(demo)))
    pair = first_disagreement(demo)
    answer = Answer.objects.get(pk=pair.answer_id)
    adjudicate(
        answer=answer,
        lead=lead,
        version=0,
        rationale="r",
        decisions=[
            DecisionInput(
                claim=answer.claims.get(pk=pair.claim_id), field="support", value="supported"
            )
        ],
    )
    assert "".join(jsonl(gold_rows(demo))) != first


def test_gold_rows_carry_provenance_and_tool_field_names(demo):
    rows = list(gold_rows(demo))
    claims = [r for r in rows if r["item"] == "claim"]
    answers = [r for r in rows if r["item"] == "answer"]
    assert len(claims) == 61 and len(answers) == 40
    row = next(
        r for r in claims if r["answer_id"] == "a2-deadline/baseline" and r["claim_index"] == 1
    )
    assert row["label"] == 0 and row["gold"]["support"] == "contradicted"
    assert row["gold"]["support_binary"] == "unsupported"
    assert row["gold_source"]["support"] == "agreed" and row["decided"] is True
    assert row["reviewer_a"]["reviewer"] in {"R1", "R2"} and "alice" not in json.dumps(row)
    assert row["judge_split"] in {"judge_dev", "judge_test"}
    assert {
        "retrieved_context_ids",
        "in_prompt_ids",
        "claim",
        "answer_id",
        "export_id",
        "as_of",
        "schema_version",
        "content_hash",
        "human_kappa",
    } <= set(row)
    # a claim row names its answer instead of repeating its texts, unless asked to
    assert not {"user_input", "response", "retrieved_contexts", "doc"} & set(row)
    answer_row = next(r for r in answers if r["answer_id"] == "a2-deadline/baseline")
    assert answer_row["user_input"].startswith("When is Assignment 2 due")
    assert answer_row["response"] and answer_row["retrieved_contexts"]
    wide = next(
        r
        for r in gold_rows(demo, item="claim", with_context=True)
        if r["answer_id"] == "a2-deadline/baseline" and r["claim_index"] == 1
    )
    assert wide["user_input"] == answer_row["user_input"] and wide["doc"]
    by_case: dict[str, set[str]] = {}
    for r in rows:
        by_case.setdefault(r["case_id"], set()).add(r["judge_split"])
    assert all(len(sides) == 1 for sides in by_case.values())


def test_gold_csv_has_one_line_per_row_and_the_documented_columns(demo, tmp_path):
    path = tmp_path / "gold.csv"
    call_command("export_gold", "--project", demo.slug, "--format", "csv", "--output", str(path))
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames) == GOLD_CSV_COLUMNS
        assert sum(1 for _ in reader) == 101


def test_gold_download_streams_for_leads_only(client, demo, lead, outsider):
    url = reverse("gold_download", kwargs={"slug": demo.slug, "fmt": "jsonl"})
    client.login(username=outsider.username, password=PASSWORD)
    assert client.get(url).status_code == 404
    client.login(username="alice", password=PASSWORD)
    assert client.get(url).status_code == 404
    client.login(username=lead.username, password=PASSWORD)
    response = client.get(url)
    assert response.status_code == 200 and response.streaming
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert len(lines) == 101 and json.loads(lines[0])["project"] == "demo"


def test_gold_filters_choose_items_splits_and_decided_rows(demo):
    every = list(gold_rows(demo))
    claims = list(gold_rows(demo, item="claim"))
    answers = list(gold_rows(demo, item="answer"))
    assert claims == [r for r in every if r["item"] == "claim"]
    assert [r["answer_id"] for r in answers] == [
        r["answer_id"] for r in every if r["item"] == "answer"
    ]
    for split in ("judge_dev", "judge_test"):
        chosen = list(gold_rows(demo, split=split))
        assert chosen and all(r["judge_split"] == split for r in chosen)
        assert len(chosen) == sum(r["judge_split"] == split for r in every)
    decided = list(gold_rows(demo, decided_only=True))
    assert decided and all(r["decided"] for r in decided)
    assert len(decided) == sum(r["decided"] for r in every) < len(every)
    with pytest.raises(ValueError, match="item must be one of"):
        list(gold_rows(demo, item="claims"))


def test_export_gold_command_takes_the_filters(demo, tmp_path):
    path = tmp_path / "answers.jsonl"
    call_command(
        "export_gold",
        "--project",
        demo.slug,
        "--item",
        "answer",
        "--split",
        "judge_test",
        "--decided-only",
        "--output",
        str(path),
    )
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows and {r["item"] for r in rows} == {"answer"}
    assert {r["judge_split"] for r in rows} == {"judge_test"} and all(r["decided"] for r in rows)


def test_human_kappas_from_grouped_counts_equal_the_agreement_report(demo):
    from evaluation.reports.agreement import agreement_report, human_kappas

    report = agreement_report(demo, n_boot=0)["slices"]["all"]
    kappas = human_kappas(demo)
    assert set(kappas) == {name for name in report if name != "evidence"}
    for name, kappa in kappas.items():
        assert kappa == pytest.approx(report[name]["kappa"]), name


def test_the_gold_page_counts_before_the_download(client, demo, lead):
    client.login(username=lead.username, password=PASSWORD)
    response = client.get(reverse("gold", kwargs={"slug": demo.slug}))
    counts = response.context["counts"]
    rows = list(gold_rows(demo))
    claim_rows = [r for r in rows if r["item"] == "claim"]
    assert counts.claims.total() == len(claim_rows) == 61
    assert counts.claims["pending"] == sum(not r["decided"] for r in claim_rows)
    assert counts.claims["adjudicated"] == 0
    assert counts.by_split["judge_dev"].total() + counts.by_split["judge_test"].total() == 61
    body = response.content.decode()
    assert "Download JSONL" in body and 'name="decided_only"' in body
    download = client.get(
        reverse("gold_download", kwargs={"slug": demo.slug, "fmt": "jsonl"}),
        {"item": "answer", "split": "all"},
    )
    lines = b"".join(download.streaming_content).decode().splitlines()
    assert len(lines) == 40 and {json.loads(line)["item"] for line in lines} == {"answer"}
    bad = client.get(
        reverse("gold_download", kwargs={"slug": demo.slug, "fmt": "jsonl"}), {"item": "x"}
    )
    assert bad.status_code == 400


def test_the_gold_page_keeps_its_counts_until_a_decision_changes_them(client, demo, lead):
    """The counts derive every pair of the project (2 s at 10,000 answers): read once per
    state of the labels and decisions."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.login(username=lead.username, password=PASSWORD)
    url = reverse("gold", kwargs={"slug": demo.slug})

    def view():
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
        labels_read = sum('FROM "annotate_claimlabel"' in q["sql"] for q in queries)
        return response.context["counts"], labels_read

    counts, read = view()
    assert read >= 1 and counts.claims["adjudicated"] == 0
    assert view()[1] == 0
    _, claim_pairs = pairs_for_project(demo)
    decide_support(demo, lead, next(p for p in claim_pairs if p.pending == ["support"]))
    after, read = view()
    assert read >= 1 and after.claims["adjudicated"] == 1
    assert after.claims["pending"] == counts.claims["pending"] - 1


def test_a_third_label_set_is_counted_never_dropped_silently(demo, client, lead):
    """Issue #15: a label import during live labelling left answers with three label sets and
    gold silently dropped the third. Since issue #32 every label set counts: the answer row
    says how many there are and carries the third reviewer's labels, pseudonymous."""
    from annotate.members.services import add_member
    from annotate.models import Assignment, Role

    third = add_member(project=demo, username="carol3", role=Role.REVIEWER).user
    answer = Answer.objects.get(project=demo, answer_id="a2-deadline/baseline")
    Assignment.objects.create(
        project=demo, answer=answer, reviewer=third, status="submitted", submitted_at=timezone.now()
    )
    rows = {r["answer_id"]: r for r in gold_rows(demo, item="answer")}
    assert rows["a2-deadline/baseline"]["label_sets"] == 3
    [third_labels] = rows["a2-deadline/baseline"]["other_reviewers"]
    assert third_labels["reviewer"] == "R3" and "carol3" not in json.dumps(rows)
    assert not any("other_reviewers" in r for k, r in rows.items() if k != "a2-deadline/baseline")
    assert {r["label_sets"] for k, r in rows.items() if k != "a2-deadline/baseline"} == {2}
    client.login(username=lead.username, password=PASSWORD)
    page = client.get(reverse("gold", kwargs={"slug": demo.slug})).content.decode()
    assert "1 answer holds more than two label sets." in page


def test_the_lead_sees_who_did_what_to_a_task_and_when(demo, client, lead):
    """Issue #15: an audit trail of labels, decisions, membership, schema and data changes
    (django-simple-history), which a lead sees per task."""
    from annotate.models import Assignment

    pair = first_disagreement(demo)
    answer = Answer.objects.get(pk=pair.answer_id)
    mine = Assignment.objects.get(answer=answer, reviewer__username="alice")
    reopen_task(assignment=_undoable(mine))
    assert not submit_labels(assignment=Assignment.objects.get(pk=mine.pk))
    Assignment.objects.filter(pk=mine.pk).update(undo_until=timezone.now())  # time passes
    client.login(username=lead.username, password=PASSWORD)
    page = client.get(
        reverse("adjudicate", kwargs={"slug": demo.slug, "number": answer.task_number})
    )
    events = [(e.who, e.what) for e in page.context["screen"].audit]
    # sides follow the order of submission, which the resubmission changed
    [now] = pairs_for_project(demo, answer_ids=[answer.pk])[0]
    alice = "reviewer A" if now.reviewer_a == mine.reviewer_id else "reviewer B"
    bob = "reviewer B" if alice == "reviewer A" else "reviewer A"
    assert (bob, "labels imported (revision 1)") in events
    assert events[-2:] == [(alice, "reopened"), (alice, "submitted (revision 2)")]
    body = page.content.decode()
    assert "Audit trail" in body and "reopened" in body and "alice" not in body
    # the schema's and the members' changes are recorded with who made them
    from annotate.models import Membership, Project

    assert Project.history.filter(id=demo.pk).count() >= 2  # created, opened
    assert Membership.history.filter(project_id=demo.pk, history_type="+").count() >= 3


def test_each_gold_jsonl_line_is_its_row_encoded_once(demo):
    """The JSONL export writes the encoding made for the row's hash (sorted, compact), with
    the provenance appended: the line is the row, and the hash is of the row without its
    provenance."""
    import hashlib

    for row, line in zip(gold_rows(demo), jsonl(gold_rows(demo)), strict=True):
        assert json.loads(line) == row
        content = {k: v for k, v in row.items() if k not in ("export_id", "as_of", "content_hash")}
        encoded = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        assert row["content_hash"] == hashlib.sha256(encoded.encode()).hexdigest()


def test_with_a_third_reviewer_still_labelling_the_answer_waits_for_them(demo, client, lead):
    """Overlap above two: two label sets are in, a third reviewer holds the answer. Opening it
    for adjudication then would freeze labels that are still coming (and the third reviewer
    could submit and undo after the lead read them): it waits, and says why."""
    from annotate.adjudication.services import StillLabelling

    pair = first_disagreement(demo)
    answer = Answer.objects.get(pk=pair.answer_id)
    third = add_member(project=demo, username="carol", role="reviewer").user
    holding = Assignment.objects.create(project=demo, answer=answer, reviewer=third)
    with pytest.raises(StillLabelling):
        start_adjudication(answer=answer, lead=lead)
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("adjudicate", kwargs={"slug": demo.slug, "number": answer.task_number})
    page = client.get(url).content.decode()
    assert "not open for adjudication yet" in page and "still labelling" in page
    api = client.get(f"/api/v1/projects/{demo.slug}/adjudication/{answer.task_number}/")
    assert api.status_code == 409 and "still labelling" in api.json()["detail"]
    assert not AdjudicationLock.objects.filter(answer=answer).exists()
    holding.delete()
    assert start_adjudication(answer=answer, lead=lead) is not None


def test_a_rationale_is_bounded_and_storable_text(demo, lead):
    """From the page as from the API: a NUL or an oversized rationale is a clear refusal,
    never a 500 from the database, and nothing is written."""
    pair = first_disagreement(demo)
    answer = Answer.objects.get(pk=pair.answer_id)
    claim = answer.claims.get(pk=pair.claim_id)
    for shared, own, expected in [
        ("a\x00b", "", r"NUL U\+0000"),
        ("", "x" * 5001, "Shorten the rationale of claim"),
    ]:
        with pytest.raises(ServiceError, match=expected):
            adjudicate(
                answer=answer,
                lead=lead,
                version=0,
                rationale=shared,
                decisions=[
                    DecisionInput(claim=claim, field="support", value="supported", rationale=own)
                ],
            )
    assert not Decision.objects.exists()


def test_nothing_is_decided_on_an_answer_without_two_label_sets(demo, lead):
    answer = Answer.objects.filter(project=demo, assignments__isnull=True).first()
    claim = answer.claims.first()
    with pytest.raises(ServiceError, match="two submitted label sets"):
        adjudicate(
            answer=answer,
            lead=lead,
            version=0,
            rationale="x",
            decisions=[DecisionInput(claim=claim, field="support", value="supported")],
        )
    assert not AdjudicationLock.objects.filter(answer=answer).exists()
