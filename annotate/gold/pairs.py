"""Reads that align the two reviewers' labels and derive gold from them.

Nothing here is stored: the pair of an answer is its first two submitted assignments (by
submission time), a field is `agreed` when both gave the same value, and a lead's latest
Decision for that field makes it `adjudicated`. Deriving gold where it is read keeps it right
when a reviewer reopens a task or a lead changes a decision.

Which fields exist follows the project's label schema (annotate.schema): a field that is off
is absent from the pairs' gold. `support_binary` is always there and decided on its own: two
reviewers who both say unsupported agree on it though they differ in subtype (only `support`
then waits for a lead), and a lead's `support` decision decides it too. An answer's
`support_binary` is its claims' (answer_support): unsupported once one claim's is.

Gold from elsewhere (annotate.imports.gold_import) is read beside the pairs, never as one:
gold_for_project gives every gold item -- each pair, carrying its item's imported gold when
it has one (`imported`), and the items of answers with imported gold and no pair, every field
gold as `imported`. The reviewers' agreed or adjudicated gold stands over imported gold (a
field they dispute waits for a lead as any other); the adjudication queue and agreement read
pairs only.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.db.models import Count, Max, Q, Sum, TextField
from django.db.models.functions import Cast

from annotate.common import collector
from annotate.models import (
    Answer,
    Assignment,
    ClaimLabel,
    Decision,
    ImportedClaimGold,
    ImportedGold,
    Project,
)
from annotate.schema import SUPPORTED, UNSUPPORTED, LabelSchema, support_binary

# Every field there can be; a project's schema chooses among them (claim_fields / answer_fields).
CLAIM_FIELDS = (
    "support",
    "support_binary",
    "severity",
    "requires_evidence",
    "citations",
    "evidence",
)
ANSWER_FIELDS = ("relevance", "abstention", "failure_labels")
# Derived from another field, never decided on its own by a lead.
DERIVED = frozenset({"support_binary"})


def claim_fields(schema: LabelSchema) -> tuple[str, ...]:
    """The claim fields of gold under a schema: support and support_binary always."""
    return tuple(
        name for name in CLAIM_FIELDS if name in ("support", "support_binary") or schema.claim(name)
    )


def answer_fields(schema: LabelSchema) -> tuple[str, ...]:
    return tuple(name for name in ANSWER_FIELDS if schema.answer(name))


AGREED, ADJUDICATED, PENDING, UNION = "agreed", "adjudicated", "pending", "union"
IMPORTED = "imported"  # gold from elsewhere, one label per item (no second reviewer)


@dataclass(frozen=True, slots=True)
class Provenance:
    """Where an item's imported gold came from: the import's source name, the file's name and
    SHA-256 (annotate.models.GoldImport), and the file's line."""

    source: str
    file_name: str
    sha256: str
    line: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "file_name": self.file_name,
            "sha256": self.sha256,
            "line": self.line,
        }


@dataclass(frozen=True, slots=True)
class Imported:
    """An item's imported gold: its values shaped as a pair's gold (the fields of the
    project's schema), the label as imported (note included, shaped as a reviewer's), and
    where it came from."""

    gold: dict[str, Any]
    labels: dict[str, Any]
    provenance: Provenance


@dataclass
class ItemPair:
    """One claim (or answer, when claim_id is None) labelled by reviewers A and B; or, with
    no reviewer (reviewer_a and reviewer_b None, `a` and `b` empty), an item whose gold is
    imported. `imported` is the item's imported gold, where it has some."""

    answer_id: int
    claim_id: int | None
    ordinal: int | None
    reviewer_a: int | None
    reviewer_b: int | None
    a: dict[str, Any]
    b: dict[str, Any]
    gold: dict[str, Any] = field(default_factory=dict)
    source: dict[str, str] = field(default_factory=dict)
    rationale: dict[str, str] = field(default_factory=dict)
    imported: Imported | None = None

    @property
    def paired(self) -> bool:
        """Whether two reviewers labelled the item (else its gold is imported alone)."""
        return self.reviewer_a is not None

    def differs(self, name: str) -> bool:
        return comparable(name, self.a) != comparable(name, self.b)

    @property
    def pending(self) -> list[str]:
        """Fields a lead must decide (a derived field follows its source, never on its own)."""
        return [name for name, src in self.source.items() if src == PENDING and name not in DERIVED]


def comparable(name: str, labels: dict[str, Any]) -> Any:
    """The value two reviewers must share for a field to count as agreed."""
    value = labels.get(name)
    if name == "evidence":
        return tuple(sorted(labels.get("evidence_ids") or ()))
    if name == "failure_labels":
        return tuple(sorted(value or ()))
    if name == "citations":
        return tuple(sorted((value or {}).items()))
    return value


def _claim_values(row) -> dict[str, Any]:
    """A claim label's values from its query row (see pairs_for_project); the two JSON
    columns arrive as text. Like the decoded JSON, the labels' choices are shared objects
    (each row brings its own copy of "supported"): a pair of a 100,000-claim project is
    held by every report computed from it, and these copies were a sixth of its weight.
    Nobody mutates a pair's values."""
    _, _, _, support, severity, requires_evidence, citations, evidence_ids, quote, note = row
    citations, evidence_ids = _json_text(citations), _json_text(evidence_ids)
    return {
        "support": _choice(support),
        "support_binary": support_binary(support),
        "severity": _choice(severity),
        "requires_evidence": requires_evidence,
        "citations": _NO_CITATIONS if citations is None else citations,
        "evidence_ids": _NO_IDS if evidence_ids is None else evidence_ids,
        "evidence_quote": quote,
        "note": note,
    }


def _choice(value: str | None) -> str | None:
    return _CHOICES.setdefault(value, value) if value is not None else None


_CHOICES: dict[str, str] = {}
_NO_CITATIONS: dict = {}
_NO_IDS: list = []
_EMPTY_JSON = {"{}": _NO_CITATIONS, "[]": _NO_IDS, None: None}


@lru_cache(maxsize=1 << 16)
def _decode_json(text: str):
    return json.loads(text)


def _json_text(text: str | None):
    """A JSON column read as text. Callers never mutate the result: it may be shared."""
    empty = _EMPTY_JSON.get(text, _MISSING)
    if empty is not _MISSING:
        return empty
    return _decode_json(text)


_MISSING = object()


@collector.paused()
def pairs_for_project(
    project: Project, *, answer_ids=None
) -> tuple[list[ItemPair], list[ItemPair]]:
    """(answer pairs, claim pairs) for every answer with two submitted label sets, with the
    gold of each field the project's schema labels. Three queries whatever the size:
    assignments, claim labels, decisions."""
    schema = project.schema
    submitted = Assignment.objects.filter(project=project, status=Assignment.Status.SUBMITTED)
    if answer_ids is not None:
        submitted = submitted.filter(answer_id__among=answer_ids)
    by_answer: dict[int, list[dict]] = defaultdict(list)
    for row in submitted.order_by("answer_id", "submitted_at", "pk").values(
        "pk",
        "answer_id",
        "reviewer_id",
        "relevance",
        "abstention",
        "note",
        "failure_labels",
    ):
        if len(by_answer[row["answer_id"]]) < 2:
            by_answer[row["answer_id"]].append(row)
    chosen = {
        row["pk"]: (answer_id, i)
        for answer_id, rows in by_answer.items()
        if len(rows) == 2
        for i, row in enumerate(rows)
    }

    answer_pairs = {
        answer_id: ItemPair(
            answer_id=answer_id,
            claim_id=None,
            ordinal=None,
            reviewer_a=rows[0]["reviewer_id"],
            reviewer_b=rows[1]["reviewer_id"],
            a={k: rows[0][k] for k in ("relevance", "abstention", "failure_labels", "note")},
            b={k: rows[1][k] for k in ("relevance", "abstention", "failure_labels", "note")},
        )
        for answer_id, rows in by_answer.items()
        if len(rows) == 2
    }
    claims: dict[int, ItemPair] = {}
    # JSON columns as text, decoded through a cache: most are "{}" or "[]" or repeat, and
    # decoding each one was a good part of a 100,000-claim export's time.
    labels = ClaimLabel.objects.filter(assignment_id__among=list(chosen))
    if answer_ids is not None:
        labels = labels.filter(claim__answer_id__among=list(answer_pairs))
    labels = labels.values_list(
        "assignment_id",
        "claim_id",
        "claim__ordinal",
        "support",
        "severity",
        "requires_evidence",
        Cast("citations", TextField()),
        Cast("evidence_ids", TextField()),
        "evidence_quote",
        "note",
    )
    for row in labels.order_by("claim_id"):
        assignment_id, claim_id, ordinal = row[0], row[1], row[2]
        answer_id, side = chosen[assignment_id]
        pair = claims.get(claim_id)
        if pair is None:
            parent = answer_pairs[answer_id]
            pair = claims[claim_id] = ItemPair(
                answer_id=answer_id,
                claim_id=claim_id,
                ordinal=ordinal,
                reviewer_a=parent.reviewer_a,
                reviewer_b=parent.reviewer_b,
                a={},
                b={},
            )
        values = _claim_values(row)
        if side == 0:
            pair.a = values
        else:
            pair.b = values
    claim_pairs = [p for p in claims.values() if p.a and p.b]

    decisions = Decision.objects.filter(answer_id__among=list(answer_pairs)).order_by(
        "decided_at", "pk"
    )
    latest: dict[tuple[int, int | None, str], Decision] = {}
    for decision in decisions:
        latest[(decision.answer_id, decision.claim_id, decision.field)] = decision
    answer_names, claim_names = answer_fields(schema), claim_fields(schema)
    decided = {(answer_id, claim_id) for answer_id, claim_id, _ in latest}
    for pair in answer_pairs.values():
        _derive(pair, answer_names, latest if (pair.answer_id, None) in decided else None)
    # Which fields are agreed, pending or decided comes in few combinations: the pairs share
    # one dict per combination (nobody mutates a derived pair's sources).
    sources: dict[tuple, dict[str, str]] = {}
    for pair in claim_pairs:
        _derive(pair, claim_names, latest if (pair.answer_id, pair.claim_id) in decided else None)
        pair.source = sources.setdefault(tuple(pair.source.items()), pair.source)
    ordered_claims = sorted(claim_pairs, key=lambda p: (p.answer_id, p.ordinal))
    return sorted(answer_pairs.values(), key=lambda p: p.answer_id), ordered_claims


# Answers whose label pairs pairs_in_chunks derives at a time.
PAIR_CHUNK = 2000


def pairs_in_chunks(
    project: Project, answer_ids: list[int]
) -> Iterator[tuple[list[ItemPair], list[ItemPair]]]:
    """pairs_for_project over `answer_ids`, PAIR_CHUNK answers at a time (three queries a
    chunk). A pair, both reviewers' values with the gold and its sources, weighs far more
    than what a report keeps of it: a reader that folds each chunk into what it keeps never
    holds a big project's pairs at once."""
    for start in range(0, len(answer_ids), PAIR_CHUNK):
        yield pairs_for_project(project, answer_ids=answer_ids[start : start + PAIR_CHUNK])


# --- Gold from elsewhere --------------------------------------------------------------------


def imported_gold(
    project: Project, *, answer_ids=None
) -> tuple[dict[int, Imported], dict[int, tuple[int, int, Imported]]]:
    """The imported gold of the project's answers (or of `answer_ids`): (answer pk ->
    Imported, claim pk -> (answer pk, ordinal, Imported)). Two queries; one when none of
    the answers has imported gold."""
    schema = project.schema
    answer_names, claim_names = answer_fields(schema), claim_fields(schema)
    rows = ImportedGold.objects.all()
    claim_rows = ImportedClaimGold.objects.all()
    if answer_ids is None:
        rows = rows.filter(gold_import__project=project)
        claim_rows = claim_rows.filter(gold__gold_import__project=project)
    else:
        rows = rows.filter(answer_id__among=list(answer_ids))
        claim_rows = claim_rows.filter(gold__answer_id__among=list(answer_ids))
    answers: dict[int, Imported] = {}
    for answer_pk, line, source, file_name, sha256, *values in rows.values_list(
        "answer_id",
        "line",
        "gold_import__source",
        "gold_import__file_name",
        "gold_import__sha256",
        *_ANSWER_LABEL_KEYS,
    ):
        labels = dict(zip(_ANSWER_LABEL_KEYS, values, strict=True))
        gold = {
            name: sorted(labels[name] or []) if name == "failure_labels" else labels[name]
            for name in answer_names
        }
        answers[answer_pk] = Imported(gold, labels, Provenance(source, file_name, sha256, line))
    claims: dict[int, tuple[int, int, Imported]] = {}
    if not answers:
        return answers, claims  # the usual case: one query
    for row in claim_rows.order_by("claim_id").values_list(
        "gold__answer_id",
        "claim_id",
        "claim__ordinal",
        "support",
        "severity",
        "requires_evidence",
        Cast("citations", TextField()),
        Cast("evidence_ids", TextField()),
        "evidence_quote",
        "note",
    ):
        answer_pk, claim_pk, ordinal = row[0], row[1], row[2]
        parent = answers.get(answer_pk)
        if parent is None:  # a claim row is written with its answer's, in one transaction
            continue
        labels = _claim_values(row)
        gold = {}
        for name in claim_names:
            if name == "evidence":
                gold[name] = {
                    "evidence_ids": sorted(labels["evidence_ids"]),
                    "evidence_quote": labels["evidence_quote"],
                }
            else:
                gold[name] = labels[name]
        claims[claim_pk] = (answer_pk, ordinal, Imported(gold, labels, parent.provenance))
    return answers, claims


_ANSWER_LABEL_KEYS = ("relevance", "abstention", "failure_labels", "note")


def _imported_sources(names) -> dict[str, str]:
    return dict.fromkeys(names, IMPORTED)


@collector.paused()
def gold_for_project(project: Project, *, answer_ids=None) -> tuple[list[ItemPair], list[ItemPair]]:
    """(answer items, claim items) of every gold item of the project (or of `answer_ids`):
    the pairs of pairs_for_project, each with its item's imported gold (`imported`), and the
    items of answers that have imported gold and no pair, every field gold as `imported`
    (reviewer_a and reviewer_b None). Five queries whatever the size (four when none of the
    answers has imported gold)."""
    answer_pairs, claim_pairs = pairs_for_project(project, answer_ids=answer_ids)
    answers, claims = imported_gold(project, answer_ids=answer_ids)
    if not answers:
        return answer_pairs, claim_pairs
    schema = project.schema
    paired = {pair.answer_id for pair in answer_pairs}
    for pair in answer_pairs:
        pair.imported = answers.get(pair.answer_id)
    for pair in claim_pairs:
        found = claims.get(pair.claim_id)
        pair.imported = found[2] if found is not None else None
    # Every imported item's sources are the same: one dict each for answers and claims
    # (nobody mutates a derived item's sources).
    answer_sources = _imported_sources(answer_fields(schema))
    claim_sources = _imported_sources(claim_fields(schema))
    alone = [
        ItemPair(
            answer_id=pk,
            claim_id=None,
            ordinal=None,
            reviewer_a=None,
            reviewer_b=None,
            a={},
            b={},
            gold=dict(imported.gold),
            source=answer_sources,
            imported=imported,
        )
        for pk, imported in answers.items()
        if pk not in paired
    ]
    alone_claims = [
        ItemPair(
            answer_id=answer_pk,
            claim_id=claim_pk,
            ordinal=ordinal,
            reviewer_a=None,
            reviewer_b=None,
            a={},
            b={},
            gold=dict(imported.gold),
            source=claim_sources,
            imported=imported,
        )
        for claim_pk, (answer_pk, ordinal, imported) in claims.items()
        if answer_pk not in paired
    ]
    if not alone:
        return answer_pairs, claim_pairs
    return (
        sorted([*answer_pairs, *alone], key=lambda p: p.answer_id),
        sorted([*claim_pairs, *alone_claims], key=lambda p: (p.answer_id, p.ordinal)),
    )


def gold_in_chunks(
    project: Project, answer_ids: list[int]
) -> Iterator[tuple[list[ItemPair], list[ItemPair]]]:
    """gold_for_project over `answer_ids`, PAIR_CHUNK answers at a time (at most five
    queries a chunk), as pairs_in_chunks."""
    for start in range(0, len(answer_ids), PAIR_CHUNK):
        yield gold_for_project(project, answer_ids=answer_ids[start : start + PAIR_CHUNK])


def imported_answers(project: Project):
    """The project's answers with imported gold, in answer order, each with `n`, its
    submitted label sets; callers pick the columns (`answer_id`, `n`, ...)."""
    return (
        ImportedGold.objects.filter(gold_import__project=project)
        .annotate(
            n=Count(
                "answer__assignments",
                filter=Q(answer__assignments__status=Assignment.Status.SUBMITTED),
            )
        )
        .order_by("answer_id")
    )


@dataclass(frozen=True)
class ImportedAlone:
    """The gold items that came without a second reviewer: answers whose gold is imported and
    that two reviewers have not both labelled, with their claims (by judge split too), and
    the sources their gold came from. Agreement cannot count them (it needs two people);
    every report that shows a human-human figure says how many they are."""

    answers: int = 0
    claims: int = 0
    answers_by_split: dict[str, int] = field(default_factory=dict)
    claims_by_split: dict[str, int] = field(default_factory=dict)
    sources: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"answers": self.answers, "claims": self.claims, "sources": list(self.sources)}


def imported_alone(project: Project) -> ImportedAlone:
    """ImportedAlone of the project, in two queries."""
    rows = imported_answers(project).filter(n__lt=2)
    alone = {
        pk: (judge_split(case_id), source)
        for pk, case_id, source in rows.values_list(
            "answer_id", "answer__case__case_id", "gold_import__source"
        )
    }
    if not alone:
        return ImportedAlone()
    by_split: Counter = Counter()
    counts = (
        ImportedClaimGold.objects.filter(gold__gold_import__project=project)
        .values("gold__answer_id")
        .annotate(c=Count("pk"))
        .order_by()
        .values_list("gold__answer_id", "c")
    )
    for answer_pk, n in counts:
        if answer_pk in alone:
            by_split[alone[answer_pk][0]] += n
    return ImportedAlone(
        answers=len(alone),
        claims=sum(by_split.values()),
        answers_by_split=dict(Counter(split for split, _ in alone.values())),
        claims_by_split=dict(by_split),
        sources=tuple(sorted({source for _, source in alone.values()})),
    )


# Fields whose value two reviewers agree on when it is equal, as it is (comparable() returns
# it unchanged, and so does _agreed_value()).
_PLAIN = frozenset(
    {"support", "support_binary", "severity", "requires_evidence", "relevance", "abstention"}
)


def _derive(pair: ItemPair, fields, latest) -> None:
    """Each field's gold and its source. `latest` is None for an item no lead decided
    anything on (most of them): then only the reviewers' two values are compared."""
    if latest is None:
        # The common case, inlined for the plain fields: every pair of a project passes
        # here whenever the adjudication queue, the gold counts or an export is derived.
        a, b, gold, source = pair.a, pair.b, pair.gold, pair.source
        for name in fields:
            if name not in _PLAIN:
                if name == "citations" and (a.get(name) or {}) == (b.get(name) or {}):
                    # Equal mappings: what comparable() would find by sorting both.
                    gold[name] = a.get(name)
                    source[name] = AGREED
                elif name == "evidence" and not a.get("evidence_ids") and not b.get("evidence_ids"):
                    gold[name] = _agreed_value(name, pair)
                    source[name] = AGREED
                else:
                    _derive_field(pair, name, None)
            elif a.get(name) == b.get(name):
                gold[name] = a.get(name)
                source[name] = AGREED
            else:
                gold[name] = None
                source[name] = PENDING
        return
    for name in fields:
        _derive_field(pair, name, latest)


def _derive_field(pair: ItemPair, name: str, latest) -> None:
    """One field's gold and source; `latest`: the decisions, None when there are none."""
    decision = None if latest is None else latest.get((pair.answer_id, pair.claim_id, name))
    if name == "support_binary" and latest is not None:
        # A lead who decides the subtype decides the binary value with it.
        decision = latest.get((pair.answer_id, pair.claim_id, "support")) or decision
        if decision is not None:
            pair.gold[name] = support_binary(decision.value)
            pair.source[name] = ADJUDICATED
            pair.rationale[name] = decision.rationale
            return
    if decision is not None:
        pair.gold[name] = decision.value
        pair.source[name] = ADJUDICATED
        pair.rationale[name] = decision.rationale
    elif not pair.differs(name):
        pair.gold[name] = _agreed_value(name, pair)
        pair.source[name] = AGREED
    elif name == "evidence":
        # Reviewers often pick different but equally valid passages; measuring that is
        # the evidence-overlap statistic's job. Gold keeps both sets rather than holding
        # the answer in the adjudication queue.
        ids = sorted(set(pair.a["evidence_ids"]) | set(pair.b["evidence_ids"]))
        quote = pair.a.get("evidence_quote") or pair.b.get("evidence_quote")
        pair.gold[name] = {"evidence_ids": ids, "evidence_quote": quote}
        pair.source[name] = UNION
    else:
        pair.gold[name] = None
        pair.source[name] = PENDING


def _agreed_value(name: str, pair: ItemPair) -> Any:
    if name == "evidence":
        return {
            "evidence_ids": sorted(pair.a.get("evidence_ids") or []),
            "evidence_quote": pair.a.get("evidence_quote") or pair.b.get("evidence_quote"),
        }
    if name == "failure_labels":
        return sorted(pair.a.get(name) or [])
    return pair.a.get(name)


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


@dataclass(frozen=True, slots=True)
class AnswerDisagreement:
    """An answer in the adjudication queue, as the queue shows it: never its variant."""

    answer_pk: int
    task_number: int
    question: str
    score: int
    fields: list[str]


# The queue's slices, as the reports cut them (by the case's answerable and adversarial
# flags): adversarial is the flag, whatever the answerability, so an adversarial answerable
# case is in both.
QUEUE_SLICES = {
    "answerable": lambda answerable, adversarial: answerable,
    "unanswerable": lambda answerable, adversarial: not answerable,
    "adversarial": lambda answerable, adversarial: adversarial,
}


QUEUE_CHUNK = 500


def doubly_labelled(project: Project):
    """The answers with two submitted label sets or more, in answer order: rows of
    `answer_id` and `n` (their label sets), grouped by answer; callers pick the columns."""
    return (
        Assignment.objects.filter(project=project, status=Assignment.Status.SUBMITTED)
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


def label_states(project: Project) -> dict[int, tuple]:
    """Every doubly-labelled answer of the project (by pk) with a key that changes whenever
    its share may; the key starts with the answer's number of submitted label sets. A share
    is derived from the answer's submitted label sets and its decisions (its claims, schema
    and case are the project's content: see annotate.report_cache). A label set changes only
    by being reopened (it leaves the submitted count) and submitted again (its revision
    rises); label sets are added as assignments; decisions are never updated, only added.
    Two queries, bounded by the project's submitted assignments and decisions."""
    decided = {
        answer_id: (n, last)
        for answer_id, n, last in Decision.objects.filter(answer__project=project)
        .values("answer_id")
        .annotate(n=Count("pk"), last=Max("pk"))
        .order_by()
        .values_list("answer_id", "n", "last")
    }
    rows = (
        Assignment.objects.filter(project=project, status=Assignment.Status.SUBMITTED)
        .values("answer_id")
        .annotate(
            n=Count("pk"),
            pks=Sum("pk"),
            last=Max("pk"),
            revisions=Sum("revision"),
            latest=Max("revision"),
        )
        .filter(n__gte=2)
        .order_by()
    )
    return {
        row[0]: (*row[1:], decided.get(row[0]))
        for row in rows.values_list("answer_id", "n", "pks", "last", "revisions", "latest")
    }


def pair_state(pair: ItemPair) -> str:
    """PENDING while a field awaits a lead; ADJUDICATED once a lead decided one; IMPORTED for
    an item whose gold is imported alone; else AGREED."""
    if pair.pending:
        return PENDING
    if ADJUDICATED in pair.source.values():
        return ADJUDICATED
    if not pair.paired:
        return IMPORTED
    return AGREED


# An answer's support_binary takes the least settled of its claims' sources, in this order.
SOURCE_PRECEDENCE = (PENDING, ADJUDICATED)


def answer_support(claims: Iterable[ItemPair]) -> tuple[str | None, str]:
    """An answer's support_binary and its source, derived from its claims' gold, as the
    evaluation report reads an unsupported answer: `unsupported` as soon as one claim's is,
    `supported` once every claim's is, else None. The source is the claims' own, the least
    settled first (SOURCE_PRECEDENCE): `pending` while a claim's support_binary waits for a
    lead -- even when another claim already makes the answer unsupported, since the answer
    is decided only once all its claims are -- `adjudicated` when a lead decided one, else
    `agreed`. An answer without claims asserts nothing unsupported: supported, agreed.
    Every claim of a doubly-labelled answer has a pair: claims are locked once labelling
    opens and a label set covers all of them."""
    sources: set[str] = set()
    unsupported = False
    for claim in claims:
        sources.add(claim.source.get("support_binary", PENDING))
        unsupported = unsupported or claim.gold.get("support_binary") == UNSUPPORTED
    source = next((s for s in SOURCE_PRECEDENCE if s in sources), AGREED)
    if unsupported:
        return UNSUPPORTED, source
    return (None if source == PENDING else SUPPORTED), source


def answer_gold(
    pair: ItemPair, claims: Iterable[ItemPair], fields: Iterable[str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """(gold, sources) of an answer's gold row: the answer fields of the schema (`fields`)
    and support_binary, derived from its claims (answer_support). An answer whose gold is
    imported alone takes its support_binary from its imported claims, as `imported`."""
    value, source = answer_support(claims)
    if not pair.paired and source != PENDING:
        source = IMPORTED
    values = {name: pair.gold.get(name) for name in fields}
    values["support_binary"] = value
    return values, {**pair.source, "support_binary": source}


def row_state(sources: dict[str, str]) -> str:
    """A gold row's state from its fields' sources: PENDING while one waits for a lead, then
    ADJUDICATED when a lead decided one, IMPORTED for a row whose gold is imported alone
    (its fields are all imported), else AGREED (for a claim, what pair_state says)."""
    values = set(sources.values())
    found = next((s for s in SOURCE_PRECEDENCE if s in values), None)
    if found is not None:
        return found
    return IMPORTED if IMPORTED in values else AGREED


def adjudication_queue(
    project: Project,
    *,
    slice: str | None = None,
    field: str | None = None,
    summary: PairSummary | None = None,
) -> list[AnswerDisagreement]:
    """Answers whose reviewers disagree on a field no lead has decided yet, most serious
    first (ties by task number); only those of one slice, or disagreeing on one field, when
    asked. From `summary` (pair_summary, derived here when not given: a caller that keeps it
    serves every filter of the queue, and the gold page, from one derivation), then one query
    for the queue's answers, as values (model instances of a 10,000-answer project's 3,855
    disagreeing answers took 100 ms, again after every decision and submission)."""
    summary = summary if summary is not None else pair_summary(project)
    scores, fields = summary.scores, summary.fields
    answers = Answer.objects.filter(pk__any=list(scores)).values_list(
        "pk", "task_number", "case__question", "case__answerable", "case__adversarial"
    )
    keep = QUEUE_SLICES[slice] if slice else None
    queue = [
        AnswerDisagreement(pk, number, question, scores[pk], sorted(fields[pk]))
        for pk, number, question, answerable, adversarial in answers
        if (keep is None or keep(answerable, adversarial))
        and (field is None or field in fields[pk])
    ]
    return sorted(queue, key=lambda d: (-d.score, d.task_number or 0))


JUDGE_DEV_SHARE = 0.3
# What a judge's calibration is measured on: the measuring split by default.
SPLITS = ("judge_test", "judge_dev", "all")
DEFAULT_SPLIT = "judge_test"


def judge_split(case_id: str) -> str:
    """Deterministic judge split of a case: about 30% `judge_dev` (for writing judge prompts),
    the rest `judge_test` (for measuring judges). Decided by the case id alone, so every
    answer of a case -- every variant and sample -- lands on the same side, and re-exports
    never move an item across."""
    digest = hashlib.sha256(f"claimdesk-judge-split:{case_id}".encode()).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2**64
    return "judge_dev" if fraction < JUDGE_DEV_SHARE else "judge_test"
