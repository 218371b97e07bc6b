"""The pair summary and the items imported alone, kept per project revision
(annotate.common.computed): the gold page's counts and the adjudication queue, with each of its
filters, read one derivation of every pair, and after a change only the answers whose revision
moved are derived again (PairShares)."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from annotate.common import bulk, computed
from annotate.gold import imported
from annotate.gold.imported import ImportedAlone
from annotate.gold.summary import AnswerShare, PairSummary, answer_shares, label_states, summary_of
from annotate.models import ComputedReport, Project
from annotate.report_kinds import IMPORTED_ALONE, PAIR_SHARES, PAIR_SUMMARY


def pair_summary(project: Project, reports: computed.Reports | None = None) -> PairSummary:
    """summary.pair_summary, kept per project revision: the gold page's counts, the
    adjudication queue and each of its filters read one derivation of every pair (at 10,000
    answers each page's first view derived them all again, 1.1-1.3 s, and so did every filter
    of the queue). A new revision -- every submission, every decision -- derives again only
    the answers whose own revision moved: the others' shares are kept (PairShares), and
    stored for other processes."""
    reports = reports if reports is not None else computed.reports_of(project)
    shares = reports.get(PAIR_SHARES, "", PairShares)
    return reports.get(PAIR_SUMMARY, "", lambda: shares.summary(project))


def imported_alone(project: Project, reports: computed.Reports | None = None) -> ImportedAlone:
    """imported.imported_alone (the gold items imported with no second reviewer), kept per
    project revision with the pair summary: a second view of the gold page reads neither
    again."""
    reports = reports if reports is not None else computed.reports_of(project)
    return reports.get(IMPORTED_ALONE, "", lambda: imported.imported_alone(project))


class PairShares:
    """A project's answers' shares of its pair summary (AnswerShare), each with the revision
    of its answer it was derived at. A share this process does not hold is read from the
    database when one of that revision and this code is stored there (ComputedReport rows of
    kind PAIR_SHARES, one per answer), else derived and stored. Shared by a process's
    threads, hence the lock; a thread that finds another deriving waits for it rather than
    deriving the same answers twice."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._shares: dict[int, tuple[int, AnswerShare]] = {}

    def summary(self, project: Project) -> PairSummary:
        with self._lock:
            states = label_states(project)
            kept, changed = {}, {}
            for pk, (label_sets, revision) in states.items():
                held = self._shares.get(pk)
                if held is not None and held[0] == revision:
                    kept[pk] = held
                else:
                    changed[pk] = (label_sets, revision)
            for pk, share in read(project, {pk: rev for pk, (_, rev) in changed.items()}).items():
                kept[pk] = (changed.pop(pk)[1], share)
            derived = answer_shares(project, {pk: n for pk, (n, _) in changed.items()})
            write(project, ((pk, changed[pk][1], share) for pk, share in derived.items()))
            for pk, share in derived.items():
                kept[pk] = (changed[pk][1], share)
            self._shares = kept
            return summary_of({pk: share for pk, (_, share) in kept.items()})


# Reading a whole project's shares is one query; a few changed answers are read by key.
READ_ALL_FROM = 500
WRITE_CHUNK = 2000
# Shares replaced at once from which their table is vacuumed (autovacuum is off on some
# servers): a whole project's, derived again after a re-import or a deploy, not one decision's.
VACUUM_FROM = 1000
_WRITTEN = ("project_id", "kind", "key", "answer_id", "revision", "code_version", "result")
_WRITTEN += ("computed_at",)


def read(project: Project, revisions: dict[int, int]) -> dict[int, AnswerShare]:
    """The stored shares of the answers in `revisions` (answer pk -> its revision now) that
    are current: of that revision, by this code."""
    if not revisions:
        return {}
    rows = ComputedReport.objects.filter(
        project=project, kind=PAIR_SHARES, code_version=computed.CODE_VERSION
    )
    if len(revisions) < READ_ALL_FROM:
        rows = rows.filter(answer_id__in=list(revisions))
    found = {}
    values = rows.values_list("answer_id", "revision", "result")
    for pk, revision, result in values.iterator(chunk_size=WRITE_CHUNK):
        if pk in revisions and revision == revisions[pk]:
            share = _share(result)
            if share is not None:
                found[pk] = share
    return found


def _share(result) -> AnswerShare | None:
    """A stored share, or None when it is of a shape this code does not read."""
    try:
        return AnswerShare(
            split=result["split"],
            answer_state=result["answer_state"],
            claim_states=tuple(result["claim_states"]),
            score=result["score"],
            pending_fields=frozenset(result["pending_fields"]),
            beyond_two=result["beyond_two"],
        )
    except (KeyError, TypeError):
        return None


def write(project: Project, derived: Iterable[tuple[int, int, AnswerShare]]) -> None:
    """Store shares just derived, (answer pk, the revision it was derived at, share), in
    place of the answers' earlier ones: one row an answer. Written with COPY
    (annotate.common.bulk): bulk_create's upsert of 10,000 shares took 0.9 s."""
    derived = list(derived)
    if not derived:
        return
    field = ComputedReport._meta.get_field("computed_at")
    stamp = field.get_db_prep_save(timezone.now(), connection)

    def row(pk: int, revision: int, share: AnswerShare) -> tuple:
        result = {
            "split": share.split,
            "answer_state": share.answer_state,
            "claim_states": list(share.claim_states),
            "score": share.score,
            "pending_fields": sorted(share.pending_fields),
            "beyond_two": share.beyond_two,
        }
        return (
            project.pk,
            PAIR_SHARES,
            str(pk),
            pk,
            revision,
            computed.CODE_VERSION,
            result,
            stamp,
        )

    rows = (row(*item) for item in derived)
    replaced = 0
    try:
        with transaction.atomic():
            for start in range(0, len(derived), WRITE_CHUNK):
                chunk = [pk for pk, _, _ in derived[start : start + WRITE_CHUNK]]
                replaced += ComputedReport.objects.filter(
                    project=project, kind=PAIR_SHARES, answer_id__in=chunk
                ).delete()[0]
            with connection.wrap_database_errors:  # COPY raises psycopg's own errors
                bulk.insert_rows(ComputedReport, _WRITTEN, rows)
    except IntegrityError:
        return  # another process stored these answers' shares meanwhile: as good as ours
    if replaced >= VACUUM_FROM:  # a whole project's, derived again: its dead rows go
        bulk.after_commit(vacuum=[ComputedReport])
