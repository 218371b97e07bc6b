"""The budget planner of a judge run (SPEC.md "Budget planner"): how many more answers (and
claims) a calibration sample needs for a chosen 95% half-width, under the uniform and the
active design, the interval to expect once those labels are in, and the curve of expected
half-width against answers labelled that the run's page draws.

The statistics are evaluation.sampling_design's (plan_budget, planner_curve); this module
chooses their inputs:
- **the gold** it learns the judge's errors from: the scored gold items of the chosen split
  (as the calibration report scores them), grouped by answer into d_a = Σ (gold − judge)
  unsupported indicators, each answer with its claims' confidences. When every one of those
  answers was drawn by a calibration sample of the run, each is weighted 1/π (an active
  sample over-draws the answers the judge gets wrong; unweighted, they would overstate the
  frame's errors); otherwise the gold is treated as a sample of the frame, unweighted, which
  is what the calibration report's PPI assumes too (`gold_weighted` says which);
- **the frame** a sample would be drawn from: sample_for_calibration's (answers with a verdict
  of the run that nobody has labelled), evaluation.judges.samples.frame_of;
- **the labels already planned**: the run's newest calibration sample (its expected size B);
  the plan says what half-width to expect from it once all its answers are labelled;
- **the current point**: the newest calibration sample's design estimate, from its answers
  decided so far (unbiased whatever the judge: the π are known); without one, PPI++ on the
  gold answers of the split over the frame's judged claims (the headline estimate, which
  reads the gold as a random sample). The interval expected once the planned labels are in
  is centred on that estimate.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from annotate.gold.splits import DEFAULT_SPLIT
from annotate.schema import UNSUPPORTED, support_binary
from evaluation.calibration import CalibrationRefused
from evaluation.estimators import ppi_plus_plus
from evaluation.judges.samples import design_estimates, frame_of
from evaluation.models import CalibrationDesign, CalibrationSample, JudgeRun, Verdict
from evaluation.reports.calibration import score_items
from evaluation.reports.judge_gold import OK, ProjectGold, check_split, load_gold, load_verdicts
from evaluation.reports.plan_gate_params import DEFAULT_HALF_WIDTH, check_half_width
from evaluation.sampling_design import answer_residual, plan_budget, planner_curve


def _gold_answers(
    gold: ProjectGold, run: JudgeRun, split: str
) -> tuple[list[int], list[list[float | None]], list[float] | None, list[bool], list[bool]]:
    """Per gold answer of the split: d_a, its scored claims' confidences and its π (all or
    none); and the scored claims' gold and judge unsupported indicators (for PPI++)."""
    verdicts = load_verdicts(run)
    scored, _ = score_items(gold, verdicts, split)
    confidence = dict(
        Verdict.objects.filter(run=run, status=OK, claim__isnull=False).values_list(
            "claim_id", "confidence"
        )
    )
    by_answer: dict[int, list[tuple[bool, bool, float | None]]] = defaultdict(list)
    gold_ind, judge_ind = [], []
    for s in scored:
        g, j = s.gold_binary == UNSUPPORTED, s.judge_binary == UNSUPPORTED
        by_answer[s.claim.answer.pk].append((g, j, confidence.get(s.claim.pk)))
        gold_ind.append(g)
        judge_ind.append(j)
    answers = sorted(by_answer)
    pi = _gold_pi(run, answers)
    residuals = [
        answer_residual([g for g, _, _ in by_answer[a]], [j for _, j, _ in by_answer[a]])
        for a in answers
    ]
    confidences = [[p for _, _, p in by_answer[a]] for a in answers]
    return residuals, confidences, pi, gold_ind, judge_ind


def _gold_pi(run: JudgeRun, answers: list[int]) -> list[float] | None:
    """Each gold answer's inclusion probability in the run's calibration sample that drew it
    (the newest, if several did), or None unless every gold answer was drawn by one."""
    pi: dict[int, float] = {}
    for answer, p in (
        CalibrationSample.objects.filter(design__run=run, answer_id__among=answers)
        .order_by("design__created_at", "design_id")
        .values_list("answer_id", "pi")
    ):
        pi[answer] = p  # later designs overwrite earlier ones
    if not answers or len(pi) < len(answers):
        return None
    return [pi[a] for a in answers]


def _newest_design(run: JudgeRun) -> CalibrationDesign | None:
    design = CalibrationDesign.objects.filter(run=run).order_by("-created_at", "-pk").first()
    if design is not None:
        design.run, design.project = run, run.project  # already loaded
    return design


def _planned(design: CalibrationDesign | None, frame_size: int) -> dict[str, Any] | None:
    """The run's newest calibration sample: its id, design and expected size (capped at the
    frame as it is now), whose labels are the ones already planned."""
    if design is None or frame_size == 0:
        return None
    return {"design": design.pk, "kind": design.kind, "answers": min(design.budget, frame_size)}


def _sample_now(design: CalibrationDesign | None) -> dict[str, Any] | None:
    """Where the newest calibration sample stands: its design estimate from its decided
    answers (on the curve's own scale: a sample's half-width against its labelled answers)."""
    if design is None:
        return None
    report = design_estimates([design])[0]
    if not report.decided:
        return None
    lo, hi = report.estimate.share.ci95_unclipped
    return {
        "answers": report.decided,
        "claims": None,
        "method": f"calibration sample {design.pk}",
        "estimate": report.estimate.share.estimate_unclipped,
        "half_width": (hi - lo) / 2,
        "provisional": report.estimate.provisional,
        "refused": None,
    }


def _current(gold_ind, judge_ind, frame_labels, answers: int) -> dict[str, Any]:
    """Where the run stands: PPI++ over the frame's judged claims from the gold as it is."""
    target = [support_binary(label) == UNSUPPORTED for row in frame_labels for label in row]
    base = {"answers": answers, "claims": len(gold_ind)}
    try:
        result = ppi_plus_plus(gold=gold_ind, judge_gold=judge_ind, judge_target=target)
    except CalibrationRefused as exc:
        return {
            **base,
            "method": "PPI++",
            "estimate": None,
            "half_width": None,
            "provisional": False,
            "refused": str(exc),
        }
    lo, hi = result.share.ci95_unclipped
    return {
        **base,
        "method": "PPI++",
        "provisional": False,
        "estimate": result.share.estimate_unclipped,
        "half_width": (hi - lo) / 2,
        "refused": None,
    }


def _expected_ci(estimate: float | None, half_width: float | None) -> list[float] | None:
    """The interval to expect once the plan's labels are in: today's estimate ± the planned
    half-width, clipped to [0, 1] (a share cannot leave it)."""
    if estimate is None or half_width is None:
        return None
    return [max(0.0, estimate - half_width), min(1.0, estimate + half_width)]


def plan_report(
    *,
    run: JudgeRun,
    split: str = DEFAULT_SPLIT,
    half_width: float = DEFAULT_HALF_WIDTH,
    gold: ProjectGold | None = None,
) -> dict[str, Any]:
    """The `plan` block of `calibration --plan WIDTH --json` (and of the API and the page):
    ``{"half_width", "uniform": {"answers", "claims", "expected_half_width", "expected_ci95",
    "planned"}, "active": {…} | null, "active_unavailable", "current", "curve", "refused"}``.
    A plan that cannot be made (too little gold, no judge error in it, an empty frame) has
    ``uniform`` and ``active`` null and says why in ``refused``."""
    check_split(split)
    half_width = check_half_width(half_width)
    gold = gold or load_gold(run.project)
    residuals, confidences, gold_pi, gold_ind, judge_ind = _gold_answers(gold, run, split)
    frame = frame_of(run)
    newest = _newest_design(run)
    planned = _planned(newest, len(frame.answers))
    # Today's point: the newest sample's own estimate when it has labelled answers (gold
    # drawn with known π); otherwise PPI++, which reads the gold as a simple random sample.
    current = _sample_now(newest) or _current(gold_ind, judge_ind, frame.labels, len(residuals))
    out: dict[str, Any] = {
        "half_width": half_width,
        "split": split,
        "frame_answers": len(frame.answers),
        "frame_claims": frame.claims,
        "gold_answers": len(residuals),
        "gold_weighted": gold_pi is not None,
        "planned_sample": planned,
        "current": current,
    }
    refused = {
        **out,
        "uniform": None,
        "active": None,
        "active_unavailable": None,
        "curve": [],
    }
    if not frame.answers:
        return {**refused, "refused": "the frame is empty: every judged answer is labelled"}
    inputs = {
        "frame": frame.confidences,
        "gold_residuals": residuals,
        "gold_confidences": confidences,
        "gold_pi": gold_pi,
    }
    try:
        plan = plan_budget(
            **inputs,
            half_width=half_width,
            planned_answers=None if planned is None else planned["answers"],
        )
        curve = planner_curve(**inputs)
    except (CalibrationRefused, ValueError) as exc:
        return {**refused, "refused": str(exc)}
    result = plan.as_dict()
    for design in ("uniform", "active"):
        if result[design] is not None:
            result[design]["expected_ci95"] = _expected_ci(
                current["estimate"], result[design]["expected_half_width"]
            )
    return {
        **out,
        **result,
        "curve": [{"answers": p.answers, "uniform": p.uniform, "active": p.active} for p in curve],
        "refused": None,
    }
