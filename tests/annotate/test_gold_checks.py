"""Gold checks: marking decided answers (service, command, API, pages), the queue serving them
at the check rate (never to a reviewer who labelled them, never twice), their label sets kept
out of agreement and gold, and what check_results compares."""

from __future__ import annotations

import io
import json
import random
import re
from collections import Counter
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from annotate.adjudication.services import start_adjudication
from annotate.checks import selectors, services
from annotate.common.errors import ServiceError
from annotate.gold.exports import gold_counts, gold_rows
from annotate.gold.pairs import pairs_for_project
from annotate.labelling.services import submit_labels
from annotate.models import (
    Answer,
    Assignment,
    Case,
    GoldCheck,
    Membership,
    Project,
    Role,
    Variant,
    WebhookDelivery,
)
from annotate.queue.services import next_task, release_task
from annotate.webhooks.services import register_endpoint
from evaluation.reports.agreement import agreement_report
from tests.annotate.test_labelling import label_everything
from tests.conftest import PASSWORD, labelled_demo


@pytest.fixture
def demo(db):
    """The demo with alice's and bob's label sets, a lead (lena) and a third reviewer (carol)
    who labelled nothing."""
    project = labelled_demo(reviewers=("alice", "bob", "carol"), leads=("lena",))
    for membership in project.memberships.select_related("user"):
        membership.user.set_password(PASSWORD)
        membership.user.save()
    return project


def user(project, username):
    return (
        Membership.objects.select_related("user").get(project=project, user__username=username).user
    )


def decided_ids(project) -> list[str]:
    pks = selectors.decided_answers(project)
    return list(
        Answer.objects.filter(pk__in=pks).order_by("answer_id").values_list("answer_id", flat=True)
    )


def undecided_id(project) -> str:
    """A doubly-labelled answer with a field still waiting for a lead."""
    answer_pairs, claim_pairs = pairs_for_project(project)
    pending = {p.answer_id for p in (*answer_pairs, *claim_pairs) if p.pending}
    return Answer.objects.filter(pk__in=pending).order_by("answer_id").first().answer_id


class AlwaysCheck(random.Random):
    """An RNG whose draw always falls under the rate (but still picks among checks)."""

    def random(self):
        return 0.0


# --- Marking ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_lead_marks_decided_answers_and_an_undecided_one_refuses_the_whole_request(demo):
    lena = user(demo, "lena")
    decided = decided_ids(demo)
    assert len(decided) >= 4
    pending = undecided_id(demo)
    with pytest.raises(services.ChecksRefused) as refused:
        services.mark_checks(
            project=demo, lead=lena, answer_ids=[decided[0], pending, "no-such-answer"]
        )
    assert [where for where, _ in refused.value.problems] == [1, 2]
    assert "not decided" in refused.value.problems[0][1]
    assert "no answer 'no-such-answer'" in refused.value.problems[1][1]
    assert not GoldCheck.objects.exists()  # all or nothing

    assert services.mark_checks(project=demo, lead=lena, answer_ids=decided[:2]) == 2
    assert services.mark_checks(project=demo, lead=lena, answer_ids=decided[:3]) == 1
    check = GoldCheck.objects.get(answer__answer_id=decided[0])
    assert check.marked_by == lena and check.marked_at is not None
    assert services.unmark_checks(project=demo, answer_ids=[decided[0]]) == 1
    with pytest.raises(services.ChecksRefused, match="not a check"):
        services.unmark_checks(project=demo, answer_ids=[decided[0]])
    assert services.mark_all_decided(project=demo, lead=lena) == len(decided) - 2
    assert GoldCheck.objects.filter(project=demo).count() == len(decided)


@pytest.mark.django_db
def test_the_check_rate_is_a_number_from_0_to_1(demo):
    assert demo.check_rate == 0
    for bad in (-0.1, 1.5, float("nan"), float("inf")):
        with pytest.raises(ServiceError):
            services.set_check_rate(project=demo, rate=bad)
    assert services.set_check_rate(project=demo, rate=0.25).check_rate == 0.25
    demo.refresh_from_db()
    assert demo.check_rate == 0.25


@pytest.mark.django_db
def test_an_import_is_all_or_nothing_with_every_problem_by_line(demo):
    lena = user(demo, "lena")
    decided = decided_ids(demo)
    bad = [f"{decided[0]}\n", "\n", "# a comment\n", "nope\n", f"{decided[0]}\n", "{]\n"]
    with pytest.raises(services.ChecksRefused) as refused:
        services.import_checks(project=demo, lead=lena, lines=bad)
    assert refused.value.lines() == ["line 6: not a JSON object"]
    bad[-1] = json.dumps({"answer_id": decided[1]}) + "\n"
    with pytest.raises(services.ChecksRefused) as refused:
        services.import_checks(project=demo, lead=lena, lines=bad)
    lines = refused.value.lines()
    assert lines[0] == "line 4: no answer 'nope' in this project"
    assert lines[1].startswith("line 5: ") and "named twice (first on line 1)" in lines[1]
    assert not GoldCheck.objects.exists()
    good = [f"{decided[0]}\n".encode(), json.dumps({"answer_id": decided[1]}).encode()]
    assert services.import_checks(project=demo, lead=lena, lines=good) == 2


@pytest.mark.django_db
def test_mark_checks_command_marks_answers_all_decided_and_sets_the_rate(demo):
    decided = decided_ids(demo)
    out = io.StringIO()
    call_command("mark_checks", "--project", "demo", "--answers", *decided[:2], stdout=out)
    assert "Marked 2 answers as checks in demo: 2 checks, check rate 0." in out.getvalue()
    with pytest.raises(CommandError, match="not decided") as refused:
        call_command("mark_checks", "--project", "demo", "--answers", undecided_id(demo))
    assert undecided_id(demo) in str(refused.value)
    with pytest.raises(CommandError, match="--rate is a number from 0 to 1"):
        call_command("mark_checks", "--project", "demo", "--all-decided", "--rate", "2")
    out = io.StringIO()
    call_command("mark_checks", "--project", "demo", "--all-decided", "--rate", "0.1", stdout=out)
    n = len(decided)
    assert (
        f"Marked {n - 2} answers as checks in demo: {n} checks, check rate 0.1." in out.getvalue()
    )
    demo.refresh_from_db()
    assert demo.check_rate == 0.1 and demo.gold_checks.count() == n
    with pytest.raises(CommandError, match="No project 'nope'"):
        call_command("mark_checks", "--project", "nope", "--all-decided")


# --- The queue ----------------------------------------------------------------------------------

QUEUE_REVIEWERS = 10
QUEUE_CALLS = 2000
NEW_ANSWERS = 1000
CHECK_ANSWERS = 60


def queue_project(django_user_model):
    """An open project: NEW_ANSWERS answers nobody has labelled, and CHECK_ANSWERS decided
    answers marked as checks, each labelled by two of the reviewers (so every reviewer has
    labelled some checks)."""
    project = Project.objects.create(slug="q", name="Q", corpus_version="v", state="open")
    people = [
        django_user_model.objects.create_user(username=f"r{i}") for i in range(QUEUE_REVIEWERS)
    ]
    Membership.objects.bulk_create(
        Membership(project=project, user=p, role=Role.REVIEWER) for p in people
    )
    variant = Variant.objects.create(project=project, name="v", content_hash="x")
    total = NEW_ANSWERS + CHECK_ANSWERS
    cases = Case.objects.bulk_create(
        Case(
            project=project,
            case_id=f"c{i}",
            question="q",
            answerable=True,
            adversarial=False,
            content_hash="x",
        )
        for i in range(total)
    )
    keys = random.Random(1)
    answers = Answer.objects.bulk_create(
        Answer(
            project=project,
            case=case,
            variant=variant,
            answer_id=f"a{i}",
            text="t",
            task_number=i + 1,
            queue_key=keys.random(),
            full=i < CHECK_ANSWERS,
            content_hash="x",
        )
        for i, case in enumerate(cases)
    )
    checks = answers[:CHECK_ANSWERS]
    Assignment.objects.bulk_create(
        Assignment(
            project=project,
            answer=a,
            reviewer=people[(i + k) % QUEUE_REVIEWERS],
            status="submitted",
            submitted_at=timezone.now(),
        )
        for i, a in enumerate(checks)
        for k in (0, 1)
    )
    GoldCheck.objects.bulk_create(GoldCheck(project=project, answer=a) for a in checks)
    return project, people, {a.pk for a in checks}


@pytest.mark.django_db
def test_at_a_10_percent_rate_one_task_in_ten_is_a_check_never_labelled_before_never_twice(
    django_user_model,
):
    project, people, check_pks = queue_project(django_user_model)
    labelled_before = {
        (a.reviewer_id, a.answer_id) for a in Assignment.objects.filter(project=project)
    }
    project.check_rate = 0.1
    project.save()
    rng = random.Random(20261207)
    served: list[tuple[int, int, bool]] = []
    for call in range(QUEUE_CALLS):
        reviewer = people[call % QUEUE_REVIEWERS]
        task = next_task(project=project, reviewer=reviewer, rng=rng)
        assert task is not None
        served.append((reviewer.pk, task.answer_id, task.is_check))
        # The reviewer finishes it; the next call gives a new one.
        Assignment.objects.filter(pk=task.pk).update(
            status="submitted", submitted_at=timezone.now()
        )
    checks = [(r, a) for r, a, is_check in served if is_check]
    share = len(checks) / QUEUE_CALLS
    assert 0.08 <= share <= 0.12, share
    assert all(a in check_pks for _, a in checks)
    assert not any(a in check_pks for _, a, is_check in served if not is_check)
    assert not set(checks) & labelled_before  # no reviewer gets a check they labelled
    assert max(Counter(checks).values()) == 1  # none twice
    # A check fills no slot: the new answers were shared out two reviewers each, as before.
    holders = Counter(a for _, a, is_check in served if not is_check)
    assert max(holders.values()) == 2


@pytest.mark.django_db
def test_without_a_check_rate_the_queue_never_serves_a_check(django_user_model):
    project, people, check_pks = queue_project(django_user_model)
    for reviewer in people:
        task = next_task(project=project, reviewer=reviewer, rng=AlwaysCheck())
        assert not task.is_check and task.answer_id not in check_pks


@pytest.mark.django_db
def test_a_check_is_served_only_while_new_answers_remain_so_the_queue_ends_as_without_checks(
    django_user_model,
):
    project, people, check_pks = queue_project(django_user_model)
    project.check_rate = 1
    project.save()
    Answer.objects.filter(project=project).exclude(pk__in=check_pks).update(full=True)
    assert next_task(project=project, reviewer=people[0], rng=AlwaysCheck()) is None


@pytest.mark.django_db
def test_a_skipped_or_abandoned_check_frees_no_slot_and_is_not_served_again(django_user_model):
    project, people, check_pks = queue_project(django_user_model)
    project.check_rate = 1
    project.save()
    task = next_task(project=project, reviewer=people[0], rng=AlwaysCheck())
    assert task.is_check
    release_task(assignment=task, reason="too hard")
    assert Answer.objects.get(pk=task.answer_id).full  # still full: the pair holds it
    again = next_task(project=project, reviewer=people[0], rng=AlwaysCheck())
    assert again.is_check and again.answer_id != task.answer_id


# --- Kept apart from agreement and gold ---------------------------------------------------------


def serve_check(project, reviewer) -> Assignment:
    project.check_rate = 1
    project.save(update_fields=["check_rate"])
    task = next_task(project=project, reviewer=reviewer, rng=AlwaysCheck())
    assert task.is_check
    return task


@pytest.mark.django_db
def test_a_check_label_set_enters_neither_agreement_nor_gold_nor_the_adjudication_queue(demo):
    lena, carol = user(demo, "lena"), user(demo, "carol")
    services.mark_all_decided(project=demo, lead=lena)
    before_gold = list(gold_rows(demo))
    before_agreement = agreement_report(demo, n_boot=50)
    before_counts = gold_counts(demo)
    task = serve_check(demo, carol)
    label_everything(task)  # every claim "insufficient evidence": not what the pair agreed
    assert not submit_labels(assignment=task)
    # Submitted before the pair: a reader that took the first two label sets would take it.
    Assignment.objects.filter(pk=task.pk).update(submitted_at=timezone.now() - timedelta(days=400))
    demo.refresh_from_db()
    assert list(gold_rows(demo)) == before_gold
    assert agreement_report(demo, n_boot=50) == before_agreement
    after_counts = gold_counts(demo)
    assert after_counts.beyond_two == before_counts.beyond_two == 0
    assert after_counts.rows == before_counts.rows
    # A lead may still open an answer while a reviewer holds it as a check in progress.
    held = serve_check(demo, carol)
    assert held.status == "in_progress"
    assert start_adjudication(answer=held.answer, lead=lena) is not None


@pytest.mark.django_db
def test_check_results_compare_each_check_label_set_with_gold_field_by_field_in_order(demo):
    lena, carol = user(demo, "lena"), user(demo, "carol")
    services.mark_all_decided(project=demo, lead=lena)
    first = serve_check(demo, carol)
    label_everything(first)
    submit_labels(assignment=first)
    second = serve_check(demo, carol)
    label_everything(second)
    submit_labels(assignment=second)
    serve_check(demo, carol)  # in progress: not a result yet
    results = selectors.check_results(demo)
    assert list(results) == [carol.pk]
    mine = results[carol.pk]
    assert mine.username == "carol"
    assert [c.assignment_id for c in mine.checks] == [first.pk, second.pk]
    answer_pairs, claim_pairs = pairs_for_project(demo, answer_ids=[first.answer_id])
    claims = [p for p in claim_pairs]
    support = mine.checks[0].fields["support"]
    assert [item.claim_index for item in support] == [p.ordinal for p in claims]
    for item, pair in zip(support, claims, strict=True):
        assert item.label == "insufficient_evidence"
        assert item.gold == pair.gold["support"]
        assert item.correct == (pair.gold["support"] == "insufficient_evidence")
    relevance = mine.checks[0].fields["relevance"]
    assert [(i.claim_index, i.label, i.gold) for i in relevance] == [
        (None, 1, answer_pairs[0].gold["relevance"])
    ]
    assert "evidence" not in mine.checks[0].fields
    assert mine.checks[0].errors == sum(
        not i.correct for items in mine.checks[0].fields.values() for i in items
    )


# --- The API ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_api_marks_checks_and_answers_400_with_field_paths(client, demo):
    client.login(username="lena", password=PASSWORD)
    url = reverse("api:checks", kwargs={"slug": "demo"})
    decided = decided_ids(demo)
    refused = client.post(
        url, {"answers": [decided[0], "nope", undecided_id(demo)]}, content_type="application/json"
    )
    assert refused.status_code == 400
    body = refused.json()
    assert set(body) == {"answers.1", "answers.2"}
    assert "no answer 'nope'" in body["answers.1"][0] and "not decided" in body["answers.2"][0]
    assert client.post(url, {}, content_type="application/json").json() == {
        "answers": ["Name the answers to mark."]
    }
    both = client.post(
        url, {"answers": [decided[0]], "all_decided": True}, content_type="application/json"
    )
    assert both.status_code == 400 and "all_decided" in both.json()
    ok = client.post(url, {"answers": decided[:2]}, content_type="application/json")
    assert ok.status_code == 200 and ok.json() == {"marked": 2, "checks": 2, "check_rate": 0.0}
    listed = client.get(url).json()["results"]
    assert sorted(c["answer_id"] for c in listed) == decided[:2]
    assert listed[0]["marked_by"] == "lena"
    unmark = client.post(
        reverse("api:checks-unmark", kwargs={"slug": "demo"}),
        {"answers": [decided[1], decided[2]]},
        content_type="application/json",
    )
    assert unmark.status_code == 400 and set(unmark.json()) == {"answers.1"}
    imported = client.post(
        reverse("api:checks-import", kwargs={"slug": "demo"}),
        {"file": SimpleUploadedFile("checks.txt", f"{decided[2]}\nnope\n".encode())},
    )
    assert imported.status_code == 400
    assert imported.json() == {"errors": ["line 2: no answer 'nope' in this project"]}
    project = reverse("api:project", kwargs={"slug": "demo"})
    bad = client.patch(project, {"check_rate": 1.5}, content_type="application/json")
    assert bad.status_code == 400 and list(bad.json()) == ["check_rate"]
    good = client.patch(project, {"check_rate": 0.2}, content_type="application/json")
    assert good.status_code == 200 and good.json()["check_rate"] == 0.2


@pytest.mark.django_db
def test_a_reviewer_reaches_no_check_endpoint_and_no_check_rate(client, demo):
    client.login(username="carol", password=PASSWORD)
    for name in ("api:checks", "api:checks-unmark", "api:checks-import"):
        url = reverse(name, kwargs={"slug": "demo"})
        assert client.get(url).status_code in (403, 405)
        assert client.post(url, {}, content_type="application/json").status_code == 403
    project = reverse("api:project", kwargs={"slug": "demo"})
    assert "check_rate" not in client.get(project).json()
    assert (
        client.patch(project, {"check_rate": 0.5}, content_type="application/json").status_code
        == 403
    )


# --- The pages ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_gold_page_marks_an_answer_the_selected_and_all_decided_and_lists_them(client, demo):
    client.login(username="lena", password=PASSWORD)
    gold = reverse("gold", kwargs={"slug": "demo"})
    decided = decided_ids(demo)
    page = client.get(gold).content.decode()
    assert 'id="no-checks"' in page
    assert f'<strong id="decided-unmarked">{len(decided)}</strong>' in page
    shown = re.findall(r'data-candidate="([^"]+)"', page)
    assert len(shown) == min(len(decided), 20) and set(shown) <= set(decided)
    assert f'name="answers" value="{shown[0]}"' in page and "Mark as check" in page
    mark = reverse("checks_mark", kwargs={"slug": "demo"})
    # a row's button beside two ticked boxes, one of them its own row's
    response = client.post(mark, {"answers": [shown[0], shown[0], shown[1]]}, follow=True)
    page = response.content.decode()
    assert "Marked 2 answers as checks." in page
    assert f'data-check="{shown[0]}"' in page and f'data-check="{shown[1]}"' in page
    assert f'data-candidate="{shown[0]}"' not in page
    assert f'<strong id="decided-unmarked">{len(decided) - 2}</strong>' in page
    assert '<caption class="muted small">2 checks</caption>' in page
    page = client.post(mark, {"all_decided": "1"}, follow=True).content.decode()
    assert f'<caption class="muted small">{len(decided)} checks</caption>' in page
    unmark = reverse("checks_unmark", kwargs={"slug": "demo"})
    page = client.post(unmark, {"answers": shown[0]}, follow=True).content.decode()
    assert "1 answer no longer checks." in page and f'data-check="{shown[0]}"' not in page
    refused = client.post(mark, {"answers": undecided_id(demo)}, follow=True).content.decode()
    assert "Nothing marked" in refused and "not decided" in refused


@pytest.mark.django_db
def test_the_gold_page_import_shows_every_problem_by_line_and_marks_nothing(client, demo):
    client.login(username="lena", password=PASSWORD)
    decided = decided_ids(demo)
    url = reverse("checks_import", kwargs={"slug": "demo"})
    upload = SimpleUploadedFile(
        "checks.txt", f"{decided[0]}\nnope\n{undecided_id(demo)}\n".encode()
    )
    response = client.post(url, {"file": upload})
    assert response.status_code == 400
    page = response.content.decode()
    assert "Nothing was marked: the file has 2 problems." in page
    assert "<li>line 2: no answer &#x27;nope&#x27; in this project</li>" in page
    assert "<li>line 3: not decided" in page
    assert not GoldCheck.objects.exists()
    upload = SimpleUploadedFile("checks.txt", f"{decided[0]}\n".encode())
    page = client.post(url, {"file": upload}, follow=True).content.decode()
    assert (
        "Marked 1 answer as checks from the file." in page and f'data-check="{decided[0]}"' in page
    )


@pytest.mark.django_db
def test_the_adjudication_screen_of_a_decided_answer_marks_and_unmarks_it(client, demo):
    client.login(username="lena", password=PASSWORD)
    answer = Answer.objects.get(project=demo, answer_id=decided_ids(demo)[0])
    url = reverse("adjudicate", kwargs={"slug": "demo", "number": answer.task_number})
    page = client.get(url).content.decode()
    assert 'id="check-form"' in page and "this answer can be a gold check" in page
    assert 'id="check-badge"' not in page
    page = client.post(
        reverse("checks_mark", kwargs={"slug": "demo"}),
        {"answers": answer.answer_id, "next": url},
        follow=True,
    ).content.decode()
    assert "Marked 1 answer as checks." in page
    assert (
        '<span class="badge" id="check-badge">gold check</span>' in page and "Remove check" in page
    )
    page = client.post(
        reverse("checks_unmark", kwargs={"slug": "demo"}),
        {"answers": answer.answer_id, "next": url},
        follow=True,
    ).content.decode()
    assert 'id="check-badge"' not in page and "Mark as check" in page
    # An answer with a field to decide offers no button; an outside `next` is not followed.
    pending = Answer.objects.get(project=demo, answer_id=undecided_id(demo))
    page = client.get(
        reverse("adjudicate", kwargs={"slug": "demo", "number": pending.task_number})
    ).content.decode()
    assert 'id="check-form"' not in page
    away = client.post(
        reverse("checks_mark", kwargs={"slug": "demo"}),
        {"answers": answer.answer_id, "next": "https://example.com/"},
    )
    assert away["Location"] == reverse("gold", kwargs={"slug": "demo"}) + "#checks"


@pytest.mark.django_db
def test_the_guidelines_page_sets_the_check_rate_and_refuses_one_out_of_range(client, demo):
    client.login(username="lena", password=PASSWORD)
    url = reverse("checks_rate", kwargs={"slug": "demo"})
    refused = client.post(url, {"check_rate": "1.5"})
    assert refused.status_code == 400
    assert "Ensure this value is less than or equal to 1" in refused.content.decode()
    page = client.post(url, {"check_rate": "0.15"}, follow=True).content.decode()
    assert "Check rate set to 0.15." in page
    assert 'name="check_rate" value="0.15"' in page
    demo.refresh_from_db()
    assert demo.check_rate == 0.15
    client.logout()
    client.login(username="carol", password=PASSWORD)
    assert client.post(url, {"check_rate": "1"}).status_code == 404


@pytest.mark.django_db
def test_the_demo_marks_checks_carol_labels_some_and_the_queue_is_left_as_it_was(db):
    """20 of the 24 decided answers are checks; carol, the only reviewer who did not label
    every decided answer, labelled 17 of them as the queue served them, each once, none she
    labelled as the third reviewer; the check rate is 0 again."""
    call_command("load_demo", stdout=io.StringIO())
    project = Project.objects.get(slug="demo")
    assert project.gold_checks.count() == 20
    assert project.check_rate == 0
    checks = Assignment.objects.filter(project=project, is_check=True)
    assert set(checks.values_list("reviewer__username", "status")) == {("carol", "submitted")}
    assert checks.count() == checks.values("answer").distinct().count() == 17
    marked = set(project.gold_checks.values_list("answer_id", flat=True))
    assert set(checks.values_list("answer_id", flat=True)) <= marked
    third = Assignment.objects.filter(project=project, is_check=False, reviewer__username="carol")
    assert not set(third.values_list("answer_id", flat=True)) & set(
        checks.values_list("answer_id", flat=True)
    )


@pytest.mark.django_db
def test_taking_a_check_moves_the_reviewers_progress_as_taking_a_task_does(demo):
    from annotate.labelling.selectors import reviewer_progress

    lena, carol = user(demo, "lena"), user(demo, "carol")
    services.mark_all_decided(project=demo, lead=lena)
    before = reviewer_progress(carol, demo)
    check = serve_check(demo, carol)
    after_check = reviewer_progress(carol, demo)
    assert (after_check.available, after_check.in_progress) == (
        before.available - 1,
        before.in_progress + 1,
    )
    label_everything(check)
    submit_labels(assignment=check)
    demo.check_rate = 0
    demo.save()
    before = reviewer_progress(carol, demo)
    next_task(project=demo, reviewer=carol)
    after_task = reviewer_progress(carol, demo)
    assert (after_task.available, after_task.in_progress) == (
        before.available - 1,
        before.in_progress + 1,
    )


class NeverCheck(random.Random):
    def random(self):
        return 0.999


@pytest.mark.django_db
def test_the_queue_costs_the_same_queries_whatever_the_rate_unless_it_serves_a_check(
    django_user_model, django_assert_num_queries
):
    """The labelling hot path: a draw that misses reads nothing more than a project without
    checks; serving a check reads the eligible checks and whether new answers remain, and
    writes the assignment (no window of answers to lock). One reviewer, the same state."""
    project, people, _ = queue_project(django_user_model)
    with django_assert_num_queries(TAKE_QUERIES):
        taken = next_task(project=project, reviewer=people[0])
    assert not taken.is_check
    taken.delete()
    project.check_rate = 0.5
    project.save()
    with django_assert_num_queries(TAKE_QUERIES):
        again = next_task(project=project, reviewer=people[0], rng=NeverCheck())
    assert not again.is_check and again.answer_id == taken.answer_id
    again.delete()
    with django_assert_num_queries(CHECK_QUERIES):
        assert next_task(project=project, reviewer=people[0], rng=AlwaysCheck()).is_check


# release_abandoned's read; savepoint and release; the membership locked; the task in
# progress; the window of open answers (the front band, then from the reviewer's point); its
# holders; the assignment and its history row written.
TAKE_QUERIES = 10
# The same up to the task in progress, then the eligible checks, whether new answers remain,
# and the assignment and its history row written.
CHECK_QUERIES = 9


@pytest.mark.django_db
def test_the_api_lists_checks_in_a_fixed_number_of_queries(client, demo, django_assert_num_queries):
    services.mark_all_decided(project=demo, lead=user(demo, "lena"))
    client.login(username="lena", password=PASSWORD)
    url = reverse("api:checks", kwargs={"slug": "demo"})
    client.get(url)
    # session, user, the role; the count and the page (answer and marker joined)
    with django_assert_num_queries(5):
        listed = client.get(url).json()
    assert listed["count"] == len(selectors.decided_answers(demo)) == len(listed["results"])


@pytest.mark.django_db
def test_a_check_submitted_is_heard_of_as_any_task_by_the_project_s_webhooks(demo):
    """A webhook's readers may include reviewers (a chat channel): a check's task.submitted
    carries the keys and kinds of values any task's does, and nothing that names a check."""
    lena, carol = user(demo, "lena"), user(demo, "carol")
    services.mark_all_decided(project=demo, lead=lena)
    register_endpoint(
        project=demo, url="https://hooks.example.org/c", events=["task.submitted"], by=lena
    )
    check = serve_check(demo, carol)
    label_everything(check)
    assert not submit_labels(assignment=check)
    demo.check_rate = 0
    demo.save(update_fields=["check_rate"])
    task = next_task(project=demo, reviewer=carol, rng=random.Random(1))
    assert task is not None and not task.is_check
    label_everything(task)
    assert not submit_labels(assignment=task)
    sent = [d.payload for d in WebhookDelivery.objects.order_by("pk")]
    assert len(sent) == 2
    as_check, as_task = sent
    assert as_check["type"] == as_task["type"] == "task.submitted"
    assert set(as_check["data"]) == set(as_task["data"])
    assert {k: type(v) for k, v in as_check["data"].items()} == {
        k: type(v) for k, v in as_task["data"].items()
    }
    assert as_check["data"]["revision"] == as_task["data"]["revision"] == 1
    assert "check" not in json.dumps(as_check).lower()
