"""The pair summary and the items imported alone, kept per data version (annotate.report_cache):
the gold page's counts and the adjudication queue, with each of its filters, read one
derivation of every pair, and after a change only the answers whose labels changed are
derived again (PairShares)."""

from __future__ import annotations

import threading

from annotate import stored_shares
from annotate.gold import imported
from annotate.gold.imported import ImportedAlone
from annotate.gold.summary import AnswerShare, PairSummary, answer_shares, label_states, summary_of
from annotate.models import Project
from annotate.report_cache import ProjectReports, reports_of


def pair_summary(project: Project, reports: ProjectReports | None = None) -> PairSummary:
    """summary.pair_summary, kept per data version (annotate.report_cache): the gold page's
    counts, the adjudication queue and each of its filters read one derivation of every pair
    (at 10,000 answers each page's first view derived them all again, 1.1-1.3 s, and so did
    every filter of the queue). A new version -- every submission, every decision -- derives
    again only the answers whose labels changed: the others' shares are kept (PairShares),
    and stored for other processes (annotate.stored_shares)."""
    reports = reports if reports is not None else reports_of(project)
    shares = reports.get("pair-shares", lambda: PairShares(reports.content_version), labels=False)
    return reports.get("pair-summary", lambda: shares.summary(project))


def imported_alone(project: Project, reports: ProjectReports | None = None) -> ImportedAlone:
    """imported.imported_alone (the gold items imported with no second reviewer), kept per data
    version with the pair summary: a second view of the gold page reads neither again."""
    reports = reports if reports is not None else reports_of(project)
    return reports.get("imported-alone", lambda: imported.imported_alone(project))


class PairShares:
    """A project's answers' shares of its pair summary (AnswerShare), each with the
    label state it was derived from (label_states). Kept under the project's content
    version: a change to its claims, schema or cases starts again from nothing, and so does
    the report cache's time limit. A share this process does not hold is read from the
    database when one derived from the same state is stored there (annotate.stored_shares),
    else derived and stored. Shared by a process's threads, hence the lock; a thread that
    finds another deriving waits for it rather than deriving the same answers twice."""

    def __init__(self, content_version: str) -> None:
        self._lock = threading.Lock()
        self._shares: dict[int, tuple[tuple, AnswerShare]] = {}
        self._generation = stored_shares.generation(content_version)

    def summary(self, project: Project) -> PairSummary:
        with self._lock:
            states = label_states(project)
            kept, changed = {}, {}
            for pk, key in states.items():
                held = self._shares.get(pk)
                if held is not None and held[0] == key:
                    kept[pk] = held
                else:
                    changed[pk] = key
            for pk, share in stored_shares.read(project, self._generation, changed).items():
                kept[pk] = (changed.pop(pk), share)
            derived = answer_shares(project, {pk: key[0] for pk, key in changed.items()})
            stored_shares.write(
                project,
                self._generation,
                ((pk, changed[pk], share) for pk, share in derived.items()),
            )
            for pk, share in derived.items():
                kept[pk] = (changed[pk], share)
            self._shares = kept
            return summary_of({pk: share for pk, (_, share) in kept.items()})
