"""Print the numbers behind issue #31's "Done when": coverage, width ratio, planner error, and
PPI++ against classic PPI.

Usage: python bench/calibration_simulation.py   (no database; about a minute on one core)

Uses the synthetic world of tests/evaluation/calibration_world.py (described there), so every
figure is the one tests/evaluation/test_sampling_simulation.py asserts on (same seeds), plus
what the tests do not assert: the diffuse world (the same uncertain claims spread over all
answers, where active sampling gains less) and how the planner's error grows when the gold it
learns from is small.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from evaluation.calibration import ppi_mean  # noqa: E402
from evaluation.estimators import ppi_plus_plus  # noqa: E402
from evaluation.sampling_design import (  # noqa: E402
    draw_sample,
    inclusion_probabilities,
    plan_budget,
    planner_curve,
)
from tests.evaluation.calibration_world import (  # noqa: E402
    demo_shaped,
    draw_truth,
    judged_sample,
    make_world,
    pilot_gold,
    replicate,
)

BUDGET, REPS = 300, 2000


def coverage_and_widths() -> None:
    print(f"== design estimate: frame of 5,000 answers, B = {BUDGET}, {REPS} repetitions ==")
    worlds = {
        "calibrated judge": (make_world(0), 1),
        "chance judge": (make_world(0, chance=True), 2),
    }
    for name, (world, seed) in worlds.items():
        for design in ("uniform", "active"):
            r = replicate(world, design=design, budget=BUDGET, reps=REPS, seed=seed)
            print(
                f"{name:17} {design:8} coverage {r.coverage:.3f}  mean half-width "
                f"{r.mean_half_width:.4f}  answers drawn {r.sampled.mean():.1f}"
            )
    for name, world in (
        ("concentrated (the tests')", make_world(0)),
        ("diffuse", make_world(0, hard_share=1.0, hard_uncertain=0.12)),
    ):
        uniform = replicate(world, design="uniform", budget=BUDGET, reps=REPS, seed=3)
        active = replicate(world, design="active", budget=BUDGET, reps=REPS, seed=3)
        ratio = active.mean_half_width / uniform.mean_half_width
        print(f"width ratio active/uniform, {name} world: {ratio:.3f} ({1 - ratio:.0%} narrower)")


def planner_error() -> None:
    world = make_world(0)
    frame = world.frame_confidences()
    residuals, confidences = pilot_gold(50, answers=2000)
    plan = plan_budget(
        frame=frame, gold_residuals=residuals, gold_confidences=confidences, half_width=0.015
    )
    print("\n== budget planner: half-width 0.015 planned from a gold of 2,000 answers ==")
    for planned in (plan.uniform, plan.active):
        r = replicate(world, design=planned.design, budget=planned.answers, reps=REPS, seed=4)
        error = planned.half_width / r.mean_half_width - 1
        print(
            f"{planned.design:8} plans {planned.answers} answers ({planned.claims:.0f} claims): "
            f"predicted {planned.half_width:.4f}, realised {r.mean_half_width:.4f} "
            f"({error:+.1%})"
        )
    print(
        f"\n-- the planner's error at B = {BUDGET} against the size of the gold it learns from --"
    )
    realised = {
        d: replicate(world, design=d, budget=BUDGET, reps=REPS, seed=4).mean_half_width
        for d in ("uniform", "active")
    }
    for size in (100, 300, 1000):
        errors: dict[str, list[float]] = {"uniform": [], "active": []}
        for pilot in range(20):
            residuals, confidences = pilot_gold(1000 + 10 * pilot, answers=size)
            (point,) = planner_curve(
                frame=frame,
                gold_residuals=residuals,
                gold_confidences=confidences,
                budgets=[BUDGET],
            )
            errors["uniform"].append(point.uniform / realised["uniform"] - 1)
            errors["active"].append(point.active / realised["active"] - 1)
        summary = "  ".join(
            f"{d}: median |error| {np.median(np.abs(e)):.1%}, worst {max(e, key=abs):+.1%}, "
            f"within ±15% {np.mean(np.abs(e) <= 0.15):.0%}"
            for d, e in errors.items()
        )
        print(f"gold of {size:4} answers (20 golds): {summary}")


def planner_from_own_sample() -> None:
    """As test_planner_learns_from_the_team_s_own_calibration_sample: plan from one labelled
    sample of B = 300 (weighted 1/π, and unweighted for contrast), 40 samples."""
    world = make_world(0)
    frame = world.frame_confidences()
    realised = {
        d: replicate(world, design=d, budget=BUDGET, reps=REPS, seed=4).mean_half_width
        for d in ("uniform", "active")
    }
    print(f"\n== the planner learning from the team's own sample of B = {BUDGET} (40 samples) ==")
    for pilot_design in ("uniform", "active"):
        pi = inclusion_probabilities(design=pilot_design, budget=BUDGET, frame=frame).pi
        rows: dict[str, list[float]] = {"uniform": [], "active": [], "uniform, unweighted": []}
        for pilot in range(40):
            residuals, _ = draw_truth(world, np.random.default_rng(100 + pilot), 1)
            drawn = np.flatnonzero(draw_sample(pi, seed=200 + pilot))
            gold = {
                "frame": frame,
                "gold_residuals": residuals[0, drawn].tolist(),
                "gold_confidences": [frame[i] for i in drawn],
                "budgets": [BUDGET],
            }
            (point,) = planner_curve(**gold, gold_pi=pi[drawn].tolist())
            (plain,) = planner_curve(**gold)
            rows["uniform"].append(point.uniform / realised["uniform"] - 1)
            rows["active"].append(point.active / realised["active"] - 1)
            rows["uniform, unweighted"].append(plain.uniform / realised["uniform"] - 1)
        print(
            f"{pilot_design} sample: "
            + "  ".join(
                f"{name}: mean error {np.mean(e):+.1%}, "
                f"within ±15% {np.mean(np.abs(e) <= 0.15):.0%}"
                for name, e in rows.items()
            )
        )


def ppi_widths() -> None:
    print("\n== PPI++ (ppi_py, tuned lambda) against classic PPI (evaluation.calibration) ==")
    data_sets = {
        "demo-shaped": demo_shaped(),
        "a hundred gold, 300 target": judged_sample(7, n=100, big_n=300),
    }
    for name, (gold, judge, target) in data_sets.items():
        plus = ppi_plus_plus(gold=gold, judge_gold=judge, judge_target=target)
        classic = ppi_mean(target, judge, gold)
        lo, hi = plus.ci95_unclipped
        print(f"{name}: {plus.n} gold claims, {plus.target_n} target claims")
        print(
            f"  PPI++   estimate {plus.share.estimate_unclipped:.4f}  ci95 [{lo:.4f}, {hi:.4f}]"
            f"  width {hi - lo:.4f}  lambda {plus.lam:.4f}"
        )
        print(
            f"  classic estimate {classic.estimate:.4f}  ci95 [{classic.ci95[0]:.4f}, "
            f"{classic.ci95[1]:.4f}]  width {classic.ci95[1] - classic.ci95[0]:.4f}"
        )


if __name__ == "__main__":
    coverage_and_widths()
    planner_error()
    planner_from_own_sample()
    ppi_widths()
