"""Reports computed once per state of the labels, read by every page view until they change.

The agreement report, a judge run's calibration and the evaluation metrics of a large project
take seconds each. They depend only on the project's data, labels and decisions, so each is
stored in the database with the project's data version (annotate.report_cache, two queries)
and a digest of the code that computes it. A view reads the stored result:
- fingerprint unchanged: it is current, say when it was computed;
- labels changed since: show it, say so, and ask a worker to recompute (once per new state);
- nothing stored yet: compute it in the request when the project is small (or tasks run
  in-process), else ask a worker and show a page that waits for it (pending_answer);
- unchanged, but older than CLAIMDESK_REPORT_MAX_AGE_SECONDS: show it and have it computed
  again, as a change made behind the application's back moves no data version.

annotate.report_cache keeps, under the same data version, what a page derives in the request
(the evaluation page's tables and charts, the adjudication queue): in each process's memory,
because it is Python objects, and always current.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError, transaction
from django.http import Http404, HttpResponse
from django.utils import timezone

from annotate.models import Project
from annotate.report_cache import data_version
from jobs import framework
from jobs.models import StoredReport

Kind = StoredReport.Kind


# What a stored report is computed with: every module under COMPUTING but those named in
# PRESENTATION (they show reports and compute none: a change to a page or the API leaves every
# stored report as it was), and the label schema. A module moved or added under these folders
# is covered without anyone having to list it.
COMPUTING = ("evaluation", "annotate/gold")
PRESENTATION = frozenset(
    {
        "evaluation/admin.py",
        "evaluation/api.py",
        "evaluation/apps.py",
        "evaluation/judges/list_views.py",
        "evaluation/judges/urls.py",
        "evaluation/judges/views.py",
        "evaluation/management",
        "evaluation/migrations",
        "evaluation/urls.py",
        "evaluation/views",
        # the gold page and the export: the rest of annotate/gold/ derives the gold every
        # report reads
        "annotate/gold/exports.py",
        "annotate/gold/forms.py",
        "annotate/gold/selectors.py",
        "annotate/gold/views.py",
    }
)
ROOT = Path(__file__).resolve().parent.parent


def presentation(path: Path) -> bool:
    """Whether `path` is, or is inside, one of PRESENTATION."""
    name = path.relative_to(ROOT).as_posix()
    return any(name == shown or name.startswith(shown + "/") for shown in PRESENTATION)


def code_sources() -> list[Path]:
    """The statistics modules and what they read gold through (the gold and support_binary
    derivation, the label schema)."""
    computing = (p for folder in COMPUTING for p in (ROOT / folder).rglob("*.py"))
    return sorted([*(p for p in computing if not presentation(p)), ROOT / "annotate/schema.py"])


def _code_version() -> str:
    """A digest of code_sources(): a deploy that changes how a report is computed makes every
    stored one stale, without anyone having to remember a version number."""
    digest = hashlib.sha256()
    for path in code_sources():
        digest.update(path.relative_to(ROOT).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


CODE_VERSION = _code_version()


def fingerprint(project: Project, kind: str, key: str = "", *, version: str | None = None) -> str:
    """The report's kind and key, the statistics code, and the project's data version
    (annotate.report_cache.data_version: any submitted label or revision, decision, claim edit,
    import, judgment or correction changes it; ``version`` when it was just read)."""
    version = data_version(project) if version is None else version
    encoded = json.dumps([CODE_VERSION, kind, key, version])
    return hashlib.sha256(encoded.encode()).hexdigest()[:32]


def _agreement(project: Project, key: str) -> dict:
    from evaluation.reports.agreement import agreement_report

    return agreement_report(project)


def _calibration(project: Project, key: str) -> dict:
    from evaluation.models import JudgeRun
    from evaluation.reports.calibration import calibration_report

    run_id, split = key.split(":", 1)
    run = JudgeRun.objects.select_related("imported_by").get(project=project, pk=int(run_id))
    run.project = project
    return calibration_report(run=run, split=split)


def _evaluation(project: Project, key: str) -> dict:
    from evaluation.reports.evaluation import evaluate

    return evaluate(project)


def comparison_key(variant_a: int, variant_b: int, k: int) -> str:
    """A comparison's key: the two variants' ids (names can be 200 characters each) and k."""
    return f"{variant_a}:{variant_b}:{k}"


def _comparison(project: Project, key: str) -> dict:
    from annotate.models import Variant
    from evaluation.reports.comparison import compare

    a_pk, b_pk, k = (int(part) for part in key.split(":"))
    names = dict(Variant.objects.filter(project=project).values_list("pk", "name"))
    if a_pk not in names or b_pk not in names:
        raise Variant.DoesNotExist(f"variant {a_pk} or {b_pk} is gone from the project")
    return compare(project, names[a_pk], names[b_pk], k=k)


COMPUTE: dict[str, Callable[[Project, str], dict]] = {
    Kind.AGREEMENT: _agreement,
    Kind.CALIBRATION: _calibration,
    Kind.EVALUATION: _evaluation,
    Kind.COMPARISON: _comparison,
}


@dataclass
class Stored:
    """A report as a page shows it, with how fresh it is."""

    result: dict | None
    computed_at: datetime | None
    seconds: float | None
    fresh: bool  # computed from the labels as they are now
    refreshing: bool  # a worker has been asked for the current state
    version: str  # the project's data version it was read at (annotate.report_cache)

    @property
    def pending(self) -> bool:
        return self.result is None


def read(*, project: Project, kind: str, key: str = "", version: str | None = None) -> Stored:
    """The stored report, current or not; see the module's docstring for what happens when
    it is not. ``version``: the project's data version, when the request has just read it.
    The result is shared with this process's later readers (``_decoded``): read-only."""
    version = data_version(project) if version is None else version
    now_fingerprint = fingerprint(project, kind, key, version=version)
    row = StoredReport.objects.filter(project=project, kind=kind, key=key).defer("result").first()
    if row is not None and row.computed_at is not None and row.fingerprint == now_fingerprint:
        old = _past_max_age(row)
        if not old or not framework.runs_in_process():
            refreshing = False
            if old:  # shown while a worker computes it again (see _past_max_age)
                refreshing = _ask_worker(project, kind, key, now_fingerprint)
            result = _decoded(row)
            return Stored(
                result,
                row.computed_at,
                row.seconds,
                fresh=True,
                refreshing=refreshing,
                version=version,
            )
    # A stale report is shown while it is recomputed, unless other code computed it: its shape
    # may not be one the pages of this code read.
    showable = row is not None and row.computed_at is not None
    showable = showable and row.code_version == CODE_VERSION
    if framework.runs_in_process() or (not showable and _small(project)):
        row = _compute(project, kind, key, now_fingerprint, keep=True)
        return Stored(
            row.result, row.computed_at, row.seconds, fresh=True, refreshing=False, version=version
        )
    asked = _ask_worker(project, kind, key, now_fingerprint)
    if not showable:
        if not asked:  # nothing to show, and nobody computing it: a 503, try again
            raise framework.BackendUnavailable("no worker can be asked for this report")
        return Stored(None, None, None, fresh=False, refreshing=True, version=version)
    # Shown as it was computed: stale, and (when the task backend cannot be reached) not
    # being computed again until a later reader asks.
    return Stored(
        _decoded(row), row.computed_at, row.seconds, fresh=False, refreshing=asked, version=version
    )


# Decoded results, by stored row and the state it was computed for. A 10,000-answer
# evaluation report is 2 MB of JSON: reading and decoding it again for every view of the page,
# every page of its tables and every CSV took longer than rendering them.
_DECODED_MAX = 8
_decoded_lock = threading.Lock()
_decoded_results: OrderedDict[tuple, dict] = OrderedDict()


def _decoded(row: StoredReport) -> dict:
    """The row's result (read with ``defer("result")``), decoded once per process. Rows are
    only ever rewritten whole, with a new fingerprint and date: a kept one is what the row
    held."""
    key = (row.project_id, row.kind, row.key, row.fingerprint, row.computed_at)
    with _decoded_lock:
        if key in _decoded_results:
            _decoded_results.move_to_end(key)
            return _decoded_results[key]
    result = StoredReport.objects.filter(pk=row.pk).values_list("result", flat=True).first()
    if result is None:  # deleted meanwhile, with its project or judge run
        raise Http404("That report is gone.")
    _keep(key, result)
    return result


def forget_decoded() -> None:
    """Drop every kept result (tests; a deployment never needs to)."""
    with _decoded_lock:
        _decoded_results.clear()


def _keep(key: tuple, result: dict) -> None:
    with _decoded_lock:
        _decoded_results[key] = result
        _decoded_results.move_to_end(key)
        while len(_decoded_results) > _DECODED_MAX:
            _decoded_results.popitem(last=False)


# The waiting page's element that polls (htmx sends its id as HX-Trigger).
PENDING_POLL = "report-pending"


def pending_answer(
    request, stored: Stored, *, project: Project, role: str, title: str, current: str
):
    """What a report page answers before showing its report: while a worker computes a report
    nothing was stored for yet, the waiting page, and to that page's own polls nothing (204);
    once the report is stored, to the poll, a reload. None: show the report.

    The waiting page polls with htmx rather than reloading itself with a meta refresh: a page
    that reloads every few seconds moves a screen reader's or keyboard user's place back to
    its top each time (WCAG 2.2.1). Without scripts it still reloads itself (noscript)."""
    from django.shortcuts import render
    from django_htmx.http import HttpResponseClientRefresh

    polled = bool(request.htmx) and request.htmx.trigger == PENDING_POLL
    if not stored.pending:
        return HttpResponseClientRefresh() if polled else None
    if polled:
        return HttpResponse(status=204)
    context = {"project": project, "role": role, "title": title, "current": current}
    context["poll_id"] = PENDING_POLL
    return render(request, "jobs/report_pending.html", context)


def _small(project: Project) -> bool:
    from annotate.gold.exports import gold_size

    return gold_size(project) <= settings.CLAIMDESK_REPORT_INLINE_MAX_ROWS


def _ask_worker(project: Project, kind: str, key: str, wanted: str) -> bool:
    """Enqueue one recomputation per new state of the labels (a lost one is asked again once
    the stale period has passed). False when the task backend cannot take it (Redis down):
    nothing is computing it then, and the next reader asks again."""
    from jobs.tasks import refresh_report

    cutoff = timezone.now() - timedelta(seconds=settings.CLAIMDESK_JOB_STALE_SECONDS)
    with transaction.atomic():
        row, _ = StoredReport.objects.select_for_update().get_or_create(
            project=project, kind=kind, key=key
        )
        if row.wanted == wanted and row.wanted_at and row.wanted_at > cutoff:
            return True
        row.wanted, row.wanted_at = wanted, timezone.now()
        row.save(update_fields=["wanted", "wanted_at"])
        if framework.enqueues_in_transaction():
            framework.send(refresh_report, project.pk, kind, key)
            return True
    # Redis is not part of the transaction: sent once the request is committed (as for jobs).
    try:
        framework.send(refresh_report, project.pk, kind, key)
    except framework.BackendUnavailable:
        StoredReport.objects.filter(pk=row.pk, wanted=wanted).update(wanted_at=None)
        return False
    return True


def refresh(*, project_id: int, kind: str, key: str) -> None:
    """The worker's side: compute the report for the labels as they are now and store it. A
    project, judge run or variant deleted meanwhile leaves nothing to do."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return
    version = data_version(project)
    current = fingerprint(project, kind, key, version=version)
    if _is_current(project, kind, key, current):
        return  # another worker got there first
    try:
        if kind == Kind.EVALUATION:
            _refresh_evaluation(project, current, version)
        else:
            _compute(project, kind, key, current)
    except ObjectDoesNotExist:
        return  # its judge run or variant went with a re-import: no page asks for it now
    except Exception:
        # Asked again by a view once the stale period has passed, not at the next one: a
        # page that polls would otherwise queue a failing computation every few seconds.
        StoredReport.objects.filter(project=project, kind=kind, key=key).update(
            wanted_at=timezone.now()
        )
        raise


def _is_current(project: Project, kind: str, key: str, wanted: str) -> bool:
    row = StoredReport.objects.filter(project=project, kind=kind, key=key).defer("result").first()
    return (
        row is not None
        and row.fingerprint == wanted
        and row.computed_at is not None
        and not _past_max_age(row)
    )


def _past_max_age(row: StoredReport) -> bool:
    """Whether a stored report is older than CLAIMDESK_REPORT_MAX_AGE_SECONDS. The data
    version sees every change the application makes, not one made behind its back (a label
    edited field by field in the Django admin, an UPDATE in SQL); such a change shows once
    the report is this old: it is shown while a worker computes it again."""
    age = timezone.now() - row.computed_at
    return age > timedelta(seconds=settings.CLAIMDESK_REPORT_MAX_AGE_SECONDS)


def _refresh_evaluation(project: Project, current: str, version: str) -> None:
    """The evaluation, then the comparison of its first two variants that the page shows
    beside it, from one read of the project (reading it is half of computing either): the
    page has both as soon as this task is done, instead of asking for the comparison then."""
    from evaluation.reports.comparison import DEFAULT_COMPARE_K, compare
    from evaluation.reports.dataset import load
    from evaluation.reports.evaluation import evaluate

    data = load(project)
    _compute(project, Kind.EVALUATION, "", current, compute=lambda: evaluate(project, data=data))
    variants = list(data.variants.values())  # by name, as the page lists them
    if len(variants) < 2:
        return
    a, b = variants[:2]
    key = comparison_key(a.pk, b.pk, DEFAULT_COMPARE_K)
    wanted = fingerprint(project, Kind.COMPARISON, key, version=version)
    if not _is_current(project, Kind.COMPARISON, key, wanted):
        _compute(
            project,
            Kind.COMPARISON,
            key,
            wanted,
            compute=lambda: compare(project, a.name, b.name, k=DEFAULT_COMPARE_K, data=data),
        )


def _compute(
    project: Project,
    kind: str,
    key: str,
    current: str,
    *,
    keep: bool = False,
    compute: Callable[[], dict] | None = None,
) -> StoredReport:
    """Compute (by ``compute``, else the kind's own function) and store, and ``keep`` it
    decoded for a web process's next reader. The fingerprint is the one read before
    computing: labels that change while it runs make the next view ask again."""
    started = time.perf_counter()
    result = compute() if compute is not None else COMPUTE[kind](project, key)
    # Stored as JSON and read back as JSON, whichever path served it: a page must not depend
    # on whether its report came from a worker or from this request.
    result = json.loads(json.dumps(result, allow_nan=False))
    seconds = time.perf_counter() - started
    values = {
        "result": result,
        "fingerprint": current,
        "computed_at": timezone.now(),
        "seconds": round(seconds, 3),
        "code_version": CODE_VERSION,
    }
    if keep:
        _keep((project.pk, kind, key, current, values["computed_at"]), result)
    where = {"project": project, "kind": kind, "key": key}
    if not StoredReport.objects.filter(**where).update(**values):
        try:
            with transaction.atomic():
                return StoredReport.objects.create(**where, **values)
        except IntegrityError:  # another request stored it first: ours is as current
            StoredReport.objects.filter(**where).update(**values)
    row = StoredReport(**where, **values)
    return row
