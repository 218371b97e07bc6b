"""Calibration samples of a judge run (SPEC.md "Calibration samples (design-based)"): drawing
one (draw_sample), the run's designs (designs_of) and each design's estimate of the frame's
unsupported share (design_estimates).

The statistics are evaluation.sampling_design's (inclusion probabilities, the Poisson draw,
the Horvitz-Thompson estimate); this module chooses the frame, stores the design and reads
back the sampled answers' gold. numpy comes in with sampling_design, imported where a
sample is drawn or estimated: the run's page and the API's schema import this module and
must not carry it when there is nothing to compute.

- **The frame** is fixed when the sample is drawn: the answers of the project with an ok
  verdict of the run on at least one claim, none of whose label sets is submitted and with no
  gold imported from elsewhere. Its judged claims (M) and the judge's unsupported calls among
  them are stored with the design, which is all the estimate needs of the answers not drawn.
- **The sampled answers** go to the front of the reviewers' queue: their queue key moves
  from [0, 1) to [-1, 0), the band annotate.queue.services.next_task serves first. Nothing
  else about them changes, so nothing a reviewer sees says they were drawn.
- **The estimate** reads the sampled answers' gold as the calibration report does: an answer
  counts once two reviewers' (or imported) gold decides support_binary for each of its judged
  claims; until then it waits and the estimate is provisional.
"""

from __future__ import annotations

import secrets
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef

from annotate.common import computed
from annotate.common.errors import ServiceError
from annotate.gold.imported import gold_in_chunks
from annotate.models import Answer, Assignment, ImportedGold, Project
from annotate.schema import UNSUPPORTED, support_binary
from evaluation.models import CalibrationDesign, CalibrationSample, JudgeRun, Verdict

DESIGNS = tuple(CalibrationDesign.Kind.values)
MAX_SEED = 2**63 - 1  # numpy's generator takes any non-negative integer; the column, 64 bits
BATCH = 1000


class SampleRefused(ServiceError):
    """A sample that cannot be drawn; `field` names the input at fault (the API's field path)."""

    def __init__(self, message: str, *, field: str = "non_field_errors") -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Frame:
    """The frame's answers in pk order, each with its judged claims' labels and confidences."""

    answers: list[int]
    labels: list[list[str]]
    confidences: list[list[float | None]]

    @property
    def claims(self) -> int:
        return sum(len(labels) for labels in self.labels)

    @property
    def judge_unsupported(self) -> int:
        return sum(support_binary(label) == UNSUPPORTED for row in self.labels for label in row)

    @property
    def with_confidence(self) -> int:
        return sum(p is not None for row in self.confidences for p in row)


def frame_of(run: JudgeRun) -> Frame:
    """The run's frame as it stands: one query (the ok claim verdicts of answers nobody has
    submitted a label set for and no imported gold covers)."""
    labelled = Assignment.objects.filter(
        answer_id=OuterRef("answer_id"), status=Assignment.Status.SUBMITTED
    )
    imported = ImportedGold.objects.filter(answer_id=OuterRef("answer_id"))
    rows = (
        Verdict.objects.filter(run=run, status=Verdict.Status.OK, claim__isnull=False)
        .exclude(Exists(labelled))
        .exclude(Exists(imported))
        .order_by("answer_id", "claim_id")
        .values_list("answer_id", "label", "confidence")
    )
    labels: dict[int, list[str]] = defaultdict(list)
    confidences: dict[int, list[float | None]] = defaultdict(list)
    for answer_pk, label, confidence in rows:
        labels[answer_pk].append(label)
        confidences[answer_pk].append(confidence)
    answers = sorted(labels)
    return Frame(answers, [labels[a] for a in answers], [confidences[a] for a in answers])


def check_request(*, budget: Any, design: Any, seed: Any) -> dict[str, str]:
    """Problems with a request, by field: the command, the page's form and the API share it."""
    problems = {}
    if design not in DESIGNS:
        problems["design"] = f"must be one of {', '.join(DESIGNS)}, got {design!r}"
    if isinstance(budget, bool) or not isinstance(budget, (int, float)):
        problems["answers"] = "must be a number of answers"
    elif not budget > 0 or budget != budget or budget == float("inf"):
        problems["answers"] = f"must be a positive number of answers, got {budget!r}"
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        problems["seed"] = "must be an integer"
    elif seed is not None and not 0 <= seed <= MAX_SEED:
        problems["seed"] = f"must lie between 0 and {MAX_SEED}, got {seed}"
    return problems


@transaction.atomic
def draw_sample(
    *, run: JudgeRun, budget: float, design: str = "uniform", seed: int | None = None, user=None
) -> CalibrationDesign:
    """Draw a calibration sample of `budget` expected answers from the run's frame, store the
    design with every sampled answer's π, and move the sampled answers to the front of the
    queue. Raises SampleRefused (with the field at fault) when it cannot be drawn."""
    # late import: heavy library (memory) -- numpy, for the probabilities and the draw
    from evaluation import sampling_design

    problems = check_request(budget=budget, design=design, seed=seed)
    if problems:
        field, message = next(iter(problems.items()))
        raise SampleRefused(f"{field}: {message}", field=field)
    project = run.project
    if project.state != Project.State.OPEN:
        raise SampleRefused(
            "Labelling is not open in this project yet: a calibration sample goes to the "
            "reviewers' queue, and the queue's order is drawn when labelling opens."
        )
    # The project's row first (computed.lock): the answers' rows are locked below, to move
    # them to the front, and the revision moves with the design (what reads it is stale).
    computed.lock(project)
    frame = frame_of(run)
    try:
        plan = sampling_design.inclusion_probabilities(
            design=design, budget=float(budget), frame=frame.confidences
        )
    except ValueError as exc:
        raise SampleRefused(f"answers: {exc}", field="answers") from None
    seed = secrets.randbelow(2**31) if seed is None else int(seed)
    drawn = sampling_design.draw_sample(plan.pi, seed=seed)
    created = CalibrationDesign.objects.create(
        project=project,
        run=run,
        requested=design,
        kind=plan.kind,
        fallback=(plan.fallback or "")[:255],
        budget=float(budget),
        seed=seed,
        frame_answers=len(frame.answers),
        frame_claims=frame.claims,
        frame_judge_unsupported=frame.judge_unsupported,
        frame_confidences=frame.with_confidence,
        pi_min=float(plan.pi.min()),
        pi_max=float(plan.pi.max()),
        created_by=user if user is not None and user.is_authenticated else None,
    )
    sampled = [
        CalibrationSample(design=created, answer_id=answer, pi=float(pi))
        for answer, pi, chosen in zip(frame.answers, plan.pi, drawn, strict=True)
        if chosen
    ]
    CalibrationSample.objects.bulk_create(sampled, batch_size=BATCH)
    to_front([row.answer_id for row in sampled])
    computed.touch(project)
    return created


def design_summary(design, sampled: int) -> str:
    """One design as a person reads it (the command, and the page's notice after drawing)."""
    fallback = f" (asked for active: {design.fallback}, so uniform)" if design.fallback else ""
    return (
        f"Calibration sample {design.pk} of judge '{design.run.name}', {design.kind}{fallback}: "
        f"frame {design.frame_answers} answers ({design.frame_claims} judged claims), expected "
        f"{design.budget:g}, sampled {sampled}; π from {design.pi_min:.4g} to "
        f"{design.pi_max:.4g}; seed {design.seed}."
    )


def to_front(answers: list[int]) -> int:
    """Move answers to the queue's front band: key k in [0, 1) becomes k - 1 in [-1, 0), so
    their order among themselves (the project's spread of each case's answers) is kept. An
    answer already there (drawn before) stays."""
    moved = 0
    for start in range(0, len(answers), BATCH):
        moved += Answer.objects.filter(
            pk__among=answers[start : start + BATCH], queue_key__gte=0
        ).update(queue_key=F("queue_key") - 1)
    return moved


def designs_of(run: JudgeRun) -> list[CalibrationDesign]:
    """The run's designs, newest first, each with `n_sampled`: one query."""
    designs = list(
        CalibrationDesign.objects.filter(run=run)
        .select_related("created_by")
        .annotate(n_sampled=Count("sample"))
        .order_by("-created_at", "-pk")
    )
    for design in designs:  # already loaded: saves the estimate and the page their queries
        design.run, design.project = run, run.project
    return designs


def newest_sample(run: JudgeRun) -> int | None:
    """The id of the run's newest calibration sample, or None: one query."""
    return (
        CalibrationDesign.objects.filter(run=run)
        .order_by("-created_at", "-pk")
        .values_list("pk", flat=True)
        .first()
    )


@dataclass
class DesignReport:
    design: CalibrationDesign
    sampled: int
    decided: int
    waiting: int
    estimate: Any  # sampling_design.DesignEstimate

    def as_dict(self) -> dict[str, Any]:
        """SPEC's `design` block of `calibration --design ID --json`, and what the page shows."""
        d = self.design
        return {
            "id": d.pk,
            "judge": d.run.name,
            "kind": d.kind,
            "requested": d.requested,
            "fallback": d.fallback or None,
            "expected": d.budget,
            "seed": d.seed,
            "frame_answers": d.frame_answers,
            "frame_judge_unsupported": d.frame_judge_unsupported,
            "frame_confidences": d.frame_confidences,
            "pi_range": [d.pi_min, d.pi_max],
            "created_at": d.created_at.isoformat(),
            "created_by": d.created_by.username if d.created_by else None,
            "decided": self.decided,
            "waiting": self.waiting,
            **self.estimate.as_dict(),
        }


def design_estimates(designs: Iterable[CalibrationDesign]) -> list[DesignReport]:
    """Each design's estimate of its frame's unsupported share, from its sampled answers'
    gold as it stands. A fixed number of queries however many designs (they are one run's or
    one project's): the sampled answers, their judged claims, and their gold
    (annotate.gold.imported.gold_in_chunks, at most five queries a chunk)."""
    # late import: heavy library (memory) -- numpy, for the estimate
    from evaluation import sampling_design

    designs = list(designs)
    if not designs:
        return []
    project = designs[0].project
    samples: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for design_pk, answer_pk, pi in (
        CalibrationSample.objects.filter(design__in=designs)
        .order_by("design_id", "answer_id")
        .values_list("design_id", "answer_id", "pi")
    ):
        samples[design_pk].append((answer_pk, pi))
    answers = sorted({a for rows in samples.values() for a, _ in rows})
    runs = {d.run_id for d in designs}
    judged: dict[tuple[int, int], list[tuple[int, str]]] = defaultdict(list)
    for run_pk, answer_pk, claim_pk, label in (
        Verdict.objects.filter(
            run_id__in=runs,
            answer_id__among=answers,
            status=Verdict.Status.OK,
            claim__isnull=False,
        )
        .order_by()
        .values_list("run_id", "answer_id", "claim_id", "label")
    ):
        judged[(run_pk, answer_pk)].append((claim_pk, label))
    gold: dict[int, str | None] = {}
    paired: set[int] = set()
    for answer_pairs, claim_pairs in gold_in_chunks(project, answers):
        paired.update(pair.answer_id for pair in answer_pairs)
        gold.update((pair.claim_id, pair.gold.get("support_binary")) for pair in claim_pairs)
    reports = []
    for design in designs:
        pis, residuals = [], []
        for answer_pk, pi in samples[design.pk]:
            claims = judged[(design.run_id, answer_pk)]
            decided = answer_pk in paired and all(gold.get(c) is not None for c, _ in claims)
            pis.append(pi)
            residuals.append(
                sampling_design.answer_residual(
                    [gold[c] == UNSUPPORTED for c, _ in claims],
                    [support_binary(label) == UNSUPPORTED for _, label in claims],
                )
                if decided
                else None
            )
        estimate = sampling_design.design_estimate(
            frame_claims=design.frame_claims,
            frame_judge_unsupported=design.frame_judge_unsupported,
            sampled_pi=pis,
            sampled_residuals=residuals,
        )
        reports.append(
            DesignReport(
                design=design,
                sampled=estimate.answers_sampled,
                decided=estimate.answers_labelled,
                waiting=estimate.waiting,
                estimate=estimate,
            )
        )
    return reports


def sample_rows(design: CalibrationDesign) -> list[dict[str, Any]]:
    """The sampled answers with their π, in answer order (SPEC's `sampled` list)."""
    return [
        {"answer_id": answer_id, "pi": pi}
        for answer_id, pi in CalibrationSample.objects.filter(design=design)
        .order_by("answer__answer_id")
        .values_list("answer__answer_id", "pi")
    ]
