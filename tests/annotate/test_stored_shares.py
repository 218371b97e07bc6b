"""The pair summary's shares stored in the database (ComputedReport rows of kind pair-shares,
annotate.gold.selectors): a process without them in memory -- another web worker, a restarted
one -- reads them instead of deriving every pair again (1.3 s at 10,000 answers), and derives
only the answers whose revision moved since, or everything when the project's content or the
code says they may be out of date. Each summary is checked against one derived from nothing
(gold.pair_summary)."""

from __future__ import annotations

import pytest

from annotate.common import computed
from annotate.gold import selectors
from annotate.gold import summary as gold
from annotate.models import Answer, ComputedReport
from annotate.projects.services import update_guidelines
from tests.conftest import decide_support, labelled_demo

SHARES = ComputedReport.objects.filter(kind="pair-shares")

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
    computed.clear()
    summary = selectors.pair_summary(project)
    assert summary == expected
    return summary


def test_another_process_reads_the_stored_shares_instead_of_deriving(
    labelled, derived, django_assert_num_queries
):
    doubly = set(gold.label_states(labelled))
    first = another_process(labelled, derived)
    assert derived == [doubly] and len(doubly) > 1
    assert SHARES.filter(project=labelled).count() == len(doubly)
    computed.clear()
    # the revision (1), the label states with their answers' revisions (1), the stored shares
    # (1); and the write of nothing derived is no query at all. (5 with the data version:
    # two queries, and the label states: two.)
    with django_assert_num_queries(3):
        again = selectors.pair_summary(labelled)
    assert again == first and derived[-1] == set()


def test_a_decision_has_only_its_answer_derived_again_by_the_next_process(labelled, lead, derived):
    another_process(labelled, derived)
    pair = decide_support(labelled, lead)
    another_process(labelled, derived)
    assert derived[-1] == {pair.answer_id}
    another_process(labelled, derived)
    assert derived[-1] == set()


def test_shares_of_other_code_or_content_are_derived_again(labelled, derived, monkeypatch):
    doubly = set(gold.label_states(labelled))
    another_process(labelled, derived)
    monkeypatch.setattr(computed, "CODE_VERSION", "other-code")
    another_process(labelled, derived)
    assert derived[-1] == doubly
    codes = set(SHARES.values_list("code_version", flat=True))
    assert codes == {"other-code"}  # one row an answer: the other code's were replaced
    # a change of the project's content (here through the admin's path: every answer's
    # revision) derives every share again; a change of its guidelines none
    update_guidelines(project=labelled, guidelines="read twice")
    another_process(labelled, derived)
    assert derived[-1] == set()
    computed.touch(labelled, content=True, answers=computed.ALL)
    another_process(labelled, derived)
    assert derived[-1] == doubly


def test_a_share_stored_from_a_state_that_has_since_changed_is_not_read(labelled, derived):
    """A stored share read back must be of the answer's label state now, not only of its
    answer: here every stored state is made stale, as a reopen and a new submission would."""
    doubly = set(gold.label_states(labelled))
    another_process(labelled, derived)
    SHARES.filter(project=labelled).update(revision=-1)
    another_process(labelled, derived)
    assert derived[-1] == doubly


@pytest.mark.django_db(transaction=True)
def test_a_share_of_an_answer_deleted_meanwhile_is_stored_and_harmless(labelled, derived):
    """A re-import may delete an answer while its share is being derived: storing the share
    must not fail (nor fail a caller's transaction at its commit); the row is never read."""
    another_process(labelled, derived)
    pk = next(iter(gold.label_states(labelled)))
    share = gold.answer_shares(labelled, {pk: 2})[pk]
    selectors.write(labelled, [(10**9, 0, share)])
    assert SHARES.filter(answer_id=10**9).exists()
    another_process(labelled, derived)
    gone = next(iter(gold.label_states(labelled)))
    assert SHARES.filter(answer_id=gone).exists()
    Answer.objects.filter(pk=gone).delete()
    assert not SHARES.filter(answer_id=gone).exists()  # it went with its answer
    another_process(labelled, derived)  # and nothing fails


def test_shares_another_process_stored_meanwhile_are_kept_and_nothing_fails(
    labelled, derived, monkeypatch
):
    """Two workers deriving the same answers at once both write their shares: the second
    write meets the rows the first committed after its delete, keeps them (they are as
    good), and its page is served."""
    from django.db.models.query import QuerySet

    another_process(labelled, derived)
    SHARES.filter(project=labelled).update(revision=-1)  # derived again now
    # The other worker's rows arrive after our delete: here, our delete misses them.
    monkeypatch.setattr(QuerySet, "delete", lambda self: (0, {}))
    another_process(labelled, derived)
    assert derived[-1] == set(gold.label_states(labelled))
    assert set(SHARES.values_list("revision", flat=True)) == {-1}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_shares_replaced_in_bulk_leave_no_dead_rows(labelled, derived, monkeypatch):
    """Autovacuum is off on some servers: a project's shares derived again (after a
    re-import, a deploy) are vacuumed after they are written; one decision's are not."""
    from tests.annotate.test_maintenance import table_stats

    monkeypatch.setattr(selectors, "VACUUM_FROM", 2)
    another_process(labelled, derived)
    before = table_stats("annotate_computedreport")
    computed.touch(labelled, answers=computed.ALL)
    another_process(labelled, derived)
    after = table_stats("annotate_computedreport")
    assert after["vacuums"] == before["vacuums"] + 1 and after["dead"] == 0
