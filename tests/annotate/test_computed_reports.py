"""One mechanism for computed reports (annotate.common.computed): an entry is current iff its
stored revision equals its scope's revision now and its code version is the running code's.
An edit made in the Django admin moves the revisions like any other write, so every report
is computed again; a report stored in a shape this code does not read is computed again,
never a KeyError."""

from __future__ import annotations

import json

import pytest
from django.forms.models import model_to_dict
from django.test import Client
from django.urls import reverse

from annotate.adjudication import views as adjudication_views
from annotate.common import computed
from annotate.gold.summary import label_states
from annotate.models import Answer, ClaimLabel, ComputedReport, Project
from annotate.projects import views as project_views
from evaluation.models import Verdict
from evaluation.reports import agreement as agreement_module
from tests.api import build_demo
from tests.conftest import PASSWORD, project_calls

pytestmark = pytest.mark.django_db

STORED = ("agreement", "evaluation", "comparison", "calibration")


@pytest.fixture
def demo(db, reviewer_a, reviewer_b, lead):
    return build_demo([reviewer_a, reviewer_b], lead)


@pytest.fixture
def browser(demo, lead) -> Client:
    lead.set_password(PASSWORD)
    lead.save()
    client = Client()
    client.login(username=lead.username, password=PASSWORD)
    return client


def pages(project) -> list[str]:
    run = project.judge_runs.get()
    return [
        reverse("agreement", args=[project.slug]),
        reverse("evaluation:report", args=[project.slug]),  # with its comparison
        reverse("judge_run", args=[project.slug, run.pk]),
        reverse("gold", args=[project.slug]),
        reverse("adjudication_queue", args=[project.slug]),
        reverse("project_setup", args=[project.slug]),
    ]


def view_every_report(browser, project) -> None:
    for url in pages(project):
        assert browser.get(url).status_code == 200, url


def stored(project) -> dict[str, tuple]:
    """Each stored report kind's (revision, computed_at, result)."""
    rows = ComputedReport.objects.filter(project=project, kind__in=STORED)
    return {row.kind: (row.revision, row.computed_at, row.result) for row in rows}


def admin_change(client, obj, **changes):
    """Post the admin's change form of `obj`, its fields as they are but `changes`."""
    data = {}
    for name, value in {**model_to_dict(obj), **changes}.items():
        if isinstance(value, list | dict):
            value = json.dumps(value)
        data[name] = "" if value is None else value
    meta = obj._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
    response = client.post(url, data)
    assert response.status_code == 302, response.content.decode()[:2000]


@pytest.fixture
def counted(monkeypatch, derived_shares):
    """The computations of the reports kept in memory: the queue, the pair shares (which
    answers), the blinding check."""
    return {
        "queue": project_calls(monkeypatch, adjudication_views.queue, "adjudication_queue"),
        "shares": derived_shares,
        "blinding": project_calls(monkeypatch, project_views, "blinding_check"),
    }


@pytest.mark.parametrize("edited", ["claim label", "verdict"])
def test_an_admin_edit_has_every_report_computed_again(
    browser, admin_client, demo, counted, edited
):
    view_every_report(browser, demo)
    before = stored(demo)
    assert set(before) == set(STORED)
    doubly = set(label_states(demo))
    assert counted["shares"] == [doubly] and counted["queue"] and counted["blinding"]
    queues, blinding = len(counted["queue"]), len(counted["blinding"])
    view_every_report(browser, demo)  # kept: nothing computed again
    assert stored(demo) == before and counted["shares"] == [doubly]
    assert (len(counted["queue"]), len(counted["blinding"])) == (queues, blinding)

    if edited == "claim label":
        label = ClaimLabel.objects.filter(assignment__status="submitted").first()
        flipped = "contradicted" if label.support == "supported" else "supported"
        admin_change(admin_client, label, support=flipped)
    else:
        verdict = Verdict.objects.filter(run__project=demo, claim__isnull=False).first()
        flipped = "contradicted" if verdict.label == "supported" else "supported"
        admin_change(admin_client, verdict, label=flipped)

    revision = Project.objects.get(pk=demo.pk).revision
    view_every_report(browser, demo)
    after = stored(demo)
    for kind in STORED:
        assert after[kind][0] == revision != before[kind][0], kind
        assert after[kind][1] > before[kind][1], kind
    changed = "agreement" if edited == "claim label" else "calibration"
    assert after[changed][2] != before[changed][2]  # and the edit shows in it
    assert counted["shares"] == [doubly, doubly]  # every pair derived again
    assert len(counted["queue"]) > queues and len(counted["blinding"]) > blinding


def test_an_admin_deletion_moves_the_revisions(admin_client, demo):
    passage = demo.passages.first()
    revisions = computed.revisions(demo)
    answers = dict(Answer.objects.filter(project=demo).values_list("pk", "revision"))
    url = reverse("admin:annotate_passage_delete", args=[passage.pk])
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    now = computed.revisions(demo)
    assert now[0] > revisions[0] and now[1] > revisions[1]
    moved = dict(Answer.objects.filter(project=demo).values_list("pk", "revision"))
    assert all(moved[pk] > revision for pk, revision in answers.items())


@pytest.mark.parametrize(
    "old",
    [
        {"code_version": "0ld0ld0ld0ld"},  # another deploy's code
        {"result": {"computed_by": "an older shape"}},  # this code version, keys missing
    ],
)
def test_a_report_stored_in_an_old_shape_is_computed_again_not_a_key_error(
    browser, demo, settings, old
):
    """A report of another shape, stored at the current revision: the page computes it
    again rather than reading a key it lacks. Large or small project alike: a large one
    would otherwise show it while a worker recomputes."""
    url = reverse("agreement", args=[demo.slug])
    calls_before = browser.get(url)
    assert calls_before.status_code == 200
    ComputedReport.objects.filter(project=demo, kind="agreement").update(**old)
    computed.forget_decoded()
    page = browser.get(url)
    assert page.status_code == 200
    assert 'data-report-freshness="current"' in page.content.decode()
    row = ComputedReport.objects.get(project=demo, kind="agreement")
    assert row.code_version == computed.CODE_VERSION and "slices" in row.result
    # the evaluation page and its API alike
    ComputedReport.objects.filter(project=demo, kind="evaluation").update(
        result={"computed_by": "an older shape"}
    )
    computed.forget_decoded()
    assert browser.get(reverse("evaluation:report", args=[demo.slug])).status_code == 200
    assert "variants" in ComputedReport.objects.get(project=demo, kind="evaluation").result


def test_a_report_of_an_old_shape_is_not_shown_while_a_worker_recomputes(
    browser, demo, settings, database_tasks
):
    url = reverse("agreement", args=[demo.slug])
    browser.get(url)
    ComputedReport.objects.filter(project=demo, kind="agreement").update(
        result={"computed_by": "an older shape"}, revision=-1
    )
    computed.forget_decoded()
    page = browser.get(url)
    assert page.status_code == 200
    assert 'data-report-freshness="pending"' in page.content.decode()


def test_a_pair_share_stored_in_an_old_shape_is_derived_again(browser, demo, derived_shares):
    gold = reverse("gold", args=[demo.slug])
    assert browser.get(gold).status_code == 200
    doubly = set(label_states(demo))
    ComputedReport.objects.filter(project=demo, kind="pair-shares").update(result={"old": 1})
    computed.clear()
    assert browser.get(gold).status_code == 200
    assert derived_shares == [doubly, doubly]


def test_every_write_path_moves_the_revision_in_its_transaction(demo, lead):
    """The services that change what reports read move the project's revision (the API,
    the pages and the commands all go through them)."""
    from annotate.labelling.services import reopen_task
    from tests.conftest import decide_support

    before = computed.revisions(demo)[0]
    pair = decide_support(demo, lead)
    decided = computed.revisions(demo)[0]
    assert decided > before
    assert Answer.objects.get(pk=pair.answer_id).revision > 0
    free = demo.assignments.filter(status="submitted").exclude(answer_id=pair.answer_id).first()
    free.undo_until = free.submitted_at.replace(year=3000)
    free.save(update_fields=["undo_until"])
    reopen_task(assignment=free)
    assert computed.revisions(demo)[0] > decided


def test_the_rule_is_one_rule_for_every_kind():
    """Every kind is registered by its app, with a scope the rule knows."""
    kinds = computed.KINDS
    assert {"agreement", "evaluation", "calibration", "comparison"} <= set(kinds)
    assert {"adjudication-queue", "pair-shares", "pair-summary", "blinding-check"} <= set(kinds)
    assert {kind.scope for kind in kinds.values()} <= {
        computed.PROJECT,
        computed.CONTENT,
        computed.ANSWER,
    }
    assert all(kinds[name].stored for name in ("agreement", "evaluation", "calibration"))
    with pytest.raises(LookupError):
        computed.kind_of("no-such-report")


def test_agreement_is_computed_once_per_revision(browser, demo, monkeypatch):
    calls = project_calls(monkeypatch, agreement_module, "agreement_report")
    url = reverse("agreement", args=[demo.slug])
    browser.get(url)
    browser.get(url)
    assert calls == [demo.slug]
    computed.touch(demo)
    browser.get(url)
    assert calls == [demo.slug, demo.slug]


def test_a_save_of_a_whole_row_read_earlier_never_moves_a_revision_back(demo, lead):
    """The admin saves every field of the row its form read: a revision moved meanwhile (a
    submission, a decision) must stay where it is, or a report computed at it would look
    current after the admin's change."""
    stale = Project.objects.get(pk=demo.pk)
    answer = Answer.objects.filter(project=demo).first()
    computed.touch(demo, content=True, answers=[answer.pk])
    moved = computed.revisions(demo)
    answer_revision = Answer.objects.get(pk=answer.pk).revision
    assert answer_revision == answer.revision + 1
    stale.guidelines = "edited elsewhere"
    stale.save()
    assert computed.revisions(demo) == moved
    assert Project.objects.get(pk=demo.pk).guidelines == "edited elsewhere"
    answer.elapsed_ms = 12.0
    answer.save()
    assert Answer.objects.get(pk=answer.pk).revision == answer_revision
