"""The judge gate (SPEC.md "Judge gate"): a yes or no for a CI pipeline that ships a new judge
prompt -- is its kappa against gold high enough at the lower end of its 95% interval, and is
it not worse than the judge it replaces?

The decision is evaluation.estimators.judge_gate's; this module reads its inputs:
- the judge's kappa interval from its calibration report (the bootstrap over answers the run's
  page shows), on the scale the judge is scored on; a binary judge in a three-way project has
  no three-way kappa, so its supported-vs-unsupported kappa is read, and the reason says so;
- with a baseline, the two runs' correctness on the split's gold items both scored, from
  evaluation.reports.judge_comparison (the comparison page's counts and exact McNemar test).
The command, the API and the run's page call ``gate_report`` and show the same verdict.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evaluation.estimators import judge_gate
from evaluation.models import JudgeRun
from evaluation.reports.judge_comparison import compare_runs
from evaluation.reports.judge_gold import ProjectGold
from evaluation.reports.plan_gate_params import check_min_kappa


def _kappa_lower(report: dict) -> tuple[float | None, str]:
    """The lower end of the judge's kappa interval, and the scale it is read on."""
    if report["kappa"] is not None:
        ci = report["kappa_ci95"]
        scale = "three-way" if report["scale"] == "three_way" else "binary"
    else:
        ci = report["binary"]["kappa_ci95"] if report["binary"]["kappa"] is not None else None
        scale = "binary"
    return (float(ci[0]) if ci else None), scale


def _paired(counts: dict) -> tuple[np.ndarray, np.ndarray]:
    """Each judge's correctness item by item, rebuilt from the comparison's four counts (the
    McNemar test reads nothing else)."""
    cells = (
        (True, True, counts["both_right"]),
        (True, False, counts["only_a_right"]),
        (False, True, counts["only_b_right"]),
        (False, False, counts["both_wrong"]),
    )
    a = np.array([x for x, _, n in cells for _ in range(n)], dtype=bool)
    b = np.array([y for _, y, n in cells for _ in range(n)], dtype=bool)
    return a, b


def gate_report(
    *,
    run: JudgeRun,
    report: dict,
    min_kappa: float,
    baseline: JudgeRun | None = None,
    gold: ProjectGold | None = None,
) -> dict[str, Any]:
    """The `gate` block: ``{"passed", "reasons", "summary", "min_kappa", "kappa_lower",
    "kappa_scale", "baseline": {"judge", "scale", "items", "candidate_only", "baseline_only",
    "p_value", "worse"} | null}``. ``report`` is the run's calibration report on the split the
    gate reads (its kappa interval); the baseline is compared on the same split."""
    min_kappa = check_min_kappa(min_kappa)
    lower, scale = _kappa_lower(report)
    comparison = None
    paired: dict[str, Any] = {}
    if baseline is not None:
        if baseline.pk == run.pk:
            raise ValueError("the baseline must be another judge run than the one gated")
        comparison = compare_runs(run_a=run, run_b=baseline, split=report["split"], gold=gold)
        candidate_correct, baseline_correct = _paired(comparison)
        paired = {
            "candidate_correct": candidate_correct,
            "baseline_correct": baseline_correct,
            "candidate": run.name,
            "baseline": baseline.name,
        }
    result = judge_gate(kappa_lower=lower, min_kappa=min_kappa, **paired)
    reasons = list(result.reasons)
    if scale == "binary" and report["scale"] == "three_way":
        reasons[0] += " (supported vs unsupported: the judge has no three-way kappa)"
    test = result.mcnemar
    return {
        "passed": result.passed,
        "reasons": reasons,
        "summary": _summary(result, lower, min_kappa, baseline),
        "min_kappa": min_kappa,
        "kappa_lower": lower,
        "kappa_scale": scale,
        "baseline": None
        if test is None
        else {
            "judge": baseline.name,
            "scale": comparison["scale"],
            "items": test.items,
            "candidate_only": test.candidate_only,
            "baseline_only": test.baseline_only,
            "p_value": test.p_value,
            "worse": test.candidate_worse,
        },
    }


def _summary(result, lower: float | None, min_kappa: float, baseline: JudgeRun | None) -> str:
    """One line, as the run's page heads the verdict: "passes: kappa ≥ 0.6 at the 95% lower
    end; not worse than v1 (McNemar p = 0.41)"."""
    if lower is None:
        kappa = f"kappa interval undefined, so not shown ≥ {min_kappa:g}"
    else:
        sign = "≥" if lower >= min_kappa else "<"
        kappa = f"kappa {sign} {min_kappa:g} at the 95% lower end ({lower:.3f})"
    parts = [kappa]
    test = result.mcnemar
    if test is not None:
        p = "no discordant item" if test.p_value is None else f"McNemar p = {test.p_value:.2g}"
        verdict = "worse than" if test.candidate_worse else "not worse than"
        parts.append(f"{verdict} {baseline.name} ({p})")
    return f"{'passes' if result.passed else 'fails'}: {'; '.join(parts)}"
