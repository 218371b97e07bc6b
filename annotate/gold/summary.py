"""What the gold page's counts and the adjudication queue read of every pair of a project, from
one derivation (PairSummary): each answer's share of it (AnswerShare: its gold row's state,
its claims' states, its disagreement score and pending fields), derived QUEUE_CHUNK answers at
a time, and the key that says when a share must be derived again (label_states)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.db.models import Count

from annotate.gold.pairs import (
    ADJUDICATED,
    AGREED,
    PENDING,
    ItemPair,
    answer_gold,
    pair_state,
    pairs_for_project,
    row_state,
)
from annotate.gold.splits import judge_split
from annotate.models import Answer, Assignment, Project

# How serious a disagreement is, for ordering the adjudication queue: a flip between
# supported and contradicted matters more than one between supported and not-found.
SUPPORT_WEIGHT = {
    frozenset({"supported", "contradicted"}): 100,
    frozenset({"supported", "insufficient_evidence"}): 60,
    frozenset({"contradicted", "insufficient_evidence"}): 40,
}
SEVERE = {"major", "critical"}


def disagreement_score(pair: ItemPair) -> int:
    score = 0
    if pair.source.get("support") == PENDING:
        # supported vs unsupported (a binary project) weighs like supported vs contradicted:
        # it flips every binary figure.
        score += SUPPORT_WEIGHT.get(frozenset({pair.a["support"], pair.b["support"]}), 100)
    if pair.source.get("severity") == PENDING:
        score += 50 if {pair.a["severity"], pair.b["severity"]} & SEVERE else 20
    if pair.source.get("abstention") == PENDING:
        score += 50
    if pair.source.get("citations") == PENDING:
        score += 30
    if pair.source.get("relevance") == PENDING:
        score += 10 * abs((pair.a["relevance"] or 0) - (pair.b["relevance"] or 0))
    for name in ("requires_evidence", "failure_labels"):
        if pair.source.get(name) == PENDING:
            score += 10
    return score


QUEUE_CHUNK = 500


def doubly_labelled(project: Project):
    """The answers with two submitted label sets or more, in answer order: rows of
    `answer_id` and `n` (their label sets), grouped by answer; callers pick the columns."""
    return (
        Assignment.objects.filter(
            project=project, status=Assignment.Status.SUBMITTED, is_check=False
        )
        .values("answer_id")
        .annotate(n=Count("pk"))
        .filter(n__gte=2)
        .order_by("answer_id")
    )


@dataclass
class PairSummary:
    """What the gold page's counts and the adjudication queue read of every pair of a
    project, from one derivation: the queue's score and pending fields per answer, and each
    gold row's state (agreed / adjudicated / pending) counted by item and by judge split."""

    scores: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    fields: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))
    claims: Counter = field(default_factory=Counter)
    answers: Counter = field(default_factory=Counter)
    claims_by_split: dict[str, Counter] = field(
        default_factory=lambda: {"judge_dev": Counter(), "judge_test": Counter()}
    )
    answers_by_split: dict[str, Counter] = field(
        default_factory=lambda: {"judge_dev": Counter(), "judge_test": Counter()}
    )
    beyond_two: int = 0  # answers with more than two label sets: gold reads the first two


def pair_summary(project: Project) -> PairSummary:
    """Derive every pair of the project, QUEUE_CHUNK answers at a time, keeping only the
    summary: deriving a 10,000-answer project at once took a worker from 59 to 203 MB.
    Queries: the doubly-labelled answers, then four per chunk."""
    label_sets = dict(doubly_labelled(project).values_list("answer_id", "n"))
    return summary_of(answer_shares(project, label_sets))


@dataclass(frozen=True, slots=True)
class AnswerShare:
    """One doubly-labelled answer's part of its project's PairSummary: every part of the
    summary is a sum over answers, so a summary can be kept as its answers' shares and only
    the shares of answers whose labels changed derived again (see label_states)."""

    split: str
    answer_state: str  # its gold row's (row_state): support_binary from its claims included
    claim_states: tuple[int, int, int]  # claim pairs agreed, adjudicated, pending
    score: int
    pending_fields: frozenset[str]
    beyond_two: bool


_STATES = (AGREED, ADJUDICATED, PENDING)


def answer_shares(project: Project, label_sets: dict[int, int]) -> dict[int, AnswerShare]:
    """The shares of the answers in `label_sets` (answer pk -> its submitted label sets),
    QUEUE_CHUNK answers at a time: four queries a chunk."""
    pks = list(label_sets)
    shares = {}
    for start in range(0, len(pks), QUEUE_CHUNK):
        chunk = pks[start : start + QUEUE_CHUNK]
        split_of = {
            pk: judge_split(case_id)
            for pk, case_id in Answer.objects.filter(pk__among=chunk).values_list(
                "pk", "case__case_id"
            )
        }
        answer_pairs, claim_pairs = pairs_for_project(project, answer_ids=chunk)
        claim_states: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0])
        claims_of: dict[int, list[ItemPair]] = defaultdict(list)
        for pair in claim_pairs:
            claim_states[pair.answer_id][_STATES.index(pair_state(pair))] += 1
            claims_of[pair.answer_id].append(pair)
        scores: dict[int, int] = defaultdict(int)
        pending: dict[int, set[str]] = defaultdict(set)
        for pair in (*answer_pairs, *claim_pairs):
            if pair.pending:
                scores[pair.answer_id] += disagreement_score(pair)
                pending[pair.answer_id].update(pair.pending)
        for pair in answer_pairs:
            pk = pair.answer_id
            shares[pk] = AnswerShare(
                split=split_of[pk],
                # The answer row's state, as the export's: its support_binary is its claims'.
                answer_state=row_state(answer_gold(pair, claims_of[pk], ())[1]),
                claim_states=tuple(claim_states[pk]),
                score=scores[pk],
                pending_fields=frozenset(pending[pk]),
                beyond_two=label_sets[pk] > 2,
            )
    return shares


def summary_of(shares: dict[int, AnswerShare]) -> PairSummary:
    """The PairSummary of answers' shares (by answer pk)."""
    summary = PairSummary()
    for pk, share in shares.items():
        summary.answers[share.answer_state] += 1
        summary.answers_by_split[share.split][share.answer_state] += 1
        for state, n in zip(_STATES, share.claim_states, strict=True):
            if n:
                summary.claims[state] += n
                summary.claims_by_split[share.split][state] += n
        if share.pending_fields:
            summary.scores[pk] = share.score
            summary.fields[pk] = set(share.pending_fields)
        summary.beyond_two += share.beyond_two
    return summary


def label_states(project: Project) -> dict[int, tuple[int, int]]:
    """Every doubly-labelled answer of the project (by pk) with (its number of submitted
    label sets, its revision). A share is derived from the answer's submitted label sets and
    its decisions, its claims, case and the schema: every write of those moves the answer's
    revision (annotate.common.computed.touch), so a share is current while it holds. One
    query, bounded by the project's submitted assignments."""
    rows = (
        Assignment.objects.filter(
            project=project, status=Assignment.Status.SUBMITTED, is_check=False
        )
        .values("answer_id", "answer__revision")
        .annotate(n=Count("pk"))
        .filter(n__gte=2)
        .order_by()
    )
    return {
        pk: (n, revision)
        for pk, revision, n in rows.values_list("answer_id", "answer__revision", "n")
    }
