"""Judge-versus-gold calibration, run comparison and few-shot export (reads only).

Everything is computed where it is read, from the current gold (annotate.gold derives it from
the reviewers' labels and the leads' decisions): a run re-scored after an adjudication shows
the change. The statistics are evaluation.calibration's and evaluation.agreement's pure
functions; this module only chooses the items and hands them the right arrays.

Items, for claim support (SPEC.md "Model judges"; evaluation.calibration.calibration_population):
- **gold items** are the claims of the chosen split in answers labelled by two reviewers, or
  with gold imported from elsewhere (annotate.gold.IMPORTED: one label per item, no second
  reviewer), whose support_binary is decided for every claim. Each is *scored* (the judge
  gave an ok label), *malformed*, *timed out* or *missing* (no verdict); n counts the scored
  ones and coverage = n / gold items; `gold_sources` says where their gold came from;
- the **target** is every claim the judge labelled (ok) in an answer no reviewer has labelled
  and no imported gold covers, in any split: the population whose unsupported share the
  corrected estimates are about;
- claims of answers with a pending dispute or a single reviewer belong to neither and are
  counted (`excluded`); while a dispute is pending the estimate is `provisional`.

The binary figures (TPR, TNR, the corrections) read support_binary and are defined for every
judge. The three-way ones (accuracy, kappa, confusion over supported / contradicted /
insufficient evidence) need a three-way project and a judge that answered on that scale; a
binary judge's are undefined and say so, and a binary project's are its binary figures.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db.models import Case, Count, F, TextField, Value, When
from django.db.models.functions import Length
from django.urls import NoReverseMatch, reverse
from scipy.stats import binomtest

from annotate.gold.imported import gold_for_project, gold_in_chunks
from annotate.gold.pairs import IMPORTED, ItemPair
from annotate.gold.splits import DEFAULT_SPLIT, SPLITS, judge_split
from annotate.models import Answer, Assignment, Citation, Claim, Project, RetrievedPassage
from annotate.schema import BINARY, UNSUPPORTED, support_binary
from evaluation.agreement import (
    RELEVANCE,
    SMALL_SAMPLE_N,
    SUPPORT,
    evidence_overlap,
    field_agreement,
)
from evaluation.calibration import (
    PopulationClaim,
    binary_rates,
    calibration_population,
    corrected_estimates,
    judge_report,
    unsupported_indicator,
)
from evaluation.judges import same_model
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
        )
    )
    splits: dict[str, str] = {}
    for pk, answer_id, task, case_id, variant, model, abstained, length in rows:
        split = splits.get(case_id) or splits.setdefault(case_id, judge_split(case_id))
        answers[pk] = AnswerInfo(
            pk, answer_id, task, case_id, split, variant, model or "", abstained, length or 0
        )
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
        Assignment.objects.filter(project=project, status=Assignment.Status.SUBMITTED)
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


def item_url(
    project: Project, run: JudgeRun, answer_pk: int, ordinal: int | None = None
) -> str | None:
    """The page showing the item with gold and verdict; None where the judge pages are not
    mounted (the numbers must not depend on a URL configuration)."""
    return _answer_urls(project.slug, run.pk)(answer_pk, ordinal)


_SENTINEL = 987654321


def _answer_urls(slug: str, run_pk: int):
    """item_url for one run: the URL reversed once, the answer put in by hand -- a report
    links every disagreement and failure, 100,000 of them at 10,000 answers, and reversing
    each took seconds."""
    try:
        template = reverse(
            "judge_answer", kwargs={"slug": slug, "run_pk": run_pk, "answer_pk": _SENTINEL}
        )
    except NoReverseMatch:
        return lambda answer_pk, ordinal=None: None
    head, tail = template.rsplit(str(_SENTINEL), 1)  # the answer is the URL's last number

    def url(answer_pk: int, ordinal: int | None = None) -> str:
        found = f"{head}{int(answer_pk)}{tail}"
        return f"{found}#claim-{ordinal}" if ordinal is not None else found

    return url


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


# --- Calibration -----------------------------------------------------------------------------


@dataclass(slots=True)
class Scored:
    """A gold item the judge labelled: gold and judge on the binary scale always, on the
    three-way scale where both have one (the judge's label as given)."""

    claim: ClaimInfo
    pair: PairGold
    verdict: VerdictRow
    gold_binary: str
    gold_support: str | None  # the decided support on the project's scale, or None

    @property
    def judge(self) -> str:
        return self.verdict.label

    @property
    def judge_binary(self) -> str:
        return support_binary(self.verdict.label)


def population(gold: ProjectGold, verdicts: RunVerdicts):
    """evaluation.calibration.calibration_population over every claim of the project."""
    return calibration_population(
        PopulationClaim(
            claim=claim.pk,
            answer=claim.answer.pk,
            reviewers=gold.reviewers.get(claim.answer.pk, 0),
            decided=gold.gold_binary(claim.pk) is not None,
            judged=claim.pk in verdicts.claims and verdicts.claims[claim.pk].status == OK,
            imported=claim.answer.pk in gold.imported,
        )
        for claim in gold.claims.values()
    )


def _score_items(
    gold: ProjectGold, verdicts: RunVerdicts, split: str, gold_pks=None
) -> tuple[list[Scored], dict[str, int]]:
    """The split's gold items the judge labelled (ok), and how the others were lost."""
    if gold_pks is None:
        gold_pks = set(population(gold, verdicts).gold)
    scored: list[Scored] = []
    lost = {"malformed": 0, "timeouts": 0, "missing": 0, "gold_items": 0}
    for claim in gold.claims_in(split):
        if claim.pk not in gold_pks:
            continue
        lost["gold_items"] += 1
        verdict = verdicts.claims.get(claim.pk)
        if verdict is None:
            lost["missing"] += 1
        elif verdict.status == MALFORMED:
            lost["malformed"] += 1
        elif verdict.status == TIMEOUT:
            lost["timeouts"] += 1
        else:
            scored.append(
                Scored(
                    claim,
                    gold.claim_pairs[claim.pk],
                    verdict,
                    gold.gold_binary(claim.pk),
                    gold.gold_support(claim.pk),
                )
            )
    return scored, lost


def judge_scale(project: Project, scored_labels: Iterable[str]) -> tuple[str, str | None]:
    """The scale a judge is scored on, and why three-way figures are undefined if they are:
    three-way in a three-way project whose judge answered on that scale, else binary."""
    if project.schema.binary:
        return "binary", None
    if any(label == UNSUPPORTED for label in scored_labels):
        return "binary", (
            "a binary judge: it answered 'unsupported', so its three-way accuracy and kappa "
            "are not defined (its binary figures are)"
        )
    return "three_way", None


def _on_scale(scored: list[Scored], scale: str) -> tuple[list[str], list[str]]:
    """(gold, judge) labels of the scored items on a scale; on the three-way scale only the
    items whose three-way gold is decided (both reviewers said unsupported but differ in
    subtype: binary gold, three-way still pending)."""
    if scale == "binary":
        return [s.gold_binary for s in scored], [s.judge_binary for s in scored]
    pairs = [(s.gold_support, s.judge) for s in scored if s.gold_support in SUPPORT]
    return [g for g, _ in pairs], [j for _, j in pairs]


def calibration_report(
    *,
    run: JudgeRun,
    split: str = DEFAULT_SPLIT,
    gold: ProjectGold | None = None,
    n_boot: int = 2000,
    seed: int = 0,
) -> dict[str, Any]:
    """The judge-versus-gold report of `calibration --json` (SPEC.md keys, and more)."""
    check_split(split)
    project = run.project
    gold = gold or load_gold(project)
    verdicts = load_verdicts(run)
    chosen = population(gold, verdicts)
    scored, lost = _score_items(gold, verdicts, split, set(chosen.gold))
    judged_labels = [v.label for v in verdicts.claims.values() if v.status == OK]
    scale, undefined = judge_scale(project, judged_labels)

    binary_gold = [s.gold_binary for s in scored]
    binary_judge = [s.judge_binary for s in scored]
    binary = judge_report(binary_gold, binary_judge, BINARY)
    rates = binary_rates(binary_gold, binary_judge)
    if undefined:
        # A binary judge in a three-way project: no three-way figure at all, never a number.
        report = None
    elif scale == "binary":
        report = binary
    else:
        report = judge_report(*_on_scale(scored, "three_way"), SUPPORT)
    human = _human_agreement(gold, split, n_boot=min(n_boot, 1000), seed=seed)
    sources = _gold_sources(gold, split, chosen.gold)
    # Beside the human-human figure: the gold items it cannot cover (no second reviewer).
    human["no_second_reviewer"] = sources[IMPORTED]
    # The judge's kappa gets the interval the human ceiling has: a bootstrap over answers.
    kappa_ci = _judge_kappa_ci(scored, scale, n_boot=min(n_boot, 1000), seed=seed)
    binary_kappa_ci = _judge_kappa_ci(scored, "binary", n_boot=min(n_boot, 1000), seed=seed)

    target = [verdicts.claims[pk].label for pk in sorted(chosen.target)]
    corrected = corrected_estimates(
        unsupported_indicator(binary_gold),
        unsupported_indicator(binary_judge),
        unsupported_indicator(target),
        n_boot=n_boot,
        seed=seed,
    )
    corrected.update(
        excluded=dict(chosen.excluded),
        disputes_pending=chosen.disputes,
        provisional=chosen.provisional,
        provisional_reason=chosen.provisional_reason,
    )
    n = rates.n
    urls = _answer_urls(project.slug, run.pk)  # reversed once for every item's link
    # Three-way items compare three-way labels; an item whose gold subtype is still pending
    # (both reviewers said unsupported, differently) compares on the binary scale, since it
    # counts in TPR and the corrections there: a lead must find the items behind those.
    disagreement_labels = [
        (s.gold_binary, s.judge_binary)
        if scale == "binary" or s.gold_support is None
        else (s.gold_support, s.judge)
        for s in scored
    ]
    return {
        "project": project.slug,
        "judge": run.name,
        "model": run.model,
        "model_version": run.model_version,
        "prompt_sha256": run.prompt_sha256,
        "split": split,
        "scale": scale,
        "gold_items": lost["gold_items"],
        "gold_sources": sources,
        "n": n,
        "malformed": lost["malformed"],
        "timeouts": lost["timeouts"],
        "missing": lost["missing"],
        "coverage": _rate(n, lost["gold_items"]),
        "small_sample": n < SMALL_SAMPLE_N,
        "accuracy": report.accuracy if report else None,
        "kappa": report.kappa if report else None,
        "kappa_undefined_reason": undefined or (report.kappa_undefined_reason if report else None),
        "kappa_ci95": kappa_ci if report else None,
        "scale_n": report.n if report else 0,
        "human_kappa": human["kappa"],
        "human_agreement": human,
        "tpr": rates.tpr,
        "tnr": rates.tnr,
        "rates": rates.as_dict(),
        "confusion": (
            {"labels": list(report.labels), "matrix": [list(row) for row in report.matrix]}
            if report
            else None
        ),
        "per_label": report.as_dict()["per_label"] if report else [],
        "binary": {
            "n": binary.n,
            "accuracy": binary.accuracy,
            "kappa": binary.kappa,
            "kappa_undefined_reason": binary.kappa_undefined_reason,
            "kappa_ci95": binary_kappa_ci,
            "confusion": {
                "labels": list(binary.labels),
                "matrix": [list(row) for row in binary.matrix],
            },
        },
        "disagreements": [
            _item(project, run, s.claim, gold=g, judge=j, pair=s.pair, verdict=s.verdict, urls=urls)
            for s, (g, j) in zip(scored, disagreement_labels, strict=True)
            if g is not None and g != j
        ],
        "corrected": corrected,
        "bias": _bias(gold, verdicts, scored, evidence=project.schema.claim("evidence")),
        # A field the project does not label has no figure at all (SPEC "Label schema").
        **(
            {"relevance": _relevance(gold, verdicts, split)}
            if project.schema.answer("relevance")
            else {}
        ),
        "run": _run_summary(run, gold, verdicts),
        "problems": _problems(project, run, gold, verdicts),
    }


def _item(project, run, claim: ClaimInfo, *, pair=None, verdict=None, urls=None, **labels) -> dict:
    row = {
        "answer_id": claim.answer.answer_id,
        "claim_index": claim.ordinal,
        "case_id": claim.answer.case_id,
        "task_number": claim.answer.task_number,
        "claim": claim.text,
        **labels,
    }
    if pair is not None:
        row["gold_source"] = pair.source
    if verdict is not None:
        row["quote"] = verdict.quote
        row["quote_found"] = verdict.quote_found
    urls = urls or _answer_urls(project.slug, run.pk)
    row["url"] = urls(claim.answer.pk, claim.ordinal)
    return row


GOLD_SOURCES = ("agreed", "adjudicated", IMPORTED)


def _gold_sources(gold: ProjectGold, split: str, gold_pks: Iterable[int]) -> dict[str, int]:
    """The split's gold items by where their support_binary came from: two reviewers who
    agreed, a lead who decided, or gold imported from elsewhere (no second reviewer; an
    item reviewers also labelled counts by their gold, which stands over the imported)."""
    counts = dict.fromkeys(GOLD_SOURCES, 0)
    for pk in gold_pks:
        if in_split(gold.claims[pk].answer.split, split):
            source = gold.claim_pairs[pk].binary_source
            if source in counts:
                counts[source] += 1
    return counts


def _human_agreement(gold: ProjectGold, split: str, *, n_boot: int, seed: int) -> dict:
    """Reviewer A versus reviewer B on support (the project's scale) over the split's
    doubly-labelled claims: the ceiling a judge can be expected to reach against gold. The
    same on support_binary under `binary`, the ceiling of a binary judge."""
    labels = gold.project.schema.support_labels
    items = [
        (gold.claims[pk], p)
        for pk, p in gold.claim_pairs.items()
        if in_split(gold.claims[pk].answer.split, split) and p.a in labels and p.b in labels
    ]
    items.sort(key=lambda item: (item[0].answer.pk, item[0].ordinal))
    pairs = [p for _, p in items]
    groups = [claim.answer.pk for claim, _ in items]
    result = field_agreement(
        [p.a for p in pairs],
        [p.b for p in pairs],
        labels=labels,
        groups=groups,
        n_boot=n_boot,
        seed=seed,
    )
    binary = field_agreement(
        [support_binary(p.a) for p in pairs],
        [support_binary(p.b) for p in pairs],
        labels=BINARY,
        groups=groups,
        n_boot=n_boot,
        seed=seed,
    )
    return {
        **_agreement_dict(result),
        "binary": _agreement_dict(binary),
    }


def _agreement_dict(result) -> dict:
    return {
        "n": result.n,
        "raw_agreement": result.raw_agreement,
        "kappa": result.kappa,
        "ci95": list(result.ci95) if result.ci95 else None,
        "kappa_undefined_reason": result.kappa_undefined_reason,
        "confusion": {
            "labels": list(result.labels),
            "matrix": [list(row) for row in result.matrix],
        },
    }


def _judge_kappa_ci(
    scored: list[Scored], scale: str, *, n_boot: int, seed: int
) -> list[float] | None:
    """The 95% interval of the judge's kappa against gold on a scale: a percentile bootstrap
    over answers (a claim's verdicts are not independent of its answer's), as the reviewers'
    kappa has; None where kappa is undefined."""
    if scale == "binary":
        items = [(s.gold_binary, s.judge_binary, s.claim.answer.pk) for s in scored]
        labels = BINARY
    else:
        items = [(s.gold_support, s.judge, s.claim.answer.pk) for s in scored]
        items = [item for item in items if item[0] in SUPPORT and item[1] in SUPPORT]
        labels = SUPPORT
    if not items:
        return None
    gold_labels, judge_labels, answers = zip(*items, strict=True)
    result = field_agreement(
        gold_labels, judge_labels, labels=labels, groups=answers, n_boot=n_boot, seed=seed
    )
    return list(result.ci95) if result.ci95 else None


def _pass_rows(
    keys: Iterable[Hashable],
    judged: list[tuple[Hashable, str]],
    on_gold: list[tuple[Hashable, str, str]],
    name: Callable[[Hashable], str],
) -> list[dict[str, Any]]:
    """Judge pass rate (share `supported`) per group, beside the gold pass rate of the same
    group: a gap that differs between groups is the bias, not the pass rate alone."""
    n, passed = defaultdict(int), defaultdict(int)
    for key, label in judged:
        n[key] += 1
        passed[key] += label == SUPPORTED
    gn, gold_passed, judge_passed = defaultdict(int), defaultdict(int), defaultdict(int)
    for key, gold_label, judge_label in on_gold:
        gn[key] += 1
        gold_passed[key] += gold_label == SUPPORTED
        judge_passed[key] += judge_label == SUPPORTED
    return [
        {
            "group": name(key),
            "n": n[key],
            "pass_rate": _rate(passed[key], n[key]),
            "gold_n": gn[key],
            "gold_pass_rate": _rate(gold_passed[key], gn[key]),
            "judge_pass_rate_on_gold": _rate(judge_passed[key], gn[key]),
        }
        for key in keys
    ]


def _bias(
    gold: ProjectGold, verdicts: RunVerdicts, scored: list[Scored], *, evidence: bool
) -> dict[str, Any]:
    judged = [(gold.claims[pk], v.label) for pk, v in verdicts.claims.items() if v.status == OK]
    # Pass = supported, on gold and for the judge alike: the binary reading works for judges
    # and projects of either scale.
    judged = [(claim, support_binary(label)) for claim, label in judged]
    on_gold = [(s.claim, s.gold_binary, s.judge_binary) for s in scored]

    lengths = sorted({c.answer.pk: c.answer.length for c, _ in judged}.values())
    cuts = np.quantile(lengths, [1 / 3, 2 / 3]).tolist() if lengths else [0.0, 0.0]

    def tercile(claim: ClaimInfo) -> int:
        return 0 if claim.answer.length <= cuts[0] else 1 if claim.answer.length <= cuts[1] else 2

    tercile_names = [
        f"short (≤ {cuts[0]:.0f} characters)",
        f"medium ({cuts[0]:.0f}–{cuts[1]:.0f})",
        f"long (> {cuts[1]:.0f})",
    ]

    def by(key: Callable[[ClaimInfo], Hashable], keys, name) -> list[dict[str, Any]]:
        return _pass_rows(
            keys,
            [(key(c), label) for c, label in judged],
            [(key(c), g, j) for c, g, j in on_gold],
            name,
        )

    variants = sorted(
        {c.answer.variant for c, _ in judged} | {c.answer.variant for c, *_ in on_gold}
    )
    bias = {
        "answer_length": by(tercile, range(3), lambda k: tercile_names[k]),
        "variant": by(lambda c: c.answer.variant, variants, str),
        "abstention": by(
            lambda c: c.answer.abstained,
            (False, True),
            lambda k: "abstained" if k else "answered",
        ),
    }
    if evidence:  # without evidence labels there is no gold to overlap with
        bias["evidence_overlap"] = evidence_overlap(
            [s.verdict.evidence_ids or [] for s in scored],
            [list(s.pair.evidence_ids) for s in scored],
        ).as_dict()
    return bias


def _gold_evidence_ids(pair: ItemPair) -> list[str]:
    value = pair.gold.get("evidence")
    if isinstance(value, dict):
        return list(value.get("evidence_ids") or [])
    if isinstance(value, list):
        return list(value)
    return []


def _relevance(gold: ProjectGold, verdicts: RunVerdicts, split: str) -> dict[str, Any]:
    """The judge's answer-level relevance against gold relevance (linear-weighted kappa)."""
    g, j = [], []
    lost = {"malformed": 0, "timeouts": 0, "missing": 0}
    for answer_pk, pair in sorted(gold.answer_pairs.items()):
        if not in_split(gold.answers[answer_pk].split, split):
            continue
        if pair.gold.get("relevance") not in RELEVANCE:
            continue
        verdict = verdicts.answers.get(answer_pk)
        if verdict is None:
            lost["missing"] += 1
        elif verdict.status == MALFORMED:
            lost["malformed"] += 1
        elif verdict.status == TIMEOUT:
            lost["timeouts"] += 1
        else:
            g.append(pair.gold["relevance"])
            j.append(verdict.relevance)
    report = judge_report(g, j, RELEVANCE, weights="linear")
    return {
        "n": report.n,
        **lost,
        "accuracy": report.accuracy,
        "kappa": report.kappa,
        "weighting": "linear",
        "confusion": {
            "labels": list(report.labels),
            "matrix": [list(row) for row in report.matrix],
        },
    }


def _run_summary(run: JudgeRun, gold: ProjectGold, verdicts: RunVerdicts) -> dict[str, Any]:
    rows = verdicts.all()
    self_judged = sum(same_model(run.model, gold.answers[v.answer_id].variant_model) for v in rows)
    return {
        "name": run.name,
        "model": run.model,
        "model_version": run.model_version,
        "prompt_sha256": run.prompt_sha256,
        "settings": run.settings,
        "imported_at": run.imported_at.isoformat(),
        "verdicts": len(rows),
        "claim_verdicts": len(verdicts.claims),
        "answer_verdicts": len(verdicts.answers),
        "ok": sum(v.status == OK for v in rows),
        "malformed": sum(v.status == MALFORMED for v in rows),
        "timeouts": sum(v.status == TIMEOUT for v in rows),
        "quotes_not_found": sum(v.quote_found is False for v in rows),
        "self_judged": self_judged,
        "self_judged_models": sorted(
            {
                a.variant_model
                for a in gold.answers.values()
                if same_model(run.model, a.variant_model)
            }
        ),
    }


def _problems(project, run, gold: ProjectGold, verdicts: RunVerdicts) -> dict[str, list]:
    """Every verdict of the run that was not scored, or whose quote was not found."""
    out: dict[str, list] = {"malformed": [], "timeouts": [], "quotes_not_found": []}
    urls = _answer_urls(project.slug, run.pk)
    for v in verdicts.all():
        answer = gold.answers[v.answer_id]
        claim = gold.claims.get(v.claim_id) if v.claim_id else None
        row = {
            "line": v.line,
            "answer_id": answer.answer_id,
            "case_id": answer.case_id,
            "task_number": answer.task_number,
            "claim_index": claim.ordinal if claim else None,
            "url": urls(answer.pk, claim.ordinal if claim else None),
        }
        if v.status == MALFORMED:
            out["malformed"].append({**row, "problem": v.problem, "raw": v.raw})
        elif v.status == TIMEOUT:
            out["timeouts"].append({**row, "raw": v.raw})
        if v.quote_found is False:
            out["quotes_not_found"].append(
                {**row, "quote": v.quote, "evidence_ids": v.evidence_ids}
            )
    return out


# --- Comparing two runs ----------------------------------------------------------------------


def compare_runs(
    *,
    run_a: JudgeRun,
    run_b: JudgeRun,
    split: str = DEFAULT_SPLIT,
    gold: ProjectGold | None = None,
) -> dict[str, Any]:
    """Two runs of one project on the same gold items: the split's gold claims both labelled.

    Besides each run's accuracy and kappa on those items, the discordant items decide which is
    better: an exact McNemar test on the claims exactly one of them gets right. Both are scored
    on the three-way scale when the project and both judges are three-way (on the items whose
    three-way gold is decided), else on support_binary.
    """
    check_split(split)
    if run_a.project_id != run_b.project_id:
        raise ValueError("both runs must belong to the same project")
    project = run_a.project
    gold = gold or load_gold(project)
    va, vb = load_verdicts(run_a), load_verdicts(run_b)
    scored_a, _ = _score_items(gold, va, split)
    scored_b = {s.claim.pk: s for s in _score_items(gold, vb, split)[0]}
    labels = [v.label for v in (*va.claims.values(), *vb.claims.values()) if v.status == OK]
    scale, _ = judge_scale(project, labels)
    both = [(s, scored_b[s.claim.pk]) for s in scored_a if s.claim.pk in scored_b]
    if scale == "three_way":
        both = [(a, b) for a, b in both if a.gold_support in SUPPORT]
        g = [a.gold_support for a, _ in both]
        judged_a, judged_b = [a.judge for a, _ in both], [b.judge for _, b in both]
    else:
        g = [a.gold_binary for a, _ in both]
        judged_a, judged_b = [a.judge_binary for a, _ in both], [b.judge_binary for _, b in both]
    vocabulary = SUPPORT if scale == "three_way" else BINARY
    report_a = judge_report(g, judged_a, vocabulary)
    report_b = judge_report(g, judged_b, vocabulary)
    right_a = np.array([j == x for j, x in zip(judged_a, g, strict=True)], dtype=bool)
    right_b = np.array([j == x for j, x in zip(judged_b, g, strict=True)], dtype=bool)
    only_a, only_b = int((right_a & ~right_b).sum()), int((~right_a & right_b).sum())
    discordant = only_a + only_b
    return {
        "project": project.slug,
        "split": split,
        "scale": scale,
        "n": len(both),
        "a": _compare_side(run_a, report_a, len(scored_a)),
        "b": _compare_side(run_b, report_b, len(scored_b)),
        "both_right": int((right_a & right_b).sum()),
        "only_a_right": only_a,
        "only_b_right": only_b,
        "both_wrong": int((~right_a & ~right_b).sum()),
        "mcnemar_p": binomtest(only_a, discordant, 0.5).pvalue if discordant else None,
        "differences": [
            _item(project, run_a, a.claim, gold=gold_label, a=label_a, b=label_b, pair=a.pair)
            for (a, _), gold_label, label_a, label_b in zip(
                both, g, judged_a, judged_b, strict=True
            )
            if label_a != label_b
        ],
    }


def _compare_side(run: JudgeRun, report, scored_in_split: int) -> dict[str, Any]:
    return {
        "judge": run.name,
        "pk": run.pk,
        "model": run.model,
        "model_version": run.model_version,
        "scored_in_split": scored_in_split,
        "accuracy": report.accuracy,
        "kappa": report.kappa,
        "confusion": {
            "labels": list(report.labels),
            "matrix": [list(row) for row in report.matrix],
        },
    }


# --- Few-shot export -------------------------------------------------------------------------


def few_shot_examples(project: Project, *, gold: ProjectGold | None = None) -> list[dict]:
    """Worked examples for writing a judge prompt: the gold claims of `judge_dev` cases only,
    never `judge_test` (those measure the judge, so it must not have seen them). Each carries
    what the reviewers saw: the question, the answer, and its passages (retrieved, then cited)."""
    gold = gold or load_gold(project)
    chosen = [
        c
        for c in gold.claims_in("judge_dev")
        if c.answer.split == "judge_dev" and gold.gold_support(c.pk) is not None
    ]
    answer_pks = sorted({c.answer.pk for c in chosen})
    answers = {
        a.pk: a
        for a in Answer.objects.filter(pk__in=answer_pks)
        .select_related("case")
        .only("pk", "text", "case__question")
    }
    passages: dict[int, dict[str, str]] = defaultdict(dict)
    for r in (
        RetrievedPassage.objects.filter(answer_id__in=answer_pks)
        .order_by("answer_id", "rank")
        .values_list("answer_id", "passage__passage_id", "passage__text")
    ):
        passages[r[0]].setdefault(r[1], r[2])
    for r in (
        Citation.objects.filter(claim__answer_id__in=answer_pks, passage__isnull=False)
        .order_by("claim__answer_id", "claim__ordinal", "ordinal")
        .values_list("claim__answer_id", "passage__passage_id", "passage__text")
    ):
        passages[r[0]].setdefault(r[1], r[2])

    # The quote and the rationale are in the whole pairs only (ProjectGold keeps less).
    chosen_pks = {claim.pk for claim in chosen}
    quotes, rationales = {}, {}
    for _, claim_pairs in gold_in_chunks(project, answer_pks):
        for pair in claim_pairs:
            if pair.claim_id in chosen_pks:
                quotes[pair.claim_id], rationales[pair.claim_id] = _quote_and_rationale(pair)
    examples = []
    for claim in chosen:
        pair = gold.claim_pairs[claim.pk]
        answer = answers[claim.answer.pk]
        examples.append(
            {
                "answer_id": claim.answer.answer_id,
                "claim_index": claim.ordinal,
                "split": "judge_dev",
                "question": answer.case.question,
                "answer": answer.text,
                "passages": [
                    {"passage_id": pid, "text": text}
                    for pid, text in passages[claim.answer.pk].items()
                ],
                "claim": claim.text,
                "label": pair.support,
                "label_binary": support_binary(pair.support),
                "evidence_ids": list(pair.evidence_ids),
                "quote": quotes[claim.pk] or "",
                "rationale": rationales[claim.pk],
                "gold_source": pair.source,
            }
        )
    return examples


def _quote_and_rationale(pair: ItemPair) -> tuple[str | None, str]:
    """A few-shot example's quote (the gold evidence's) and rationale: the lead's when the
    support was adjudicated, else the reviewers' notes (the imported label's note, for gold
    imported alone)."""
    evidence = pair.gold.get("evidence")
    quote = evidence.get("evidence_quote") if isinstance(evidence, dict) else ""
    if pair.source.get("support") == "adjudicated":
        return quote, pair.rationale.get("support", "")
    if not pair.paired:
        return quote, (pair.imported.labels.get("note") or "") if pair.imported else ""
    notes = [pair.a.get("note") or "", pair.b.get("note") or ""]
    return quote, " / ".join(dict.fromkeys(n for n in notes if n))


# --- One answer, as the judge and the gold see it --------------------------------------------


@dataclass
class ClaimRow:
    claim: Claim
    pair: ItemPair | None
    verdict: Verdict | None

    @property
    def gold(self) -> str | None:
        """The decided support; while only support_binary is decided (both reviewers said
        unsupported, in different words), that."""
        if not self.pair:
            return None
        value = self.pair.gold.get("support")
        if support_binary(value) is not None:
            return value
        binary = self.pair.gold.get("support_binary")
        return binary if binary in BINARY else None

    @property
    def agrees(self) -> bool | None:
        """Whether the verdict matches gold, on the finer scale both of them have."""
        if self.gold is None or self.verdict is None or self.verdict.status != OK:
            return None
        if UNSUPPORTED in (self.gold, self.verdict.label):
            return support_binary(self.verdict.label) == support_binary(self.gold)
        return self.verdict.label == self.gold


@dataclass
class AnswerDetail:
    answer: Answer
    split: str
    claims: list[ClaimRow]
    answer_pair: ItemPair | None
    answer_verdict: Verdict | None
    passages: list[tuple[int | None, Any]]  # (rank or None when only cited, passage)


def answer_detail(*, run: JudgeRun, answer: Answer) -> AnswerDetail:
    """An answer's claims with gold and this run's verdicts, and the passages shown with it.
    `answer` must already be scoped to the run's project by the caller."""
    answer_pairs, claim_pairs = gold_for_project(run.project, answer_ids=[answer.pk])
    by_claim = {p.claim_id: p for p in claim_pairs}
    verdicts = list(Verdict.objects.filter(run=run, answer=answer))
    claim_verdicts = {v.claim_id: v for v in verdicts if v.claim_id is not None}
    claims = list(answer.claims.prefetch_related("citations__passage"))
    passages: list[tuple[int | None, Any]] = []
    seen: set[str] = set()
    for r in answer.retrieved.select_related("passage"):
        passages.append((r.rank, r.passage))
        seen.add(r.passage.passage_id)
    for claim in claims:
        for citation in claim.citations.all():
            if citation.passage is not None and citation.passage.passage_id not in seen:
                passages.append((None, citation.passage))
                seen.add(citation.passage.passage_id)
    return AnswerDetail(
        answer=answer,
        split=judge_split(answer.case.case_id),
        claims=[ClaimRow(c, by_claim.get(c.pk), claim_verdicts.get(c.pk)) for c in claims],
        answer_pair=answer_pairs[0] if answer_pairs else None,
        answer_verdict=next((v for v in verdicts if v.claim_id is None), None),
        passages=passages,
    )
