"""The evaluation app's computed reports (annotate.common.computed): each stored with the
project's revision and computed by a worker when the project is large. ``requires`` names the
top-level keys the pages and the API read: a stored result without one of them is of another
shape, and computed again.

The statistics modules are imported by the functions that compute, when first called: this
module is loaded at start-up by every process (annotate.apps), and a web worker that only
shows stored reports must not carry numpy, scipy, scikit-learn and pandas
(tests/test_lean_workers.py)."""

from __future__ import annotations

from annotate.common import computed
from annotate.models import Project, Variant
from evaluation.models import JudgeRun

AGREEMENT = "agreement"
CALIBRATION = "calibration"
CALIBRATION_PLAN = "calibration-plan"
EVALUATION = "evaluation"
COMPARISON = "comparison"
REVIEWERS = "reviewers"


def agreement_key(guideline_version: int | None) -> str:
    """The stored agreement report's key: "" over every label set, else "guidelines-vN" over
    those made under version N of the guidelines."""
    return "" if guideline_version is None else f"guidelines-v{int(guideline_version)}"


def _agreement(project: Project, key: str) -> dict:
    from evaluation.reports.agreement import agreement_report  # late import: heavy library (memory)

    version = int(key.removeprefix("guidelines-v")) if key else None
    return agreement_report(project, guideline_version=version)


def _reviewers(project: Project, key: str) -> dict:
    from evaluation.reports.reviewers import reviewers_report  # late import: heavy library (memory)

    return reviewers_report(project)


def calibration_key(run: JudgeRun, split: str) -> str:
    return f"{run.pk}:{split}"


def _calibration(project: Project, key: str) -> dict:
    from evaluation.reports.calibration import (
        calibration_report,
    )  # late import: heavy library (memory)

    run_id, split = key.split(":", 1)
    run = JudgeRun.objects.select_related("imported_by").get(project=project, pk=int(run_id))
    run.project = project
    return calibration_report(run=run, split=split)


def _calibration_plan(project: Project, key: str) -> dict:
    from evaluation.reports.calibration_plan import (
        plan_report,
    )  # late import: heavy library (memory)

    run_id, split, width, _newest_sample = key.split(":")
    run = JudgeRun.objects.get(project=project, pk=int(run_id))
    run.project = project
    return plan_report(run=run, split=split, half_width=float(width))


def _evaluation(project: Project, key: str) -> dict:
    from evaluation.reports.evaluation import evaluate  # late import: heavy library (memory)

    return evaluate(project)


def comparison_key(variant_a: int, variant_b: int, k: int) -> str:
    """A comparison's key: the two variants' ids (names can be 200 characters each) and k."""
    return f"{variant_a}:{variant_b}:{k}"


def _comparison(project: Project, key: str) -> dict:
    from evaluation.reports.comparison import compare  # late import: heavy library (memory)

    a_pk, b_pk, k = (int(part) for part in key.split(":"))
    names = dict(Variant.objects.filter(project=project).values_list("pk", "name"))
    if a_pk not in names or b_pk not in names:
        raise Variant.DoesNotExist(f"variant {a_pk} or {b_pk} is gone from the project")
    return compare(project, names[a_pk], names[b_pk], k=k)


def _refresh_evaluation(project: Project, key: str, revision: int) -> None:
    """The evaluation, then the comparison of its first two variants that the page shows
    beside it, from one read of the project (reading it is half of computing either): the
    page has both as soon as this task is done, instead of asking for the comparison then."""
    from evaluation.reports.comparison import (
        DEFAULT_COMPARE_K,
        compare,
    )  # late import: heavy library (memory)
    from evaluation.reports.dataset import load  # late import: heavy library (memory)
    from evaluation.reports.evaluation import evaluate  # late import: heavy library (memory)

    data = load(project)
    computed.store(project, EVALUATION, key, revision, lambda: evaluate(project, data=data))
    variants = list(data.variants.values())  # by name, as the page lists them
    if len(variants) < 2:
        return
    a, b = variants[:2]
    pair = comparison_key(a.pk, b.pk, DEFAULT_COMPARE_K)
    if not computed.is_current(project, COMPARISON, pair, revision):
        computed.store(
            project,
            COMPARISON,
            pair,
            revision,
            lambda: compare(project, a.name, b.name, k=DEFAULT_COMPARE_K, data=data),
        )


computed.register(AGREEMENT, compute=_agreement, requires=frozenset({"slices", "pairs"}))
computed.register(
    CALIBRATION,
    compute=_calibration,
    # strata_by: the strata every grouping (--by, the page's selector) reads; a report stored
    # before them is recomputed, never a KeyError.
    requires=frozenset({"binary", "confusion", "disagreements", "strata_by"}),
)
computed.register(
    CALIBRATION_PLAN,
    compute=_calibration_plan,
    requires=frozenset({"half_width", "uniform", "curve", "current"}),
)
computed.register(
    EVALUATION,
    compute=_evaluation,
    refresh=_refresh_evaluation,
    requires=frozenset({"variants", "ks", "not_available", "latency_histogram"}),
)
computed.register(
    COMPARISON,
    compute=_comparison,
    requires=frozenset({"a", "b", "k", "metrics", "fusion"}),
)
computed.register(
    REVIEWERS,
    compute=_reviewers,
    requires=frozenset({"reviewers", "fields", "drift_design"}),
)
# What the evaluation page derives in the request from the stored reports.
for name in ("variant-pks", "answer-pks", "evaluation-tables", "comparison-tables", "charts"):
    computed.register(name)
