"""Computed reports: one place that keeps what is derived from a project's data, and one rule
for when it is stale.

**The rule.** An entry is current iff its stored revision equals its scope's revision now and
its code version equals the running code's (CODE_VERSION). The scopes are
- the project (Project.revision): moved, in the same transaction, by every write that changes
  what any report reads -- labels submitted or reopened, decisions, every import, answer
  corrections, the schema, state and opening, members, edits and deletions in the admin;
- the project's content (Project.content_revision): moved by the writes that change the
  answers, claims, cases, variants or passages, not by the labels (the blinding check);
- one answer (Answer.revision): moved by the writes that change its share of the pair
  summary -- its label sets, its decisions, its claims, its case, the schema.
touch() moves them; every service that writes calls it inside its transaction, and so does
the Django admin (annotate.admin.RevisionAdmin). A change made behind the application's back
(SQL) moves nothing: it shows once anything else moves the revision.

**Where entries live.**
- In the database (ComputedReport): the stored kinds (agreement, evaluation, calibration,
  comparison), computed once per revision and read by every process; and the pair shares,
  one row per doubly-labelled answer (annotate.gold.selectors).
- In each process's memory (get()): Python objects derived in the request (the adjudication
  queue, the pair summary, the evaluation page's tables), under the same key and revision.

**One read path** (Reports.read): current -> shown; stale -> shown, marked, while one worker
computes it again (a result of other code, or of a shape this code does not read, is never
shown); nothing yet -> a worker is asked and the page says it is being computed
(pending_answer), whatever the project's size: a report computed in the request held the
first Agreement view of the demo's 60 answers for 12-18 s on a loaded machine, with nothing
on screen. Only when tasks run in the process (CLAIMDESK_TASKS=immediate) is it computed in
the request, as there is nobody else to compute it. A stored result that
lacks a key its kind requires is treated as nothing stored: recomputed, never a KeyError.

**The registry.** Each app declares its kinds in its report_kinds module (found at start-up,
annotate.apps): evaluation the stored reports, annotate the queue, the pair shares and
summary and the blinding check. The worker runs annotate.tasks.refresh_report.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError, transaction
from django.db.models import F
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django_htmx.http import HttpResponseClientRefresh

from annotate.models import Answer, ComputedReport, Project
from jobs import framework

T = TypeVar("T")

PROJECT = "project"
CONTENT = "content"
ANSWER = "answer"

# ---------------------------------------------------------------------------------------
# The code version

# What a computed result depends on: every module under COMPUTING but those named in
# PRESENTATION (they show reports and compute none: a change to a page or the API leaves every
# stored report as it was), and the label schema. A module moved or added under these folders
# is covered without anyone having to list it.
COMPUTING = ("evaluation", "annotate/gold", "annotate/checks")
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
        "evaluation/report_kinds.py",
        "evaluation/urls.py",
        "evaluation/views",
        # the gold page and the export: the rest of annotate/gold/ derives the gold every
        # report reads
        "annotate/gold/exports.py",
        "annotate/gold/forms.py",
        "annotate/gold/views.py",
        # (annotate/gold/selectors.py counts: the checks' selectors, which the Reviewers
        # report computes with, import it)
        # gold checks: how a check label set compares with gold (selectors) computes; marking
        # checks and their buttons do not
        "annotate/checks/forms.py",
        "annotate/checks/views.py",
    }
)
ROOT = Path(__file__).resolve().parent.parent.parent


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

# ---------------------------------------------------------------------------------------
# Revisions

ALL = "all"  # touch(answers=ALL): every answer of the project


def lock(project: Project | int) -> None:
    """Take the project's row for the rest of the transaction: the FIRST statement of every
    write that will touch() the project, before it locks anything else.

    touch() updates the project's row, so every write of a project holds that row until it
    commits. A write that first locked an answer or a task and then waited for the project's
    row could meet one that held the project's row and then waited for that answer -- a
    deadlock PostgreSQL breaks by failing one of them (a reviewer's submit against another's
    undo on the same answer did, in CI). Taken first, the project's row orders them: the
    second write waits before it holds anything. FOR NO KEY UPDATE, as the UPDATE itself
    would take: inserting rows that point to the project (new tasks, labels) is not blocked.
    One query (a plain read on SQLite, which runs one write at a time anyway)."""
    pk = project if isinstance(project, int) else project.pk
    list(Project.objects.select_for_update(no_key=True).filter(pk=pk).order_by().values_list("pk"))


def touch(project: Project | int, *, content: bool = False, answers: Iterable[int] | str = ()):
    """Move the project's revision (and its content revision when ``content``, and the
    revision of ``answers``: pks, or ALL): call it inside the transaction of the write, so
    that a report computed before the write commits is stale after it. One UPDATE, two with
    answers (per 500). A write that locks other rows before this must lock() the project
    first."""
    pk = project if isinstance(project, int) else project.pk
    moved = {"revision": F("revision") + 1}
    if content:
        moved["content_revision"] = F("content_revision") + 1
    Project.objects.filter(pk=pk).update(**moved)
    if answers == ALL:
        Answer.objects.filter(project_id=pk).update(revision=F("revision") + 1)
    elif answers:
        pks = sorted(set(answers))
        for start in range(0, len(pks), 500):  # SQLite caps the parameters of one query
            chunk = pks[start : start + 500]
            Answer.objects.filter(pk__in=chunk).update(revision=F("revision") + 1)


def revisions(project: Project | int) -> tuple[int, int]:
    """(revision, content revision) of the project now: one query."""
    pk = project if isinstance(project, int) else project.pk
    found = Project.objects.filter(pk=pk).values_list("revision", "content_revision").first()
    if found is None:
        raise Http404("That project is gone.")
    return found


# ---------------------------------------------------------------------------------------
# The registry


@dataclass(frozen=True)
class Kind:
    """A kind of computed report. ``compute(project, key)`` is given for the stored kinds
    (the worker computes them); the in-memory kinds are computed by their caller.
    ``requires``: the top-level keys of a stored result the pages read (a result without one
    of them is of another shape, and computed again). ``refresh``: what the worker runs
    instead of compute alone (computing related reports from the same read of the data)."""

    name: str
    scope: str = PROJECT
    compute: Callable[[Project, str], Any] | None = None
    requires: frozenset[str] = field(default_factory=frozenset)
    refresh: Callable[[Project, str, int], None] | None = None

    @property
    def stored(self) -> bool:
        return self.compute is not None

    def fits(self, result: Any) -> bool:
        return isinstance(result, dict) and self.requires <= result.keys()


KINDS: dict[str, Kind] = {}
# The task a worker runs (annotate.tasks.refresh_report registers it).
_worker_task: list[Any] = []


def register(name: str, **options) -> Kind:
    """Declare a report kind (in an app's report_kinds module)."""
    kind = Kind(name, **options)
    KINDS[name] = kind
    return kind


def register_worker_task(task) -> None:
    _worker_task[:] = [task]


def kind_of(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise LookupError(f"no report kind {name!r} is registered") from None


# ---------------------------------------------------------------------------------------
# The per-process layer

MAX_ENTRIES = 24
_lock = threading.Lock()
_entries: OrderedDict[tuple, Any] = OrderedDict()


def clear() -> None:
    """Forget every result kept in this process (tests; a deployment never needs to)."""
    with _lock:
        _entries.clear()


def _kept(key: tuple) -> Any:
    with _lock:
        if key in _entries:
            _entries.move_to_end(key)
            return _entries[key]
    return _MISSING


def _keep(key: tuple, value: Any) -> None:
    with _lock:
        _entries[key] = value
        _entries.move_to_end(key)
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)


_MISSING = object()


@dataclass
class Stored:
    """A stored report as a page shows it, with how fresh it is."""

    result: dict | None
    computed_at: datetime | None
    seconds: float | None
    fresh: bool  # computed at the project's revision now, by this code
    refreshing: bool  # a worker has been asked for the current revision

    @property
    def pending(self) -> bool:
        return self.result is None


class Reports:
    """A project's computed reports for one request: its revisions are read once (one
    query), however many reports the request asks for."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._revisions: tuple[int, int] | None = None

    def revision_of(self, scope: str) -> int:
        if self._revisions is None:
            self._revisions = revisions(self.project)
        return self._revisions[1] if scope == CONTENT else self._revisions[0]

    @property
    def revision(self) -> int:
        return self.revision_of(PROJECT)

    def get(self, kind: str, key: Hashable, compute: Callable[[], T]) -> T:
        """The in-memory report ``kind``/``key`` at its scope's revision now, computed by
        ``compute`` when this process does not hold it. Shared with every later reader:
        read-only. A kind of the answer scope checks its own entries (PairShares)."""
        scope = kind_of(kind).scope
        if not getattr(settings, "CLAIMDESK_REPORT_CACHE", True):
            return compute()
        revision = None if scope == ANSWER else self.revision_of(scope)
        entry = (self.project.pk, kind, key, revision, CODE_VERSION)
        value = _kept(entry)
        if value is _MISSING:
            value = compute()
            _keep(entry, value)
        return value

    def read(self, kind: str, key: str = "") -> Stored:
        """The stored report: see the module's docstring for what happens when it is not
        current. The result is shared with this process's later readers: read-only."""
        return read(self.project, kind, key, revision=self.revision)


def reports_of(project: Project) -> Reports:
    return Reports(project)


# ---------------------------------------------------------------------------------------
# The stored layer


def _current(row: ComputedReport | None, revision: int) -> bool:
    return (
        row is not None
        and row.computed_at is not None
        and row.revision == revision
        and row.code_version == CODE_VERSION
    )


def read(project: Project, kind_name: str, key: str = "", *, revision: int | None = None):
    kind = kind_of(kind_name)
    revision = revisions(project)[0] if revision is None else revision
    row = (
        ComputedReport.objects.filter(project=project, kind=kind.name, key=key)
        .defer("result")
        .first()
    )
    result = None
    if row is not None and row.computed_at is not None and row.code_version == CODE_VERSION:
        result = _decoded(row)
        if not kind.fits(result):
            result = None  # stored in a shape this code does not read: as good as nothing
    if result is not None and row.revision == revision:
        return Stored(result, row.computed_at, row.seconds, fresh=True, refreshing=False)
    if framework.runs_in_process():
        stored = _compute(project, kind, key, revision, keep=True)
        return Stored(stored.result, stored.computed_at, stored.seconds, True, False)
    asked = _ask_worker(project, kind, key, revision)
    if result is None:
        if not asked:  # nothing to show, and nobody computing it: a 503, try again
            raise framework.BackendUnavailable("no worker can be asked for this report")
        return Stored(None, None, None, fresh=False, refreshing=True)
    # Shown as it was computed: stale, and (when the task backend cannot be reached) not
    # being computed again until a later reader asks.
    return Stored(result, row.computed_at, row.seconds, fresh=False, refreshing=asked)


# Decoded results, by stored row and the revision it was computed at. A 10,000-answer
# evaluation report is 2 MB of JSON: reading and decoding it again for every view of the page,
# every page of its tables and every CSV took longer than rendering them.
_DECODED_MAX = 8
_decoded_lock = threading.Lock()
_decoded_results: OrderedDict[tuple, Any] = OrderedDict()


def _decoded_key(row: ComputedReport) -> tuple:
    return (row.project_id, row.kind, row.key, row.revision, row.code_version, row.computed_at)


def _decoded(row: ComputedReport) -> Any:
    """The row's result (read with ``defer("result")``), decoded once per process. Rows are
    only ever rewritten whole, with a new revision or date: a kept one is what the row held."""
    key = _decoded_key(row)
    with _decoded_lock:
        if key in _decoded_results:
            _decoded_results.move_to_end(key)
            return _decoded_results[key]
    result = ComputedReport.objects.filter(pk=row.pk).values_list("result", flat=True).first()
    if result is None:  # deleted meanwhile, with its project or judge run
        raise Http404("That report is gone.")
    _keep_decoded(key, result)
    return result


def _keep_decoded(key: tuple, result: Any) -> None:
    with _decoded_lock:
        _decoded_results[key] = result
        _decoded_results.move_to_end(key)
        while len(_decoded_results) > _DECODED_MAX:
            _decoded_results.popitem(last=False)


def forget_decoded() -> None:
    """Drop every kept decoded result (tests; a deployment never needs to)."""
    with _decoded_lock:
        _decoded_results.clear()


def _ask_worker(project: Project, kind: Kind, key: str, revision: int) -> bool:
    """Enqueue one computation per revision (a lost one is asked again once the stale period
    has passed). False when the task backend cannot take it (Redis down): nothing is
    computing it then, and the next reader asks again."""
    (refresh_task,) = _worker_task
    cutoff = timezone.now() - timedelta(seconds=settings.CLAIMDESK_JOB_STALE_SECONDS)
    with transaction.atomic():
        row, _ = ComputedReport.objects.select_for_update().get_or_create(
            project=project, kind=kind.name, key=key
        )
        if row.wanted == revision and row.wanted_at and row.wanted_at > cutoff:
            return True
        row.wanted, row.wanted_at = revision, timezone.now()
        row.save(update_fields=["wanted", "wanted_at"])
        if framework.enqueues_in_transaction():
            framework.send(refresh_task, project.pk, kind.name, key)
            return True
    # Redis is not part of the transaction: sent once the request is committed (as for jobs).
    try:
        framework.send(refresh_task, project.pk, kind.name, key)
    except framework.BackendUnavailable:
        ComputedReport.objects.filter(pk=row.pk, wanted=revision).update(wanted_at=None)
        return False
    return True


def refresh(*, project_id: int, kind: str, key: str) -> None:
    """The worker's side: compute the report at the project's revision now and store it. A
    project, judge run or variant deleted meanwhile leaves nothing to do."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return
    found = kind_of(kind)
    revision = revisions(project)[0]
    if is_current(project, kind, key, revision):
        return  # another worker got there first
    try:
        if found.refresh is not None:
            found.refresh(project, key, revision)
        else:
            _compute(project, found, key, revision)
    except ObjectDoesNotExist:
        return  # its judge run or variant went with a re-import: no page asks for it now
    except Exception:
        # Asked again by a view once the stale period has passed, not at the next one: a
        # page that polls would otherwise queue a failing computation every few seconds.
        ComputedReport.objects.filter(project=project, kind=kind, key=key).update(
            wanted_at=timezone.now()
        )
        raise


def is_current(project: Project, kind: str, key: str, revision: int) -> bool:
    row = ComputedReport.objects.filter(project=project, kind=kind, key=key).defer("result").first()
    return _current(row, revision)


def store(
    project: Project, kind: str, key: str, revision: int, compute: Callable[[], Any]
) -> ComputedReport:
    """Compute and store a stored kind's result for ``revision`` (the worker's refresh of a
    kind that computes several reports at once)."""
    return _compute(project, kind_of(kind), key, revision, compute=compute)


def _compute(
    project: Project,
    kind: Kind,
    key: str,
    revision: int,
    *,
    keep: bool = False,
    compute: Callable[[], Any] | None = None,
) -> ComputedReport:
    """Compute (by ``compute``, else the kind's own function) and store, and ``keep`` it
    decoded for a web process's next reader. The revision is the one read before computing:
    a write while it runs makes the next view ask again."""
    started = time.perf_counter()
    result = compute() if compute is not None else kind.compute(project, key)
    # Stored as JSON and read back as JSON, whichever path served it: a page must not depend
    # on whether its report came from a worker or from this request.
    result = json.loads(json.dumps(result, allow_nan=False))
    values = {
        "result": result,
        "revision": revision,
        "computed_at": timezone.now(),
        "seconds": round(time.perf_counter() - started, 3),
        "code_version": CODE_VERSION,
    }
    where = {"project": project, "kind": kind.name, "key": key}
    row = ComputedReport(**where, **values)
    if keep:
        _keep_decoded(_decoded_key(row), result)
    if not ComputedReport.objects.filter(**where).update(**values):
        try:
            with transaction.atomic():
                return ComputedReport.objects.create(**where, **values)
        except IntegrityError:  # another request stored it first: ours is as current
            ComputedReport.objects.filter(**where).update(**values)
    return row


# ---------------------------------------------------------------------------------------
# The page that waits

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
    polled = bool(request.htmx) and request.htmx.trigger == PENDING_POLL
    if not stored.pending:
        return HttpResponseClientRefresh() if polled else None
    if polled:
        return HttpResponse(status=204)
    context = {"project": project, "role": role, "title": title, "current": current}
    context["poll_id"] = PENDING_POLL
    return render(request, "jobs/report_pending.html", context)
