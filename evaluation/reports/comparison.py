"""Two variants compared case by case (compare): cases paired by ``case_id``, a case's
value the mean over its samples, each metric's transitions (fixed, broken, unchanged) under
the pass rules of PASS_RULES, the paired bootstrap difference, and reciprocal rank fusion.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from annotate.models import Project
from evaluation.metrics import (
    mean_over_eligible,
    paired_bootstrap_diff,
    paired_transitions,
    reciprocal_rank_fusion,
)
from evaluation.reports.dataset import (
    AnswerData,
    Dataset,
    by_case,
    check_ks,
    load,
    mean,
    variant_names,
)
from evaluation.reports.evaluation import RETRIEVAL_METRICS, per_case_retrieval

DEFAULT_COMPARE_K = 5  # the page's comparison of its first two variants, unless asked


COMPARE_METRICS = ("recall", "reciprocal_rank", "ndcg", "faithfulness", "unsupported", "abstention")


PASS_RULES = {
    "recall": "pass: every relevant passage in the top k (recall@k = 1); higher is better",
    "reciprocal_rank": "pass: a relevant passage at rank 1 (RR@k = 1); higher is better",
    "ndcg": "pass: ideal order within the top k (nDCG@k = 1); higher is better",
    "faithfulness": "pass: every decided claim supported; higher is better",
    "unsupported": "pass: no unsupported claim; value = unsupported share, lower is better",
    "abstention": "pass: abstained exactly when the case is unanswerable; higher is better",
}


def compare(
    project: Project,
    a: str,
    b: str,
    *,
    k: int = 5,
    seed: int = 0,
    n_boot: int = 2000,
    data: Dataset | None = None,
) -> dict:
    """Variant ``a`` (before) against ``b`` (after), cases paired by case_id: transitions and
    a paired bootstrap difference per metric, latency added, and the retrieval of both
    rankings fused by reciprocal rank fusion as a what-if row."""
    check_ks([k])
    data = data or load(project)
    variant_names(data, [a, b])
    answers_a, answers_b = data.answers_of(a), data.answers_of(b)
    values_a, values_b = _case_values(answers_a, k), _case_values(answers_b, k)
    metrics = {}
    for metric in COMPARE_METRICS:
        before, after = values_a[metric], values_b[metric]
        passes = _pass_rule(metric)
        transitions = paired_transitions(
            {c: passes(v) for c, v in before.items()}, {c: passes(v) for c, v in after.items()}
        )
        diff = paired_bootstrap_diff(before, after, n_boot=n_boot, seed=seed)
        paired = sorted(before.keys() & after.keys())
        metrics[metric] = {
            "pass_rule": PASS_RULES[metric],
            "transitions": {
                "fixed": list(transitions.fixed),
                "broken": list(transitions.broken),
                "unchanged_pass": list(transitions.unchanged_pass),
                "unchanged_fail": list(transitions.unchanged_fail),
                "only_a": list(transitions.only_before),
                "only_b": list(transitions.only_after),
            },
            "counts": {
                "paired": transitions.paired,
                "fixed": len(transitions.fixed),
                "broken": len(transitions.broken),
                "unchanged_pass": len(transitions.unchanged_pass),
                "unchanged_fail": len(transitions.unchanged_fail),
                "only_a": len(transitions.only_before),
                "only_b": len(transitions.only_after),
            },
            "mean_a": mean([before[c] for c in paired]) if paired else None,
            "mean_b": mean([after[c] for c in paired]) if paired else None,
            "diff": _diff(diff),
        }
    latency = paired_bootstrap_diff(
        values_a["latency"], values_b["latency"], n_boot=n_boot, seed=seed
    )
    settings_a, settings_b = data.variants[a].settings, data.variants[b].settings
    return {
        "a": a,
        "b": b,
        "k": k,
        "seed": seed,
        "settings": {"a": settings_a, "b": settings_b},
        "settings_changed": sorted(
            key
            for key in settings_a.keys() | settings_b.keys()
            if settings_a.get(key) != settings_b.get(key)
        ),
        "metrics": metrics,
        "latency_added_ms": _diff(latency),
        "fusion": _fusion(answers_a, answers_b, a, b, k),
    }


def _pass_rule(metric: str) -> Callable[[float], bool]:
    if metric == "unsupported":
        return lambda value: value == 0
    return lambda value: math.isclose(value, 1.0)


def _case_values(answers: list[AnswerData], k: int) -> dict[str, dict[str, float]]:
    """Per case, the mean over samples of each compared metric (cases where a metric is
    undefined are left out of that metric)."""
    retrieval, _, _ = per_case_retrieval(answers, k)
    grouped = by_case(answers)

    def mean_of(get: Callable[[AnswerData], float | None]) -> dict[str, float]:
        out = {}
        for case_id, group in grouped.items():
            values = [v for v in map(get, group) if v is not None]
            if values:
                out[case_id] = mean(values)
        return out

    return {
        "recall": {c: s["recall"] for c, s in retrieval.items()},
        "reciprocal_rank": {c: s["mrr"] for c, s in retrieval.items()},
        "ndcg": {c: s["ndcg"] for c, s in retrieval.items()},
        "faithfulness": mean_of(lambda a: a.faithfulness),
        "unsupported": mean_of(lambda a: None if a.unsupported is None else float(a.unsupported)),
        "abstention": mean_of(lambda a: float(a.abstained != a.case.answerable)),
        "latency": mean_of(lambda a: a.elapsed_ms),
    }


def _diff(diff) -> dict:
    return {
        "n": diff.n,
        "unpaired": diff.unpaired,
        "mean_diff": diff.mean_diff,
        "ci95": list(diff.ci95) if diff.ci95 is not None else None,
        "n_boot": diff.n_boot,
        "seed": diff.seed,
    }


def _fusion(answers_a, answers_b, a: str, b: str, k: int) -> dict:
    """Retrieval at k (full ranking) of a, of b, and of their rankings fused per case and per
    sample number both have; cases where only one variant recorded a ranking are left out of
    the fused row."""
    fused: list[AnswerData] = []
    by_a = {(x.case.case_id, x.sample): x for x in answers_a if x.ranking}
    for other in answers_b:
        mine = by_a.get((other.case.case_id, other.sample))
        if mine is None or not other.ranking:
            continue
        ranking = reciprocal_rank_fusion([mine.ranking, other.ranking])
        fused.append(
            AnswerData(
                pk=0,
                answer_id=f"{mine.answer_id}+{other.answer_id}",
                case=mine.case,
                variant="fuse",
                sample=mine.sample,
                abstained=False,
                elapsed_ms=None,
                request_cost=None,
                ranking=ranking,
            )
        )
    rows = {}
    for name, answers in ((a, answers_a), (b, answers_b), (f"fuse({a}, {b})", fused)):
        scores, not_eligible, no_ranking = per_case_retrieval(answers, k)
        row: dict[str, Any] = {
            metric: mean_over_eligible(s[metric] for s in scores.values()).mean
            for metric in RETRIEVAL_METRICS
        }
        row.update(eligible=len(scores), not_eligible=not_eligible, no_ranking=no_ranking)
        rows[name] = row
    return {"k": k, "method": "reciprocal rank fusion, offset 60", "rows": rows}
