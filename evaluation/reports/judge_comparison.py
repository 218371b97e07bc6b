"""Two judge runs compared on the same gold items (compare_runs)."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import binomtest

from annotate.gold.splits import DEFAULT_SPLIT
from annotate.schema import BINARY
from evaluation.agreement import SUPPORT
from evaluation.calibration import judge_report
from evaluation.models import JudgeRun
from evaluation.reports.calibration import judge_scale, report_item, score_items
from evaluation.reports.judge_gold import OK, ProjectGold, check_split, load_gold, load_verdicts


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
    scored_a, _ = score_items(gold, va, split)
    scored_b = {s.claim.pk: s for s in score_items(gold, vb, split)[0]}
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
            report_item(project, run_a, a.claim, gold=gold_label, a=label_a, b=label_b, pair=a.pair)
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
