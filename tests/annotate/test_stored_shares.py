"""The pair summary's shares stored in the database (annotate.stored_shares): a process
without them in memory -- another web worker, a restarted one, one whose kept copy expired --
reads them instead of deriving every pair again (1.3 s at 10,000 answers), and derives only
the answers whose labels changed since, or everything when the project's content, the code or
the shares' age says they may be out of date. Each summary is checked against one derived from
nothing (gold.pair_summary)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotate import report_cache, stored_shares
from annotate.gold import selectors
from annotate.gold import summary as gold
from annotate.models import Answer, StoredShare
from tests.conftest import decide_support, labelled_demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled(db, reviewer_a, reviewer_b, lead):
    return labelled_demo(
        reviewers=[reviewer_a.username, reviewer_b.username], leads=[lead.username]
    )


@pytest.fixture
def derived(derived_shares) -> list[set[int]]:
    return derived_shares


def another_process(project, derived: list[set[int]]) -> gold.PairSummary:
    """The summary as a process that holds nothing yet reads it, checked against the one
    derived from nothing (whose derivation `derived` forgets)."""
    expected = gold.pair_summary(project)
    derived.pop()
    report_cache.clear()
    summary = selectors.pair_summary(project)
    assert summary == expected
    return summary


def test_another_process_reads_the_stored_shares_instead_of_deriving(
    labelled, derived, django_assert_num_queries
):
    doubly = set(gold.label_states(labelled))
    first = another_process(labelled, derived)
    assert derived == [doubly] and len(doubly) > 1
    assert StoredShare.objects.filter(project=labelled).count() == len(doubly)
    report_cache.clear()
    # the data and content versions (2), the label states (2), the stored shares (1); and
    # the write of nothing derived is no query at all
    with django_assert_num_queries(5):
        again = selectors.pair_summary(labelled)
    assert again == first and derived[-1] == set()


def test_a_decision_has_only_its_answer_derived_again_by_the_next_process(labelled, lead, derived):
    another_process(labelled, derived)
    pair = decide_support(labelled, lead)
    another_process(labelled, derived)
    assert derived[-1] == {pair.answer_id}
    another_process(labelled, derived)
    assert derived[-1] == set()


def test_shares_too_old_or_of_other_code_or_content_are_derived_again(
    labelled, derived, monkeypatch, settings
):
    import jobs.reports

    doubly = set(gold.label_states(labelled))
    another_process(labelled, derived)
    old = timezone.now() - timedelta(seconds=settings.CLAIMDESK_REPORT_MAX_AGE_SECONDS + 1)
    StoredShare.objects.filter(project=labelled).update(derived_at=old)
    another_process(labelled, derived)
    assert derived[-1] == doubly  # too old: a change behind the application's back shows
    monkeypatch.setattr(jobs.reports, "CODE_VERSION", "other-code")
    another_process(labelled, derived)
    assert derived[-1] == doubly
    generations = set(StoredShare.objects.values_list("generation", flat=True))
    assert len(generations) == 1  # one row an answer: the other code's were replaced
    assert stored_shares.generation("content-a") != stored_shares.generation("content-b")
    # the content version is the report cache's: reviewers' labels leave it as it is
    content = report_cache.reports_of(labelled).content_version
    assert stored_shares.generation(content) == generations.pop()


def test_a_share_stored_from_a_state_that_has_since_changed_is_not_read(labelled, derived):
    """A stored share read back must be of the answer's label state now, not only of its
    answer: here every stored state is made stale, as a reopen and a new submission would."""
    doubly = set(gold.label_states(labelled))
    another_process(labelled, derived)
    StoredShare.objects.filter(project=labelled).update(state="(2, 0, 0, 0, 0, None)")
    another_process(labelled, derived)
    assert derived[-1] == doubly


@pytest.mark.django_db(transaction=True)
def test_a_share_of_an_answer_deleted_meanwhile_is_stored_and_harmless(labelled, derived):
    """A re-import may delete an answer while its share is being derived: storing the share
    must not fail (nor fail a caller's transaction at its commit); the row is never read."""
    another_process(labelled, derived)
    pk = next(iter(gold.label_states(labelled)))
    share = gold.answer_shares(labelled, {pk: 2})[pk]
    stored_shares.write(labelled, "a-generation", [(10**9, (2, 0, 0, 0, 0, None), share)])
    assert StoredShare.objects.filter(answer_id=10**9).exists()
    another_process(labelled, derived)
    gone = next(iter(gold.label_states(labelled)))
    assert StoredShare.objects.filter(answer_id=gone).exists()
    Answer.objects.filter(pk=gone).delete()
    assert not StoredShare.objects.filter(answer_id=gone).exists()  # it went with its answer
    another_process(labelled, derived)  # and nothing fails


def test_shares_another_process_stored_meanwhile_are_kept_and_nothing_fails(
    labelled, derived, monkeypatch, settings
):
    """Two workers deriving the same answers at once both write their shares: the second
    write meets the rows the first committed after its delete, keeps them (they are as
    good), and its page is served."""
    from django.db.models.query import QuerySet

    another_process(labelled, derived)
    old = timezone.now() - timedelta(seconds=settings.CLAIMDESK_REPORT_MAX_AGE_SECONDS + 1)
    StoredShare.objects.filter(project=labelled).update(derived_at=old)  # derived again now
    # The other worker's rows arrive after our delete: here, our delete misses them.
    monkeypatch.setattr(QuerySet, "delete", lambda self: (0, {}))
    another_process(labelled, derived)
    assert derived[-1] == set(gold.label_states(labelled))
    assert set(StoredShare.objects.values_list("derived_at", flat=True)) == {old}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_shares_replaced_in_bulk_leave_no_dead_rows(labelled, derived, monkeypatch, settings):
    """Autovacuum is off on some servers: a project's shares derived again (hourly, once
    they are too old) are vacuumed after they are written; one decision's are not."""
    from tests.annotate.test_maintenance import table_stats

    monkeypatch.setattr(stored_shares, "VACUUM_FROM", 2)
    another_process(labelled, derived)
    before = table_stats("annotate_storedshare")
    old = timezone.now() - timedelta(seconds=settings.CLAIMDESK_REPORT_MAX_AGE_SECONDS + 1)
    StoredShare.objects.filter(project=labelled).update(derived_at=old)
    another_process(labelled, derived)
    after = table_stats("annotate_storedshare")
    assert after["vacuums"] == before["vacuums"] + 1 and after["dead"] == 0
