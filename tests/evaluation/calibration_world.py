"""A synthetic frame of judged answers for the calibration-sample simulations, a vectorised run
of the design estimate over many repetitions, and the demo-shaped gold for PPI++.

Shared by tests/evaluation/test_sampling_simulation.py, test_estimators.py and
bench/calibration_simulation.py, so the numbers the bench prints are the ones the tests assert
on.

The world (``make_world``):
- a frame of ``answers`` answers with 1–6 claims each (uniformly), about 3.5 claims per answer;
- a fifth of the answers are *hard* (a question the passages barely decide): each of their
  claims is uncertain with probability 0.6, its judge confidence p ~ Beta(2, 2); every other
  claim is clear-cut, p ~ Beta(0.5, 30) (clearly supported) or, one time in three,
  Beta(30, 0.5) (clearly unsupported);
- the truth is drawn so that the judge is **calibrated**: P(claim unsupported) = p, and the
  judge labels a claim unsupported when p > 0.5, so it errs with probability min(p, 1 − p) —
  its errors concentrate on the uncertain claims of hard answers (about 5% of claims wrong,
  a third of claims unsupported);
- a **chance** judge (``chance=True``) reports confidences drawn from the same mixture but
  independently of the truth, and labels by them: its label is independent of the truth.

Each repetition redraws the truth of every claim (so the frame's true share varies a little
from one repetition to the next) and a fresh Poisson sample.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from evaluation.calibration import Z_95
from evaluation.sampling_design import inclusion_probabilities

HARD_SHARE = 0.2
HARD_UNCERTAIN = 0.6
CLEAR_BETA = (0.5, 30.0)
UNCERTAIN_BETA = (2.0, 2.0)
UNSUPPORTED_SIDE = 1 / 3


@dataclass(frozen=True)
class World:
    claims: np.ndarray  # per answer, its number of judged claims
    p_true: np.ndarray  # per claim, P(unsupported): the truth's law
    confidence: np.ndarray  # per claim, the judge's reported p (= p_true unless chance)
    judge: np.ndarray  # per claim, the judge's unsupported call

    @property
    def answers(self) -> int:
        return int(self.claims.size)

    @property
    def frame_claims(self) -> int:
        return int(self.claims.sum())

    @property
    def starts(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.claims)[:-1]])

    def frame_confidences(self) -> list[list[float]]:
        """The frame as the design functions take it: per answer, its claims' confidences."""
        return [c.tolist() for c in np.split(self.confidence, np.cumsum(self.claims)[:-1])]

    def uncertainty(self) -> np.ndarray:
        """u_a = Σ min(p, 1 − p) over each answer's claims (of the reported confidence)."""
        q = np.minimum(self.confidence, 1.0 - self.confidence)
        return np.add.reduceat(q, self.starts)


def _confidences(
    rng: np.random.Generator, claims: np.ndarray, hard_share: float, hard_uncertain: float
) -> np.ndarray:
    owner = np.repeat(np.arange(claims.size), claims)
    hard = (rng.random(claims.size) < hard_share)[owner]
    m = int(claims.sum())
    uncertain = rng.random(m) < np.where(hard, hard_uncertain, 0.0)
    unsupported_side = rng.random(m) < UNSUPPORTED_SIDE
    a, b = CLEAR_BETA
    clear = np.where(unsupported_side, rng.beta(b, a, m), rng.beta(a, b, m))
    return np.where(uncertain, rng.beta(*UNCERTAIN_BETA, m), clear)


def make_world(
    seed: int,
    *,
    answers: int = 5000,
    chance: bool = False,
    hard_share: float = HARD_SHARE,
    hard_uncertain: float = HARD_UNCERTAIN,
) -> World:
    """The world of the module docstring. ``hard_share=1, hard_uncertain=0.12`` spreads the
    same share of uncertain claims evenly over all answers (the *diffuse* world)."""
    rng = np.random.default_rng(seed)
    claims = rng.integers(1, 7, answers)
    p_true = _confidences(rng, claims, hard_share, hard_uncertain)
    # A chance judge's confidence is a fresh draw from the same mixture: it has the same spread
    # as a real judge's (so active sampling has something to act on) but says nothing.
    confidence = _confidences(rng, claims, hard_share, hard_uncertain) if chance else p_true
    return World(claims=claims, p_true=p_true, confidence=confidence, judge=confidence > 0.5)


def draw_truth(world: World, rng: np.random.Generator, reps: int) -> tuple[np.ndarray, ...]:
    """Per repetition: every answer's residual d_a = Σ (truth − judge), and the frame's true
    unsupported share. Shapes (reps, answers) and (reps,)."""
    truth = rng.random((reps, world.frame_claims)) < world.p_true
    diff = truth.astype(np.int16) - world.judge.astype(np.int16)
    residuals = np.add.reduceat(diff, world.starts, axis=1).astype(float)
    return residuals, truth.mean(axis=1)


@dataclass(frozen=True)
class Replications:
    estimate: np.ndarray  # θ per repetition (unclipped)
    half_width: np.ndarray  # 1.96 √Var per repetition
    share: np.ndarray  # the frame's true share per repetition
    sampled: np.ndarray  # answers drawn per repetition

    @property
    def coverage(self) -> float:
        return float((np.abs(self.estimate - self.share) <= self.half_width).mean())

    @property
    def mean_half_width(self) -> float:
        return float(self.half_width.mean())


def estimate_batch(
    world: World, pi: np.ndarray, residuals: np.ndarray, drawn: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """θ and 1.96 √Var of the design estimate for each row of (residuals, drawn), all at once:
    θ = (1/M) Σ judge + (1/M) Σ_sampled d/π, Var = (1/M²) Σ_sampled (1 − π) d² / π²."""
    m = float(world.frame_claims)
    estimate = float(world.judge.sum()) / m + (drawn * residuals / pi).sum(axis=1) / m
    variance = (drawn * (1.0 - pi) * residuals**2 / pi**2).sum(axis=1) / m**2
    return estimate, Z_95 * np.sqrt(variance)


def replicate(
    world: World,
    *,
    design: str,
    budget: float,
    reps: int,
    seed: int,
    chunk: int = 250,
) -> Replications:
    """The design estimate over ``reps`` repetitions, each a fresh truth and a fresh Poisson
    sample, vectorised over repetitions (in chunks, to bound memory)."""
    rng = np.random.default_rng(seed)
    pi = inclusion_probabilities(design=design, budget=budget, frame=world.frame_confidences()).pi
    parts: list[tuple[np.ndarray, ...]] = []
    for start in range(0, reps, chunk):
        size = min(chunk, reps - start)
        residuals, share = draw_truth(world, rng, size)
        drawn = rng.random((size, world.answers)) < pi
        estimate, half_width = estimate_batch(world, pi, residuals, drawn)
        parts.append((estimate, half_width, share, drawn.sum(axis=1)))
    return Replications(*(np.concatenate(column) for column in zip(*parts, strict=True)))


def pilot_gold(seed: int, *, answers: int) -> tuple[list[float], list[list[float]]]:
    """A gold set of ``answers`` labelled answers from the same world (not from the frame):
    each answer's residual d_a and its claims' confidences, as the planner takes them."""
    world = make_world(seed, answers=answers)
    residuals, _ = draw_truth(world, np.random.default_rng(seed + 1), 1)
    return residuals[0].tolist(), world.frame_confidences()


def from_cells(*, tn: int, tp: int, fp: int, fn: int) -> tuple[np.ndarray, np.ndarray]:
    """Gold and judge indicators with the given confusion cells (positive = unsupported)."""
    gold = np.array([0] * tn + [1] * tp + [0] * fp + [1] * fn, dtype=bool)
    judge = np.array([0] * tn + [1] * tp + [1] * fp + [0] * fn, dtype=bool)
    return gold, judge


def demo_shaped() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The demo's gold and target (fixtures/demo_labels.jsonl, demo_judge_run.jsonl, all
    splits): 52 gold claims of doubly-labelled answers whose reviewers agree on support_binary
    — 30 supported and 17 unsupported on both sides, 4 false alarms of the judge, 1 miss — and
    23 judged claims of unlabelled answers, 4 of them called unsupported. Returns gold, the
    judge on gold, the judge on the target."""
    gold, judge = from_cells(tn=30, tp=17, fp=4, fn=1)
    target = np.array([1] * 4 + [0] * 19, dtype=bool)
    return gold, judge, target


def judged_sample(
    seed: int, *, n: int, big_n: int, share: float = 0.3, tpr: float = 0.8, tnr: float = 0.9
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n gold claims and N target claims with a true unsupported ``share``, labelled by a judge
    with the given TPR and TNR. Returns gold, the judge on gold, the judge on the target."""
    rng = np.random.default_rng(seed)

    def judge(truth: np.ndarray) -> np.ndarray:
        return np.where(truth, rng.random(truth.size) < tpr, rng.random(truth.size) >= tnr)

    gold = rng.random(n) < share
    return gold, judge(gold), judge(rng.random(big_n) < share)
