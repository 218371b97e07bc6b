"""The calibration report's corrected shares beyond Rogan–Gladen and classic PPI (SPEC.md
"Calibration, second step"):

- **PPI++** (`corrected.ppi_plus_plus`), the headline: ppi_py's power-tuned estimate over the
  same gold items and target as classic PPI;
- **strata** (`strata_by`): PPI++ within each stratum by slice and by variant, and the
  stratified estimate Σ w_h θ_h, w_h = N_h / N, variance Σ w_h² Var_h;
- **three-way shares** (`corrected.three_way`, three-way projects only): the share of
  contradicted and of insufficient_evidence claims, each the PPI++ mean of its indicator.

evaluation.estimators computes; this module hands it the report's arrays, grouped, and says
why a figure is refused instead of failing the report.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from evaluation.calibration import CalibrationRefused
from evaluation.estimators import (
    StratumSample,
    ppi_plus_plus,
    stratified_ppi_plus_plus,
    three_way_shares,
)
from evaluation.reports.judge_gold import AnswerInfo
from evaluation.reports.strata import SLICE_STRATA, slice_stratum

# One gold item: its answer, gold says unsupported, the judge says unsupported.
GoldItem = tuple[AnswerInfo, bool, bool]
# One target claim: its answer, the judge says unsupported.
TargetItem = tuple[AnswerInfo, bool]


def ppi_plus_plus_block(gold_pos: Any, judge_pos: Any, target_pos: Any) -> dict[str, Any]:
    """`corrected.ppi_plus_plus`: estimate, ci95 (clipped to [0, 1], saying so), lambda, n and
    target_n; or `refused` with the reason."""
    try:
        return ppi_plus_plus(gold=gold_pos, judge_gold=judge_pos, judge_target=target_pos).as_dict()
    except CalibrationRefused as refusal:
        return {"refused": str(refusal), **refusal.details}


def _by_slice(answer: AnswerInfo) -> str:
    return slice_stratum(answerable=answer.answerable, adversarial=answer.adversarial)


def _by_variant(answer: AnswerInfo) -> str:
    return answer.variant


GROUPINGS: dict[str, Callable[[AnswerInfo], str]] = {"slice": _by_slice, "variant": _by_variant}


def _order(by: str, names: set[str]) -> list[str]:
    if by == "slice":
        return [name for name in SLICE_STRATA if name in names]
    return sorted(names)


def strata(by: str, gold: Sequence[GoldItem], target: Sequence[TargetItem]) -> dict[str, Any]:
    """`{"strata": [...], "stratified": {...}}` for one grouping: each stratum that holds a
    gold item or a target claim, with its n, target_n and PPI++ estimate (or why it is
    refused), and the stratified estimate (refused, naming the stratum, when a stratum with
    target claims cannot be estimated)."""
    name_of = GROUPINGS[by]
    gold_of: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    target_of: dict[str, list[bool]] = defaultdict(list)
    for answer, gold_pos, judge_pos in gold:
        gold_of[name_of(answer)].append((gold_pos, judge_pos))
    for answer, judge_pos in target:
        target_of[name_of(answer)].append(judge_pos)
    samples = {}
    for name in _order(by, set(gold_of) | set(target_of)):
        pairs = gold_of.get(name, [])
        samples[name] = StratumSample(
            gold=np.array([g for g, _ in pairs], dtype=bool),
            judge_gold=np.array([j for _, j in pairs], dtype=bool),
            judge_target=np.array(target_of.get(name, []), dtype=bool),
        )
    if not samples:
        refused = "no gold item and no target claim to put in a stratum"
        return {"strata": [], "stratified": {"estimate": None, "ci95": None, "refused": refused}}
    return stratified_ppi_plus_plus(samples).as_dict()


def strata_by(gold: Sequence[GoldItem], target: Sequence[TargetItem]) -> dict[str, Any]:
    """The strata of every grouping (`strata_by` of the stored report): the page's selector
    and `--by` choose one without computing anything."""
    return {by: strata(by, gold, target) for by in GROUPINGS}


def three_way(
    gold: Sequence[tuple[str, str]], target: Sequence[str], *, undefined: str | None
) -> dict[str, Any]:
    """`corrected.three_way` of a three-way project: PPI++ of the share of contradicted and of
    insufficient_evidence claims in the target, each the mean of its indicator, over the gold
    items whose three-way gold is decided (gold, judge). Refused with the reason for a judge
    that answered on the binary scale (`undefined`) or too few items."""
    if undefined:
        return {"refused": undefined}
    try:
        shares = three_way_shares(
            gold=[g for g, _ in gold], judge_gold=[j for _, j in gold], judge_target=list(target)
        )
    except CalibrationRefused as refusal:
        return {"refused": str(refusal), **refusal.details}
    return {label: share.as_dict() for label, share in shares.items()}
