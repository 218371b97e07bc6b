"""The pair summary's shares (AnswerShare) kept in the database, beside each process's
copy in memory (selectors.PairShares).

A process derives a share the first time it needs one: at 10,000 answers every pair, 1.3 s of
the gold page's or the adjudication queue's first view, in every web worker, again whenever its
kept copy expired (annotate.report_cache's time limit), and in a worker restarted after a
deploy. Stored with the label state it was derived from, a share is read back by any process
while that state holds; an answer whose labels changed is derived again and stored again.

A share is read back only when all of these are as when it was derived:
- the answer's label state (label_states: its submitted label sets and decisions);
- the project's content (annotate.report_cache's content version: claims, schema, cases) and
  the code that derives gold (jobs.reports.CODE_VERSION), together its `generation`;
- its age: within CLAIMDESK_REPORT_MAX_AGE_SECONDS, as for stored reports, so that a change
  made behind the application's back (a label edited in SQL) shows within that time.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from annotate.common import bulk
from annotate.gold.summary import AnswerShare
from annotate.models import Project, StoredShare

# Reading a whole project's shares is one query; a few changed answers are read by key.
READ_ALL_FROM = 500
WRITE_CHUNK = 2000
# Written in the model's column order; read back without the columns read() filters on.
_WRITTEN = tuple(f.column for f in StoredShare._meta.concrete_fields)
_COLUMNS = tuple(c for c in _WRITTEN if c not in ("project_id", "generation", "derived_at"))
# Shares replaced at once from which their table is vacuumed (autovacuum is off on some
# servers): a whole project's, derived again once its shares are too old, not one decision's.
VACUUM_FROM = 1000


def generation(content_version: str) -> str:
    """The project's content and the code that derives gold, as one key."""
    from jobs.reports import CODE_VERSION  # the digest of annotate/gold/ among others

    return hashlib.sha256(f"{content_version}:{CODE_VERSION}".encode()).hexdigest()[:32]


def state_key(state: tuple) -> str:
    """A label state (label_states: integers and None) as stored."""
    return repr(state)


def read(project: Project, generation: str, states: dict[int, tuple]) -> dict[int, AnswerShare]:
    """The stored shares of the answers in `states` (answer pk -> its label state now) that
    were derived from that very state, in this generation, recently enough."""
    if not states:
        return {}
    oldest = timezone.now() - timedelta(seconds=settings.CLAIMDESK_REPORT_MAX_AGE_SECONDS)
    rows = StoredShare.objects.filter(
        project=project, generation=generation, derived_at__gte=oldest
    )
    if len(states) < READ_ALL_FROM:
        rows = rows.filter(answer_id__in=list(states))
    found = {}
    for pk, state, *values in rows.values_list(*_COLUMNS).iterator(chunk_size=WRITE_CHUNK):
        if pk in states and state == state_key(states[pk]):
            found[pk] = _share(*values)
    return found


def _share(split, answer_state, agreed, adjudicated, pending, score, fields, beyond_two):
    return AnswerShare(
        split=split,
        answer_state=answer_state,
        claim_states=(agreed, adjudicated, pending),
        score=score,
        pending_fields=frozenset(fields),
        beyond_two=beyond_two,
    )


def write(
    project: Project, generation: str, derived: Iterable[tuple[int, tuple, AnswerShare]]
) -> None:
    """Store shares just derived, (answer pk, the label state it was derived from, share),
    in place of the answers' earlier ones: one row an answer at most, whatever its
    generation (a row of another generation is never read). Written with COPY
    (annotate.common.bulk): bulk_create's upsert of 10,000 shares took 0.9 s."""
    derived = list(derived)
    if not derived:
        return
    stamp = StoredShare._meta.get_field("derived_at").get_db_prep_save(timezone.now(), connection)

    def row(pk: int, state: tuple, share: AnswerShare) -> list:
        agreed, adjudicated, pending = share.claim_states
        values = {
            "answer_id": pk,
            "project_id": project.pk,
            "generation": generation,
            "state": state_key(state),
            "derived_at": stamp,
            "split": share.split,
            "answer_state": share.answer_state,
            "claims_agreed": agreed,
            "claims_adjudicated": adjudicated,
            "claims_pending": pending,
            "score": share.score,
            "pending_fields": sorted(share.pending_fields),
            "beyond_two": share.beyond_two,
        }
        return [values[column] for column in _WRITTEN]

    rows = (row(*item) for item in derived)
    replaced = 0
    try:
        with transaction.atomic():
            for start in range(0, len(derived), WRITE_CHUNK):
                chunk = [pk for pk, _, _ in derived[start : start + WRITE_CHUNK]]
                replaced += StoredShare.objects.filter(answer_id__in=chunk).delete()[0]
            with connection.wrap_database_errors:  # COPY raises psycopg's own errors
                bulk.insert_rows(StoredShare, _WRITTEN, rows)
    except IntegrityError:
        return  # another process stored these answers' shares meanwhile: as good as ours
    if replaced >= VACUUM_FROM:  # a whole project's, derived again: its dead rows go
        bulk.after_commit(vacuum=[StoredShare])
