"""Reads that align the two reviewers' labels and derive gold from them.

Nothing here is stored: the pair of an answer is its first two submitted assignments (by
submission time; a gold check's label set is never one, annotate.checks), and any further ones
(an overlap above 2) come with it (`more`); a field is `agreed` when every label set gave the
same value, else it waits for a lead, and a lead's latest Decision for that field makes it
`adjudicated`. Deriving gold where it is read keeps it right
when a reviewer reopens a task or a lead changes a decision.

Which fields exist follows the project's label schema (annotate.schema): a field that is off
is absent from the pairs' gold. `support_binary` is always there and decided on its own: two
reviewers who both say unsupported agree on it though they differ in subtype (only `support`
then waits for a lead), and a lead's `support` decision decides it too. An answer's
`support_binary` is its claims' (answer_support): unsupported once one claim's is.

Gold from elsewhere is read beside the pairs, never as one (annotate.gold.imported); the
adjudication queue and agreement read pairs only.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.db.models import TextField
from django.db.models.functions import Cast

from annotate.common import collector
from annotate.models import Assignment, ClaimLabel, Decision, Project
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
    # The label sets after the first two (an overlap above 2), in submission order:
    # (reviewer, values shaped as `a`). Every one counts: a field is agreed only when all agree.
    more: tuple[tuple[int, dict[str, Any]], ...] = ()

    @property
    def paired(self) -> bool:
        """Whether two reviewers labelled the item (else its gold is imported alone)."""
        return self.reviewer_a is not None

    @property
    def sides(self) -> list[tuple[int | None, dict[str, Any]]]:
        """Every label set of the item, (reviewer, values), in submission order."""
        return [(self.reviewer_a, self.a), (self.reviewer_b, self.b), *self.more]

    def values(self, name: str) -> list[Any]:
        """Each label set's value of a field, in submission order."""
        return [labels.get(name) for _, labels in self.sides]

    def differs(self, name: str) -> bool:
        first = comparable(name, self.a)
        return comparable(name, self.b) != first or any(
            comparable(name, labels) != first for _, labels in self.more
        )

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


def claim_values(row) -> dict[str, Any]:
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


def claim_label_values() -> tuple:
    """The columns a claim label is read with (values_list), the JSON ones as text: decoded
    by the reader, which is faster than Django's decoding row by row."""
    return (
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


@collector.paused()
def pairs_for_project(
    project: Project, *, answer_ids=None
) -> tuple[list[ItemPair], list[ItemPair]]:
    """(answer pairs, claim pairs) for every answer with two submitted label sets or more
    (those after the first two in `more`), with the gold of each field the project's schema
    labels. Three queries whatever the size: assignments, claim labels, decisions."""
    schema = project.schema
    # A gold check's label set is measured against gold, never part of it (annotate.checks).
    submitted = Assignment.objects.filter(
        project=project, status=Assignment.Status.SUBMITTED, is_check=False
    )
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
        by_answer[row["answer_id"]].append(row)
    chosen = {
        row["pk"]: (answer_id, i)
        for answer_id, rows in by_answer.items()
        if len(rows) >= 2
        for i, row in enumerate(rows)
    }
    answer_keys = ("relevance", "abstention", "failure_labels", "note")

    answer_pairs = {
        answer_id: ItemPair(
            answer_id=answer_id,
            claim_id=None,
            ordinal=None,
            reviewer_a=rows[0]["reviewer_id"],
            reviewer_b=rows[1]["reviewer_id"],
            a={k: rows[0][k] for k in answer_keys},
            b={k: rows[1][k] for k in answer_keys},
            more=tuple((row["reviewer_id"], {k: row[k] for k in answer_keys}) for row in rows[2:]),
        )
        for answer_id, rows in by_answer.items()
        if len(rows) >= 2
    }
    claims: dict[int, ItemPair] = {}
    further: dict[int, dict[int, dict]] = defaultdict(dict)  # claim -> side (2, 3 …) -> values
    # JSON columns as text, decoded through a cache: most are "{}" or "[]" or repeat, and
    # decoding each one was a good part of a 100,000-claim export's time.
    labels = ClaimLabel.objects.filter(assignment_id__among=list(chosen))
    if answer_ids is not None:
        labels = labels.filter(claim__answer_id__among=list(answer_pairs))
    labels = labels.values_list(*claim_label_values())
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
        values = claim_values(row)
        if side == 0:
            pair.a = values
        elif side == 1:
            pair.b = values
        else:
            further[claim_id][side] = values
    for claim_id, by_side in further.items():
        pair = claims[claim_id]
        reviewers = answer_pairs[pair.answer_id].more
        pair.more = tuple((reviewers[side - 2][0], by_side[side]) for side in sorted(by_side))
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


# Fields whose value two reviewers agree on when it is equal, as it is (comparable() returns
# it unchanged, and so does _agreed_value()).
_PLAIN = frozenset(
    {"support", "support_binary", "severity", "requires_evidence", "relevance", "abstention"}
)


def _derive(pair: ItemPair, fields, latest) -> None:
    """Each field's gold and its source. `latest` is None for an item no lead decided
    anything on (most of them): then only the reviewers' values are compared (two of them
    inline; more, field by field)."""
    if latest is None and not pair.more:
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
        # the evidence-overlap statistic's job. Gold keeps every set rather than holding
        # the answer in the adjudication queue.
        ids = sorted(set().union(*(labels["evidence_ids"] for _, labels in pair.sides)))
        pair.gold[name] = {"evidence_ids": ids, "evidence_quote": _first_quote(pair)}
        pair.source[name] = UNION
    else:
        pair.gold[name] = None
        pair.source[name] = PENDING


def _first_quote(pair: ItemPair) -> str | None:
    """The first label set's evidence quote, else the next one's that has one (`a or b …`:
    the last one's when none has)."""
    quotes = [labels.get("evidence_quote") for _, labels in pair.sides]
    return next((quote for quote in quotes if quote), quotes[-1])


def _agreed_value(name: str, pair: ItemPair) -> Any:
    if name == "evidence":
        return {
            "evidence_ids": sorted(pair.a.get("evidence_ids") or []),
            "evidence_quote": _first_quote(pair),
        }
    if name == "failure_labels":
        return sorted(pair.a.get(name) or [])
    return pair.a.get(name)


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
