"""What the judge reports read: the project's gold, loaded once and folded chunk by chunk
into what the reports keep of it (load_gold), and a judge run's verdicts (load_verdicts).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from django.db.models import Case, Count, F, TextField, Value, When
from django.db.models.functions import Length

from annotate.gold.imported import gold_in_chunks
from annotate.gold.pairs import ItemPair
from annotate.gold.splits import SPLITS, judge_split
from annotate.models import Answer, Assignment, Claim, Project
from annotate.schema import BINARY
from evaluation.models import JudgeRun, Verdict

SUPPORTED = "supported"


OK, MALFORMED, TIMEOUT = Verdict.Status.OK, Verdict.Status.MALFORMED, Verdict.Status.TIMEOUT


@dataclass(frozen=True, slots=True)
class AnswerInfo:
    pk: int
    answer_id: str
    task_number: int | None
    case_id: str
    split: str
    variant: str
    variant_model: str
    abstained: bool
    length: int
    # The case's flags: the calibration's strata by slice (evaluation.reports.strata).
    answerable: bool = True
    adversarial: bool = False


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    pk: int
    answer: AnswerInfo
    ordinal: int
    text: str


@dataclass(frozen=True, slots=True)
class PairGold:
    """What the judge reports keep of a claim's label pair (or of its imported gold alone):
    its gold support and support_binary (None while pending), where each came from, each
    reviewer's support (the human ceiling; None without a pair) and the gold evidence ids
    (the evidence-overlap bias). A whole pair weighs some 2 KB; kept for every claim of a
    100,000-claim project, the pairs were most of a calibration's memory."""

    support: str | None
    support_binary: str | None
    source: str | None
    a: str | None
    b: str | None
    evidence_ids: tuple[str, ...]
    binary_source: str | None = None

    @classmethod
    def of(cls, pair: ItemPair) -> PairGold:
        return cls(
            support=pair.gold.get("support"),
            support_binary=pair.gold.get("support_binary"),
            source=pair.source.get("support"),
            a=pair.a.get("support"),
            b=pair.b.get("support"),
            evidence_ids=tuple(_gold_evidence_ids(pair)),
            binary_source=pair.source.get("support_binary"),
        )


@dataclass
class ProjectGold:
    """A project's answers and claims with their current gold, loaded once (three queries,
    and three for every annotate.gold.imported.PAIR_CHUNK answers) and shared by every report that
    needs them."""

    project: Project
    answers: dict[int, AnswerInfo]
    claims: dict[int, ClaimInfo]
    claim_pairs: dict[int, PairGold]
    answer_pairs: dict[int, ItemPair]
    reviewers: dict[int, int] = field(default_factory=dict)  # answer pk -> submitted sets
    imported: frozenset[int] = frozenset()  # answers with gold from elsewhere

    def gold_support(self, claim_pk: int) -> str | None:
        """The decided support on the project's scale, or None."""
        pair = self.claim_pairs.get(claim_pk)
        value = pair.support if pair else None
        return value if value in self.project.schema.support_labels else None

    def gold_binary(self, claim_pk: int) -> str | None:
        """The decided support_binary, or None (decided on its own: two reviewers who both
        say unsupported agree on it whatever the subtype)."""
        pair = self.claim_pairs.get(claim_pk)
        value = pair.support_binary if pair else None
        return value if value in BINARY else None

    def claims_in(self, split: str) -> list[ClaimInfo]:
        """Claims of the split, in answer and claim order."""
        chosen = [c for c in self.claims.values() if in_split(c.answer.split, split)]
        return sorted(chosen, key=lambda c: (c.answer.answer_id, c.ordinal))


def in_split(item_split: str, split: str) -> bool:
    return split == "all" or item_split == split


def check_split(split: str) -> str:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    return split


def load_gold(project: Project) -> ProjectGold:
    answers: dict[int, AnswerInfo] = {}
    rows = (
        Answer.objects.filter(project=project)
        .annotate(length=Length("text"))
        .values_list(
            "pk",
            "answer_id",
            "task_number",
            "case__case_id",
            "variant__name",
            "variant__model",
            "abstained",
            "length",
            "case__answerable",
            "case__adversarial",
        )
    )
    splits: dict[str, str] = {}
    for pk, answer_id, task, case_id, variant, model, abstained, length, *flags in rows:
        split = splits.get(case_id) or splits.setdefault(case_id, judge_split(case_id))
        info = (pk, answer_id, task, case_id, split, variant, model or "", abstained, length or 0)
        answers[pk] = AnswerInfo(*info, *flags)  # flags: the case's answerable, adversarial
    claims = {
        pk: ClaimInfo(pk, answers[answer_pk], ordinal, text)
        for pk, answer_pk, ordinal, text in Claim.objects.filter(
            answer__project=project
        ).values_list("pk", "answer_id", "ordinal", "text")
    }
    answer_pairs: dict[int, ItemPair] = {}
    claim_pairs: dict[int, PairGold] = {}
    imported: set[int] = set()
    for answer_chunk, claim_chunk in gold_in_chunks(project, sorted(answers)):
        answer_pairs.update((pair.answer_id, pair) for pair in answer_chunk)
        claim_pairs.update((pair.claim_id, PairGold.of(pair)) for pair in claim_chunk)
        imported.update(pair.answer_id for pair in answer_chunk if pair.imported is not None)
    reviewers = dict(
        Assignment.objects.filter(
            project=project, status=Assignment.Status.SUBMITTED, is_check=False
        )
        .values("answer_id")
        .annotate(n=Count("pk"))
        .order_by()
        .values_list("answer_id", "n")
    )
    return ProjectGold(
        project=project,
        answers=answers,
        claims=claims,
        claim_pairs=claim_pairs,
        answer_pairs=answer_pairs,
        reviewers=reviewers,
        imported=frozenset(imported),
    )


@dataclass(frozen=True, slots=True)
class VerdictRow:
    """A verdict as the reports read it. Slotted, with its status and label shared strings:
    a run holds a verdict for every claim, and as dicts 100,000 of them weighed 90 MB."""

    line: int
    answer_id: int
    claim_id: int | None
    status: str
    problem: str
    label: str
    relevance: int | None
    evidence_ids: list[str]
    quote: str
    quote_found: bool | None
    raw: str  # a malformed or timed-out verdict's only: nothing reads an ok verdict's


@dataclass
class RunVerdicts:
    claims: dict[int, VerdictRow]  # claim pk -> its verdict
    answers: dict[int, VerdictRow]  # answer pk -> its answer-level verdict

    def all(self) -> list[VerdictRow]:
        return sorted([*self.claims.values(), *self.answers.values()], key=lambda v: v.line)


def load_verdicts(run: JudgeRun) -> RunVerdicts:
    claims, answers = {}, {}
    for line, answer_id, claim_id, status, problem, label, *rest in (
        Verdict.objects.filter(run=run)
        .annotate(
            raw_kept=Case(
                When(status=OK, then=Value("")), default=F("raw"), output_field=TextField()
            )
        )
        .values_list(
            "line",
            "answer_id",
            "claim_id",
            "status",
            "problem",
            "label",
            "relevance",
            "evidence_ids",
            "quote",
            "quote_found",
            "raw_kept",
        )
    ):
        row = VerdictRow(
            line, answer_id, claim_id, sys.intern(status), problem, sys.intern(label), *rest
        )
        if claim_id is None:
            answers[answer_id] = row
        else:
            claims[claim_id] = row
    return RunVerdicts(claims=claims, answers=answers)


def _gold_evidence_ids(pair: ItemPair) -> list[str]:
    value = pair.gold.get("evidence")
    if isinstance(value, dict):
        return list(value.get("evidence_ids") or [])
    if isinstance(value, list):
        return list(value)
    return []
