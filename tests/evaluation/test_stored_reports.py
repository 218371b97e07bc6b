"""Stored reports (annotate.common.computed): a page view reads the report stored for the
project's revision and says how fresh it is; a change of labels makes it recomputed (in the
request when tasks run in-process, by one worker task otherwise, the stale figures shown
meanwhile, marked as such); a project's first report, however small, is computed by a worker
while the page says so (polling, or a link to reload without scripts)."""

from __future__ import annotations

import dataclasses

import pytest
from django.db.models import F
from django.test import Client
from django.urls import reverse
from django_tasks_db.models import DBTaskResult

from annotate.common import computed
from annotate.models import Assignment, LabelRevision
from annotate.models import ComputedReport as StoredReport
from annotate.tasks import refresh_report
from evaluation.models import JudgeRun
from evaluation.reports import agreement as agreement_module
from tests.api import API, build_demo, token_client
from tests.conftest import PASSWORD, project_calls

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db, reviewer_a, reviewer_b, lead):
    """The demo project, open, both reviewers' labels in and a judge run (tests.api's)."""
    return build_demo([reviewer_a, reviewer_b], lead)


@pytest.fixture
def browser(demo, lead) -> Client:
    lead.set_password(PASSWORD)
    lead.save()
    client = Client()
    client.login(username=lead.username, password=PASSWORD)
    return client


@pytest.fixture
def computations(monkeypatch):
    """How many times the agreement report is computed."""
    return project_calls(monkeypatch, agreement_module, "agreement_report")


def relabel(project) -> None:
    """A label set is submitted again: what every submission writes, a new revision of the
    label set, and of the project and the answer (labelling.services.submit_labels)."""
    assignment = Assignment.objects.filter(project=project, status="submitted").first()
    Assignment.objects.filter(pk=assignment.pk).update(revision=F("revision") + 1)
    LabelRevision.objects.create(
        assignment=assignment, number=assignment.revision + 1, labels={}, source="import"
    )
    computed.touch(project, answers=[assignment.answer_id])


def test_the_agreement_page_is_computed_once_per_state_of_the_labels(browser, demo, computations):
    first = browser.get("/p/demo/agreement/").content.decode()
    assert 'data-report-freshness="current"' in first and "as they are now" in first
    browser.get("/p/demo/agreement/")
    browser.get("/p/demo/agreement/?format=json")
    assert computations == ["demo"]
    relabel(demo)
    browser.get("/p/demo/agreement/")
    assert computations == ["demo", "demo"]


def run_the_workers_tasks() -> None:
    for task in DBTaskResult.objects.filter(status="READY"):
        refresh_report.call(*task.args_kwargs["args"])
        DBTaskResult.objects.filter(pk=task.pk).update(status="SUCCESSFUL")


def test_changed_labels_show_the_stored_report_marked_stale_and_ask_one_worker(
    browser, demo, computations, database_tasks
):
    browser.get("/p/demo/agreement/")  # the first one: a worker's
    run_the_workers_tasks()
    DBTaskResult.objects.all().delete()
    relabel(demo)
    page = browser.get("/p/demo/agreement/").content.decode()
    assert 'data-report-freshness="recomputing"' in page and "labels have changed" in page
    assert "Support" in page  # the stored figures are still shown
    browser.get("/p/demo/agreement/")
    assert DBTaskResult.objects.count() == 1  # one recomputation per new state
    assert computations == ["demo"]

    (task,) = DBTaskResult.objects.all()
    refresh_report.call(*task.args_kwargs["args"])
    assert computations == ["demo", "demo"]
    page = browser.get("/p/demo/agreement/").content.decode()
    assert 'data-report-freshness="current"' in page


def test_a_report_of_the_code_before_a_deploy_is_never_shown(
    browser, demo, computations, database_tasks, settings
):
    """A deploy that changes the statistics code makes every stored report stale, and a
    report of other code may have another shape (a key this code's page reads, missing):
    while a worker recomputes it, the page says it is being computed, never those figures."""
    browser.get("/p/demo/agreement/")
    run_the_workers_tasks()
    DBTaskResult.objects.all().delete()
    StoredReport.objects.filter(kind="agreement").update(code_version="0ld0ld0ld0ld")
    relabel(demo)
    page = browser.get("/p/demo/agreement/").content.decode()
    assert 'data-report-freshness="pending"' in page and "Support" not in page
    assert DBTaskResult.objects.count() == 1
    (task,) = DBTaskResult.objects.all()
    refresh_report.call(*task.args_kwargs["args"])
    assert StoredReport.objects.get(kind="agreement").code_version == computed.CODE_VERSION
    page = browser.get("/p/demo/agreement/").content.decode()
    assert 'data-report-freshness="current"' in page
    assert computations == ["demo", "demo"]


def test_a_projects_first_report_waits_for_a_worker_however_small(
    browser, demo, lead, database_tasks, settings
):
    page = browser.get("/p/demo/agreement/")
    assert page.status_code == 200
    # the waiting page: never a meta refresh (#34), a polite status and a link to reload
    assert 'http-equiv="refresh"' not in page.content.decode()
    assert 'role="status" aria-live="polite"' in page.content.decode()
    assert 'data-report-freshness="pending"' in page.content.decode()
    api = token_client(lead).get(f"{API}/projects/demo/agreement/")
    assert api.status_code == 202 and api["Retry-After"]

    (task,) = DBTaskResult.objects.all()
    refresh_report.call(*task.args_kwargs["args"])
    api = token_client(lead).get(f"{API}/projects/demo/agreement/")
    assert api.status_code == 200 and api["Report-Current"] == "true"
    assert api.json()["slices"]["all"]["support"]["n"] > 0
    assert "Reviewer agreement" in browser.get("/p/demo/agreement/").content.decode()


POLL = {"HX-Request": "true", "HX-Trigger": computed.PENDING_POLL}


@pytest.mark.parametrize("path", ["/p/demo/agreement/", "/p/demo/evaluation/", "judge"])
def test_the_waiting_page_polls_and_is_told_to_reload_once_the_report_is_stored(
    browser, demo, database_tasks, settings, path
):
    """No meta refresh for a browser that runs scripts (it would move a screen reader's place
    to the top of the page every 3 s): the page polls, gets nothing back while the worker
    computes, and one reload once the report is there. Without scripts, no meta refresh either
    (#34): a link to reload."""
    if path == "judge":
        path = reverse("judge_run", args=[demo.slug, JudgeRun.objects.get(project=demo).pk])
    page = browser.get(path).content.decode()
    assert 'data-report-freshness="pending"' in page
    assert 'http-equiv="refresh"' not in page
    assert "<noscript><p><a href=" in page and "Reload this page</a>" in page
    assert f'id="{computed.PENDING_POLL}"' in page and 'hx-trigger="every 3s"' in page
    waiting = browser.get(path, headers=POLL)
    assert waiting.status_code == 204 and not waiting.content
    for task in DBTaskResult.objects.all():
        refresh_report.call(*task.args_kwargs["args"])
    ready = browser.get(path, headers=POLL)
    assert ready.status_code == 200 and ready["HX-Refresh"] == "true" and not ready.content
    # the reload shows the report; a request from anything else than the poll always did
    shown = browser.get(path).content.decode()
    assert 'data-report-freshness="current"' in shown
    other = browser.get(path, headers={"HX-Request": "true", "HX-Trigger": "something-else"})
    assert other.status_code == 200 and "HX-Refresh" not in other


def test_the_calibration_page_says_how_fresh_it_is(browser, demo):
    run = demo.judge_runs.get()
    page = browser.get(f"/p/demo/judges/{run.pk}/").content.decode()
    assert 'data-report-freshness="current"' in page
    kinds = set(StoredReport.objects.values_list("kind", flat=True))
    # the run's calibration, and the budget planner's default plan (±0.05, no sample yet)
    assert kinds == {"calibration", "calibration-plan"}
    assert StoredReport.objects.get(kind="calibration").key == f"{run.pk}:judge_test"
    assert StoredReport.objects.get(kind="calibration-plan").key == f"{run.pk}:judge_test:0.05:0"


def test_the_stored_report_is_the_computed_one(demo):
    stored = computed.read(demo, "agreement")
    direct = agreement_module.agreement_report(demo)
    assert stored.result["slices"]["all"]["support"] == {
        key: (list(value) if isinstance(value, tuple) else value)
        for key, value in direct["slices"]["all"]["support"].items()
    }


def test_a_stored_report_reads_back_in_the_order_it_was_computed_in(demo):
    """jsonb (PostgreSQL) orders an object's keys by length: a variant "hybrid" came before
    "baseline", "latency" before "faithfulness", "ok" before "not_retrieved". Pages list
    variants, figures and stages in the report's order, so the stored one must keep it, on
    either database."""
    from evaluation.reports.evaluation import evaluate

    computed.read(demo, "evaluation")
    stored = StoredReport.objects.get(kind="evaluation").result
    fresh = evaluate(demo)
    assert list(stored["variants"]) == list(fresh["variants"]) == ["baseline", "verifier"]
    assert list(stored["variants"]["baseline"]["generation"]) == list(
        fresh["variants"]["baseline"]["generation"]
    )
    assert list(stored["variants"]["baseline"]["stages"]["answerable"]["rows"]) == list(
        fresh["variants"]["baseline"]["stages"]["answerable"]["rows"]
    )


def test_the_evaluation_api_reads_the_stored_default_report(demo, lead):
    client = token_client(lead)
    first = client.get(f"{API}/projects/demo/evaluation/")
    assert first.status_code == 200 and first["Report-Current"] == "true"
    assert StoredReport.objects.filter(kind="evaluation").count() == 1
    again = client.get(f"{API}/projects/demo/evaluation/?slice=answerable")
    assert again["Report-Computed-At"] == first["Report-Computed-At"]
    custom = client.get(f"{API}/projects/demo/evaluation/?k=1,3")
    assert custom.status_code == 200 and "Report-Current" not in custom


def test_a_large_projects_evaluation_page_is_computed_by_a_worker_never_in_the_request(
    browser, demo, lead, database_tasks, settings, monkeypatch
):
    """The page reads the report the API reads, and the comparison of two variants beside it:
    the first view of a large project waits for a worker, and after a change the stored
    figures are shown, marked, while one worker recomputes. The web process never reads the
    project's answers (at 10,000 answers that took seconds, and a worker's memory with it)."""
    from evaluation.reports import comparison, dataset, evaluation

    loads = project_calls(monkeypatch, dataset, "load")
    for module in (evaluation, comparison):  # each reads the data itself when not given it
        monkeypatch.setattr(module, "load", dataset.load)

    def run_the_workers_tasks() -> int:
        tasks = DBTaskResult.objects.filter(status="READY")
        for task in tasks:
            refresh_report.call(*task.args_kwargs["args"])
        return tasks.update(status="SUCCESSFUL")

    page = browser.get("/p/demo/evaluation/").content.decode()
    assert 'data-report-freshness="pending"' in page and 'http-equiv="refresh"' not in page
    assert loads == []
    assert run_the_workers_tasks() == 1
    assert loads == ["demo"]

    page = browser.get("/p/demo/evaluation/").content.decode()
    assert 'data-report-freshness="current"' in page and "Claim faithfulness" in page
    assert "Latency, baseline: 30 answers" in page  # the histograms come from the report
    # the same task compared the first two variants, from the same read of the project
    assert "Settings changed from baseline to verifier" in page
    # another pair waits for its own task, polling in place
    other = "/p/demo/evaluation/?a=verifier&b=baseline"
    page = browser.get(other).content.decode()
    assert 'hx-trigger="every 3s"' in page and "computing the comparison" in page
    assert run_the_workers_tasks() == 1
    page = browser.get(other).content.decode()
    assert "computing the comparison" not in page and "Settings changed from verifier" in page
    assert loads == ["demo", "demo"]
    api = token_client(lead).get(f"{API}/projects/demo/evaluation/")
    assert api["Report-Current"] == "true"
    assert StoredReport.objects.filter(kind="evaluation").count() == 1

    relabel(demo)
    page = browser.get("/p/demo/evaluation/").content.decode()
    assert 'data-report-freshness="recomputing"' in page and "Claim faithfulness" in page
    assert "computed before the latest changes" in page
    browser.get(
        "/p/demo/evaluation/?dpage=2", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="table-diagnosis"
    )
    browser.get("/p/demo/evaluation/?format=csv&table=case_transitions")
    assert loads == ["demo", "demo"]
    # asked once each for the new state; the evaluation's task computes both, the
    # comparison's then finds it current
    assert run_the_workers_tasks() == 2
    assert loads == ["demo", "demo", "demo"]
    page = browser.get("/p/demo/evaluation/").content.decode()
    assert 'data-report-freshness="current"' in page
    assert "computed before the latest changes" not in page


def test_a_report_naming_a_variant_that_is_gone_shows_no_comparison(browser, demo):
    """A stored report from before a re-import may name a variant the project no longer has
    (shown, marked as recomputing, until a worker is done): the page leaves the comparison out
    rather than failing."""
    from annotate.models import Variant

    assert "Settings changed from baseline" in browser.get("/p/demo/evaluation/").content.decode()
    Variant.objects.filter(project=demo, name="verifier").update(name="verifier-renamed")
    computed.clear()
    page = browser.get("/p/demo/evaluation/?a=baseline&b=verifier")
    assert page.status_code == 200
    assert "Settings changed from" not in page.content.decode()


def test_a_stored_result_is_read_and_decoded_once_per_process(demo, lead, browser):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    first = computed.read(demo, "evaluation")  # computed and stored
    again = computed.read(demo, "evaluation")  # read and decoded
    with CaptureQueriesContext(connection) as queries:
        kept = computed.read(demo, "evaluation")
    assert kept.result is again.result and kept.result == first.result
    assert not any('"result"' in q["sql"] for q in queries.captured_queries)
    # The pages and the API read it without changing it.
    client = token_client(lead)
    client.get(f"{API}/projects/demo/evaluation/?slice=answerable&latency_budget_ms=100")
    browser.get("/p/demo/evaluation/?latency_budget=100&unsupported_limit=0.2&k=3")
    browser.get("/p/demo/evaluation/?format=csv&table=diagnosis")
    assert kept.result == StoredReport.objects.get(kind="evaluation").result
    relabel(demo)  # a new state: the next computation is stored and read afresh
    assert computed.read(demo, "evaluation").result is not kept.result


def test_the_api_filtering_a_shared_report_leaves_it_whole(demo, lead):
    client = token_client(lead)
    client.get(f"{API}/projects/demo/evaluation/")
    narrowed = client.get(
        f"{API}/projects/demo/evaluation/?slice=answerable&latency_budget_ms=100"
    ).json()
    assert list(narrowed["variants"]["baseline"]["generation"]) == ["answerable"]
    assert "limits" in narrowed
    whole = client.get(f"{API}/projects/demo/evaluation/").json()
    assert "limits" not in whole and "all" in whole["variants"]["baseline"]["generation"]


def test_a_report_that_fails_is_asked_again_only_after_the_stale_period(
    browser, demo, database_tasks, settings, monkeypatch
):
    from datetime import timedelta

    from django.utils import timezone

    def fails(project, key):
        raise RuntimeError("the statistics broke")

    agreement = dataclasses.replace(computed.KINDS["agreement"], compute=fails)
    monkeypatch.setitem(computed.KINDS, "agreement", agreement)
    browser.get("/p/demo/agreement/")
    (task,) = DBTaskResult.objects.all()
    with pytest.raises(RuntimeError):
        refresh_report.call(*task.args_kwargs["args"])
    for _ in range(3):  # the waiting page asks again (a poll, or a reload without scripts)
        assert (
            'data-report-freshness="pending"' in browser.get("/p/demo/agreement/").content.decode()
        )
    assert DBTaskResult.objects.count() == 1
    stale = timezone.now() - timedelta(seconds=settings.CLAIMDESK_JOB_STALE_SECONDS + 1)
    StoredReport.objects.filter(kind="agreement").update(wanted_at=stale)
    browser.get("/p/demo/agreement/")
    assert DBTaskResult.objects.count() == 2


@pytest.mark.django_db(False)
def test_the_code_version_covers_every_module_a_report_is_computed_with():
    """The stored reports' code version digests the modules that compute them, not the pages
    that show them (a page's change must not make every report be computed again); a module
    the computing ones import must not be left out."""
    import os
    import subprocess
    import sys

    root = computed.ROOT
    # What the computing modules import, beyond what Django's start-up loads (the admin).
    probe = (
        "import django, importlib, pkgutil, sys; django.setup(); before = set(sys.modules); "
        "import evaluation.reports as r; "
        "[importlib.import_module(m.name) for m in pkgutil.iter_modules(r.__path__, 'evaluation.reports.')]; "  # noqa: E501
        "new = set(sys.modules) - before; "
        "print(' '.join(m for m in new if m.startswith(('evaluation.', 'annotate.gold'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
    ).stdout.split()
    covered = {
        p.relative_to(root).with_suffix("").as_posix().replace("/", ".").removesuffix(".__init__")
        for p in computed.code_sources()
    }
    assert {"evaluation.reports.evaluation", "evaluation.metrics"} <= set(loaded)
    # (annotate.gold.pairs, which calibration reads gold through, is loaded at start-up now:
    # the report kinds are registered then, annotate.common.computed.)
    assert "evaluation.reports.calibration" in set(loaded) and "annotate.gold.pairs" in covered
    assert set(loaded) <= covered, set(loaded) - covered
    assert "evaluation.views.report" not in covered and "evaluation.judges.views" not in covered


def test_every_module_of_the_reports_and_of_gold_s_derivation_is_in_the_code_version():
    """A module moved into evaluation/reports/ or annotate/gold/, or added there, counts in
    the code version without anyone listing it: only the named presentation modules are left
    out, and each of those names a module that exists (a rename cannot leave a stale name
    that quietly covers nothing, or a module that should count)."""
    root = computed.ROOT
    covered = set(computed.code_sources())
    for folder in ("evaluation/reports", "annotate/gold"):
        modules = [p for p in (root / folder).glob("*.py") if p.name != "__init__.py"]
        assert len(modules) >= 5, folder
        for module in modules:
            assert module in covered or computed.presentation(module), module
    assert all((root / shown).exists() for shown in computed.PRESENTATION)
    assert not any(computed.presentation(p) for p in (root / "evaluation/reports").glob("*.py"))
    assert root / "annotate/gold/pairs.py" in covered
    assert root / "annotate/gold/views.py" not in covered
