"""Reports computed once per state of a project's data, and shared by the pages that read them.

Every report (evaluation, agreement, judge calibration, the adjudication queue) is derived
where it is read, from the labels themselves; at 10,000 answers that takes seconds, far too
long to repeat for every page view, every page of a table and every CSV download. So a report
is kept in memory under the project's *data version*: a fingerprint of everything reports
read, taken in two cheap queries. Any write that changes a report changes the fingerprint, and
the next reader computes afresh; nothing is ever invalidated by hand, and no write path (the
pages, the API, the commands, the labelling services) has to remember to.

What the fingerprint covers, and why that is every way the data changes:
- rows added or removed (answers, claims, passages, decisions, submitted label sets): their
  count and largest id; a replaced answer is deleted and inserted again, so it gets new ids,
  and takes its claims, citations and retrieved passages with it;
- a reviewer's label set: every submission writes a LabelRevision (browser, API, label import),
  and a reopen moves the assignment out of ``submitted``: the revisions' count and largest id
  with the number of submitted assignments;
- gold imported from elsewhere (import_gold): its files and its answers' rows, count and
  largest id (a replace deletes an answer's rows and writes new ones);
- rows updated in place by a re-import (cases, variants, judgment grades) and answers corrected
  in place (AnswerCorrection rows); claims and citations, while the project is in set-up, the
  only time they are edited on their own (their count, largest id and claims' ends' sum);
  a passage deleted (the passages' count); the project's state, schema and opening.

Kept per process (a small LRU, no pickling: a report over 10,000 answers is megabytes of
Python objects) and for at most TTL seconds, so that even a change made behind the
application's back (a row edited field by field in the Django admin) shows within minutes.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from functools import lru_cache
from typing import Any, TypeVar

from django.conf import settings
from django.db import connection
from django.db.models import Case as DbCase
from django.db.models import CharField, Count, Max, OuterRef, Q, Subquery, Sum, Value, When
from django.db.models.functions import Cast, Coalesce, Concat

from annotate.models import (
    Answer,
    AnswerCorrection,
    Assignment,
    Case,
    Citation,
    Claim,
    Decision,
    GoldImport,
    ImportedGold,
    Judgment,
    LabelRevision,
    Passage,
    Project,
    Variant,
)

T = TypeVar("T")
MAX_ENTRIES = 24
TTL_SECONDS = 600

_lock = threading.Lock()
_entries: OrderedDict[tuple, tuple[float, Any]] = OrderedDict()


def _aggregates(rows: tuple, *expressions):
    """One subquery giving aggregates over a project's rows, joined as text ('' when there
    are none): one scan of a table however many figures are read from it. ``rows`` is
    (model, path to the project)."""
    model, path = rows
    parts = []
    for expression in expressions:
        parts += [Cast(expression, output_field=CharField()), Value(":")]
    grouped = model.objects.filter(**{path: OuterRef("pk")}).order_by().values(path)
    text = grouped.annotate(v=Concat(*parts, output_field=CharField())).values("v")[:1]
    return Coalesce(Subquery(text), Value(""), output_field=CharField())


# Rows whose number and largest id the reports depend on. Left out on purpose: retrieved
# passages and evidence rows, which change only with a row counted here (a replaced answer, a
# deleted passage, a re-imported case); citations are counted in set-up only (below).
COUNTED = {
    "answers": (Answer, "project"),
    "corrections": (AnswerCorrection, "answer__project"),
    "passages": (Passage, "project"),
    "decisions": (Decision, "answer__project"),
    "revisions": (LabelRevision, "assignment__project"),
    "gold_imports": (GoldImport, "project"),
    "imported_gold": (ImportedGold, "gold_import__project"),
}


def _in_setup(figures):
    return DbCase(
        When(state=Project.State.DRAFT, then=figures), default=Value(""), output_field=CharField()
    )


def data_version(project: Project) -> str:
    """A fingerprint of everything the reports read, in two queries."""
    return data_versions(project)[0]


# The figures that move with the labels alone: label sets submitted or reopened, revisions,
# a lead's decisions, gold imported from elsewhere.
LABEL_FIGURES = frozenset(
    {"v_submitted", "v_revisions", "v_decisions", "v_gold_imports", "v_imported_gold"}
)


def data_versions(project: Project) -> tuple[str, str]:
    """(data version, content version), from the same two queries. The content version
    leaves the labels out (LABEL_FIGURES): what is derived from the answers, claims and
    variants alone (the blinding check) is kept while reviewers label, instead of being
    derived again after every submission."""
    numbers_sql, numbers_params, content_sql, content_params = _statements(connection.vendor)

    def at(params: tuple) -> list:
        return [project.pk if value == _ANY_PROJECT else value for value in params]

    with connection.cursor() as cursor:
        cursor.execute(numbers_sql, at(numbers_params))
        figures = cursor.fetchone()
        names = [column[0] for column in cursor.description]
        cursor.execute(content_sql, at(content_params))
        content = repr(cursor.fetchall()).encode()
    data = hashlib.sha256(repr(figures).encode())
    data.update(content)
    unlabelled = tuple(v for n, v in zip(names, figures, strict=True) if n not in LABEL_FIGURES)
    without_labels = hashlib.sha256(repr(unlabelled).encode())
    without_labels.update(content)
    return data.hexdigest(), without_labels.hexdigest()


# Stands for the project's pk while the two statements are compiled, once per process: the
# ORM took about 25 ms to build and compile them, a fifth of every report page view at 10,000
# answers. Their other parameters are strings (separators, states), never this number.
_ANY_PROJECT = -7_310_000_017


@lru_cache(maxsize=4)
def _statements(vendor: str) -> tuple[str, tuple, str, tuple]:
    """The figures' SQL and parameters, and the content digest's, with the project's pk as
    _ANY_PROJECT."""
    p = _ANY_PROJECT
    values: dict[str, Any] = {
        f"v_{name}": _aggregates(rows, Count("pk"), Max("pk")) for name, rows in COUNTED.items()
    }
    values["v_answers"] = _aggregates(
        COUNTED["answers"], Count("pk"), Max("pk"), Sum(Coalesce("task_number", 0))
    )
    # Claims and their citations change on their own only in set-up (the boundary page
    # rewrites a claim's citations as new rows); once labelling opens, only with their answer,
    # which the answers' figures cover. The condition is SQL's, so the scans of 100,000 claims
    # (about 50 ms at 10,000 answers) and of their citations are skipped where they say
    # nothing (PostgreSQL evaluates a CASE branch's subquery only when it is taken).
    values["v_claims"] = _in_setup(
        _aggregates((Claim, "answer__project"), Count("pk"), Max("pk"), Sum("start"), Sum("end"))
    )
    values["v_citations"] = _in_setup(
        _aggregates((Citation, "claim__answer__project"), Count("pk"), Max("pk"))
    )
    submitted = Q(status=Assignment.Status.SUBMITTED)
    values["v_submitted"] = _aggregates(
        (Assignment, "project"),
        Count("pk", filter=submitted),
        Sum("reviewer_id", filter=submitted),  # who labelled: pairs are named in reports
    )
    numbers = Project.objects.filter(pk=p).values(
        "slug", "name", "state", "opened_at", "label_schema", "corpus_version", **values
    )
    # Rows a re-import updates in place, by content: one UNION query.
    content = (
        Case.objects.filter(project=p)
        .order_by()  # a compound statement's parts carry no ORDER BY (SQLite refuses it)
        .annotate(kind=Value("c", output_field=CharField()))
        .values_list("kind", "pk", "content_hash")
        .union(
            Variant.objects.filter(project=p)
            .order_by()
            .annotate(kind=Value("v", output_field=CharField()))
            .values_list("kind", "pk", "content_hash"),
            Judgment.objects.filter(case__project=p)
            .order_by()
            .annotate(
                kind=Value("j", output_field=CharField()),
                grade_text=Cast("grade", output_field=CharField()),
            )
            .values_list("kind", "pk", "grade_text"),
            all=True,
        )
    )
    numbers_sql, numbers_params = numbers.query.sql_with_params()
    content_sql, content_params = content.query.sql_with_params()
    # One digest of the rows, by the database: hashing 10,000 rows in Python was 40 ms of
    # every report page view. SQLite has no md5; there the rows come back, in order.
    if vendor == "postgresql":
        content_sql = (
            "SELECT md5(string_agg(concat_ws(':', kind, pk, value), ',' ORDER BY kind, pk)) "
            f"FROM ({content_sql}) AS content (kind, pk, value)"
        )
    else:
        content_sql = f"SELECT * FROM ({content_sql}) ORDER BY 1, 2"
    return numbers_sql, tuple(numbers_params), content_sql, tuple(content_params)


class ProjectReports:
    """The kept reports of one project for one request: the data version is read once (two
    queries), however many reports the request asks for."""

    def __init__(self, project: Project, version: str | None = None) -> None:
        self.project = project
        self._version = version
        self._content_version: str | None = None

    @property
    def version(self) -> str:
        if self._version is None:
            self._version, self._content_version = data_versions(self.project)
        return self._version

    @property
    def content_version(self) -> str:
        if self._content_version is None:
            self._version, self._content_version = data_versions(self.project)
        return self._content_version

    def get(self, what: Hashable, compute: Callable[[], T], *, labels: bool = True) -> T:
        """The report ``what`` at the project's current data version, computed by
        ``compute`` when it is not kept yet. The result is shared with every later reader:
        treat it as read-only. ``labels=False`` for a report that reads no label: it is kept
        under the content version, across submissions and decisions."""
        if not getattr(settings, "CLAIMDESK_REPORT_CACHE", True):
            return compute()
        version = self.version if labels else ("content", self.content_version)
        key = (self.project.pk, version, what)
        now = time.monotonic()
        with _lock:
            entry = _entries.get(key)
            if entry is not None and now - entry[0] < TTL_SECONDS:
                _entries.move_to_end(key)
                return entry[1]
        value = compute()
        with _lock:
            _entries[key] = (now, value)
            _entries.move_to_end(key)
            while len(_entries) > MAX_ENTRIES:
                _entries.popitem(last=False)
        return value


def reports_of(project: Project, *, version: str | None = None) -> ProjectReports:
    """The project's kept reports; ``version`` is its data version when the request has just
    read it (jobs.reports.Stored.version), saving the two queries."""
    return ProjectReports(project, version)


def clear() -> None:
    """Forget every kept report (tests; a deployment never needs to)."""
    with _lock:
        _entries.clear()
