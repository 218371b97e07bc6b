"""A project's data as the evaluation report reads it, in a fixed number of queries
(load): its variants, cases, answers, their claims' decided gold; the slices they are cut
into, and the helpers that cut them. ``evaluate`` and ``compare`` accept it as ``data=`` so a
page that shows both reads the database once.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from annotate.common import collector
from annotate.gold.imported import gold_in_chunks
from annotate.gold.pairs import ADJUDICATED, AGREED, IMPORTED
from annotate.models import (
    Answer,
    Case,
    Citation,
    Claim,
    Evidence,
    Judgment,
    Project,
    RetrievedPassage,
    Variant,
)

SLICES = ("all", "answerable", "unanswerable", "adversarial", "dev", "heldout")


# The agreement report's slices (evaluation.reports.agreement): named here, where reading them
# loads no statistics library (the API's filters need the names, not the report).
AGREEMENT_SLICES = SLICES[:4]


DECIDED = frozenset({AGREED, ADJUDICATED, IMPORTED})


SUPPORTED = "supported"


@dataclass
class CaseData:
    pk: int
    case_id: str
    answerable: bool
    adversarial: bool
    split: str
    evidence: frozenset[str] = frozenset()
    grades: dict[str, int] = field(default_factory=dict)
    # Evidence the case names whose passage is gone from the corpus (only a deleted passage
    # does that: import refuses an unknown one).
    evidence_lost: bool = False

    def in_slice(self, name: str) -> bool:
        return SLICE_TESTS[name](self)


SLICE_TESTS: dict[str, Callable[[CaseData], bool]] = {
    "all": lambda c: True,
    "answerable": lambda c: c.answerable,
    "unanswerable": lambda c: not c.answerable,
    "adversarial": lambda c: c.adversarial,
    "dev": lambda c: c.split == Case.Split.DEV,
    "heldout": lambda c: c.split == Case.Split.HELDOUT,
}


@dataclass
class ClaimGold:
    """One claim's gold fields; a field is None while it is not decided (or not labelled)."""

    support: str | None  # on the project's scale
    support_binary: str | None  # supported / unsupported, decided on its own
    requires_evidence: bool | None
    citations: dict[str, str] | None

    @property
    def faithfulness_label(self) -> str | None:
        """The finest decided label: the subtype when decided, else supported/unsupported."""
        if self.support in ("supported", "contradicted", "insufficient_evidence"):
            return self.support
        return self.support_binary


@dataclass
class AnswerData:
    pk: int
    answer_id: str
    case: CaseData
    variant: str
    sample: int
    abstained: bool
    elapsed_ms: float | None
    request_cost: float | None
    ranking: list[str] = field(default_factory=list)
    prompt: list[str] = field(default_factory=list)
    claim_count: int = 0
    labelled: bool = False
    claims: list[ClaimGold] = field(default_factory=list)
    gold: dict[str, Any] = field(default_factory=dict)  # decided answer-level fields only

    def ranked(self, ranking: str) -> list[str]:
        return self.ranking if ranking == "full" else self.prompt

    @property
    def decided_supports(self) -> list[str]:
        """The claims' decided support_binary values."""
        return [c.support_binary for c in self.claims if c.support_binary is not None]

    @property
    def undecided_claims(self) -> int:
        """Claims without a decided support_binary (pending or never labelled)."""
        return self.claim_count - len(self.decided_supports)

    @property
    def unsupported(self) -> bool | None:
        """Has a decided unsupported claim (True), all claims decided supported (False), or
        unknown (None)."""
        if any(s != SUPPORTED for s in self.decided_supports):
            return True
        return False if self.undecided_claims == 0 else None

    @property
    def faithfulness(self) -> float | None:
        decided = self.decided_supports
        return sum(s == SUPPORTED for s in decided) / len(decided) if decided else None

    def stage(self, stage_k: int) -> str | None:
        """The diagnosis row of an answer of an answerable case (None otherwise): for a
        failing answer the first stage that broke, else ok / pending / unlabelled."""
        if not self.case.answerable:
            return None
        unsupported = self.unsupported
        if unsupported or self.abstained:
            return self._broken_stage(bool(unsupported), stage_k)
        if unsupported is False:
            return "ok"
        return "pending" if self.labelled else "unlabelled"

    def _broken_stage(self, unsupported: bool, stage_k: int) -> str:
        evidence = self.case.evidence
        if not evidence:
            return "not_in_corpus" if self.case.evidence_lost else "no_evidence"
        in_prompt = evidence.intersection(self.prompt)
        if not in_prompt and not evidence.intersection(self.ranking[:stage_k]):
            return "not_retrieved"
        if not in_prompt:
            return "not_in_prompt"
        return "generation" if unsupported else "false_abstention"


@dataclass
class VariantData:
    pk: int
    name: str
    description: str
    model: str
    settings: dict


@dataclass
class Dataset:
    project: Project
    variants: dict[str, VariantData]
    cases: dict[int, CaseData]
    answers: list[AnswerData]

    @property
    def not_available(self) -> dict[str, str]:
        """Sections that cannot be computed from this project's data, with the reason."""
        out = {}
        if not any(case.grades for case in self.cases.values()):
            out["retrieval"] = "not available: no relevance judgments in this project"
        if not any(case.evidence or case.evidence_lost for case in self.cases.values()):
            out["stages"] = "not available: no evidence passages in this project"
        return out

    def answers_of(self, variant: str) -> list[AnswerData]:
        return [a for a in self.answers if a.variant == variant]


@collector.paused()
def load(project: Project) -> Dataset:
    """Read everything the reports need: eight queries, and three for every
    annotate.gold.imported.PAIR_CHUNK answers (their label pairs)."""
    variants = {
        row["name"]: VariantData(**{**row, "settings": _sorted(row["settings"])})
        for row in Variant.objects.filter(project=project)
        .order_by("name")
        .values("pk", "name", "description", "model", "settings")
    }
    by_pk = {v.pk: v.name for v in variants.values()}
    cases, named = {}, set()
    for row in Case.objects.filter(project=project).values(
        "pk", "case_id", "answerable", "adversarial", "split", "evidence_named"
    ):
        if row.pop("evidence_named"):
            named.add(row["pk"])
        cases[row["pk"]] = CaseData(**row)
    evidence: dict[int, set[str]] = defaultdict(set)
    for case_pk, passage_id in Evidence.objects.filter(case__project=project).values_list(
        "case_id", "passage__passage_id"
    ):
        evidence[case_pk].add(passage_id)

    for case_pk, passage_id, grade in Judgment.objects.filter(case__project=project).values_list(
        "case_id", "passage__passage_id", "grade"
    ):
        cases[case_pk].grades[passage_id] = grade
    for case_pk, ids in evidence.items():
        cases[case_pk].evidence = frozenset(ids)
    for case_pk in named - evidence.keys():
        # The bundle named evidence, but its rows went with a deleted passage.
        cases[case_pk].evidence_lost = True

    answers = {
        row["pk"]: AnswerData(
            pk=row["pk"],
            answer_id=row["answer_id"],
            case=cases[row["case_id"]],
            variant=by_pk[row["variant_id"]],
            sample=row["sample"],
            abstained=row["abstained"],
            elapsed_ms=row["elapsed_ms"],
            request_cost=row["request_cost"],
        )
        for row in Answer.objects.filter(project=project)
        .order_by("answer_id")
        .values(
            "pk",
            "answer_id",
            "case_id",
            "variant_id",
            "sample",
            "abstained",
            "elapsed_ms",
            "request_cost",
        )
    }
    for answer_pk, passage_id, in_prompt in (
        RetrievedPassage.objects.filter(answer__project=project)
        .order_by("answer_id", "rank")
        .values_list("answer_id", "passage__passage_id", "in_prompt")
    ):
        answer = answers[answer_pk]
        answer.ranking.append(passage_id)
        if in_prompt:
            answer.prompt.append(passage_id)
    claim_answer: dict[int, int] = {}
    for claim_pk, answer_pk in Claim.objects.filter(answer__project=project).values_list(
        "pk", "answer_id"
    ):
        claim_answer[claim_pk] = answer_pk
        answers[answer_pk].claim_count += 1
    unresolved: dict[int, set[str]] = defaultdict(set)
    for claim_pk, cited_id in Citation.objects.filter(
        claim__answer__project=project, passage__isnull=True
    ).values_list("claim_id", "cited_id"):
        unresolved[claim_pk].add(cited_id)

    # Each chunk of pairs is folded into its answers' gold before the next is derived.
    for answer_pairs, claim_pairs in gold_in_chunks(project, list(answers)):
        for pair in answer_pairs:
            answer = answers[pair.answer_id]
            answer.labelled = True
            answer.gold = {
                name: pair.gold[name] for name, src in pair.source.items() if src in DECIDED
            }
        for pair in claim_pairs:
            decided = {name: pair.gold[name] for name, src in pair.source.items() if src in DECIDED}
            citations = decided.get("citations")
            if citations is not None:
                # An id that resolves to no passage never supports, whatever a label says.
                citations = {
                    **citations,
                    **dict.fromkeys(unresolved[pair.claim_id], "citation_not_found"),
                }
            answers[claim_answer[pair.claim_id]].claims.append(
                ClaimGold(
                    support=decided.get("support"),
                    support_binary=decided.get("support_binary"),
                    requires_evidence=decided.get("requires_evidence"),
                    citations=citations,
                )
            )
    return Dataset(project=project, variants=variants, cases=cases, answers=list(answers.values()))


def _sorted(settings: Any) -> dict:
    """Settings with sorted keys: PostgreSQL's jsonb reorders keys, SQLite keeps them, and the
    report must read the same on both."""
    return dict(sorted(settings.items())) if isinstance(settings, dict) else {"value": settings}


def check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    ks = tuple(sorted(set(ks)))
    if not ks or any(not isinstance(k, int) or k < 1 for k in ks):
        raise ValueError(f"every k must be a positive integer, got {ks}")
    return ks


def variant_names(data: Dataset, variants: Iterable[str] | None) -> list[str]:
    if variants is None:
        return list(data.variants)
    names = list(variants)
    unknown = sorted(set(names) - set(data.variants))
    if unknown:
        raise ValueError(f"unknown variant(s): {', '.join(unknown)}")
    return names


def in_slice(answers: list[AnswerData], name: str) -> list[AnswerData]:
    return [a for a in answers if a.case.in_slice(name)]


def by_case(answers: Iterable[AnswerData]) -> dict[str, list[AnswerData]]:
    grouped: dict[str, list[AnswerData]] = defaultdict(list)
    for answer in answers:
        grouped[answer.case.case_id].append(answer)
    return grouped


def mean(values: Sequence[float]) -> float:
    return math.fsum(values) / len(values)
