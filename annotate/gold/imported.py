"""Gold from elsewhere (annotate.imports.gold_import), read beside the pairs, never as one.

gold_for_project gives every gold item: each pair, carrying its item's imported gold when it
has one (`imported`), and the items of answers with imported gold and no pair, every field
gold as `imported`. The reviewers' agreed or adjudicated gold stands over imported gold (a
field they dispute waits for a lead as any other). imported_alone counts the items imported
with no second reviewer, which agreement cannot count."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, Q, TextField
from django.db.models.functions import Cast

from annotate.common import collector
from annotate.gold.pairs import (
    IMPORTED,
    Imported,
    ItemPair,
    Provenance,
    answer_fields,
    claim_fields,
    claim_values,
    pairs_for_project,
)
from annotate.gold.splits import judge_split
from annotate.models import Assignment, ImportedClaimGold, ImportedGold, Project


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
        labels = claim_values(row)
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


# Answers whose gold items gold_in_chunks derives at a time.
PAIR_CHUNK = 2000


def gold_in_chunks(
    project: Project, answer_ids: list[int]
) -> Iterator[tuple[list[ItemPair], list[ItemPair]]]:
    """gold_for_project over `answer_ids`, PAIR_CHUNK answers at a time (at most five
    queries a chunk). An item, both reviewers' values with the gold and its sources, weighs
    far more than what a report keeps of it: a reader that folds each chunk into what it
    keeps never holds a big project's items at once."""
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
                filter=Q(
                    answer__assignments__status=Assignment.Status.SUBMITTED,
                    answer__assignments__is_check=False,
                ),
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
