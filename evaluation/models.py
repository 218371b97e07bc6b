"""Model-judge runs: what a judge said about a project's claims and answers.

A run is stored as imported, raw responses included; how well it agrees with the gold labels is
computed where it is read (evaluation.reports), so a run scored after the gold set changed
shows the change.
"""

from django.conf import settings as django_settings
from django.db import models
from django.db.models import F, Q

from annotate.models import Answer, Claim, Project, Support


class JudgeRunQuerySet(models.QuerySet):
    def with_counts(self) -> "JudgeRunQuerySet":
        """Verdict counts by status and of quotes not found in their evidence."""
        ok, malformed, timeout = (
            Verdict.Status.OK,
            Verdict.Status.MALFORMED,
            Verdict.Status.TIMEOUT,
        )
        return self.annotate(
            n_verdicts=models.Count("verdicts"),
            n_ok=models.Count("verdicts", filter=Q(verdicts__status=ok)),
            n_malformed=models.Count("verdicts", filter=Q(verdicts__status=malformed)),
            n_timeout=models.Count("verdicts", filter=Q(verdicts__status=timeout)),
            n_quote_not_found=models.Count("verdicts", filter=Q(verdicts__quote_found=False)),
        )


class JudgeRun(models.Model):
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="judge_runs", db_index=False
    )
    name = models.CharField(max_length=200, help_text="Names the run for `calibration --judge`.")
    model = models.CharField(max_length=255)
    model_version = models.CharField(max_length=255, blank=True)
    prompt = models.TextField(blank=True)
    prompt_sha256 = models.CharField(max_length=64)
    settings = models.JSONField(default=dict, blank=True)
    source_name = models.CharField(max_length=255, blank=True, help_text="The imported file.")
    imported_at = models.DateTimeField(auto_now_add=True)
    imported_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )

    objects = JudgeRunQuerySet.as_manager()

    class Meta:
        ordering = ["project", "-imported_at", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_judge_run_name")
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def pinned_model(self) -> str:
        return f"{self.model}@{self.model_version}" if self.model_version else self.model


class Verdict(models.Model):
    """One judge response about a claim, or about the answer as a whole when `claim` is null.

    Only `ok` verdicts carry a label that may be scored; malformed and timed-out ones are kept
    (with their raw text) to be counted and shown, never scored.
    """

    class Status(models.TextChoices):
        OK = "ok", "ok"
        MALFORMED = "malformed", "malformed"
        TIMEOUT = "timeout", "timeout"

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="verdicts")
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="+")
    claim = models.ForeignKey(
        Claim, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    line = models.PositiveIntegerField(help_text="Line of the run file the verdict came from.")
    raw = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=Status, default=Status.OK)
    problem = models.CharField(max_length=255, blank=True, help_text="Why it is malformed.")
    label = models.CharField(max_length=24, choices=Support, blank=True)
    relevance = models.PositiveSmallIntegerField(null=True, blank=True)
    evidence_ids = models.JSONField(default=list, blank=True)
    quote = models.TextField(blank=True)
    quote_found = models.BooleanField(
        null=True, help_text="Does the quote occur in one of the evidence passages? Null: no quote."
    )
    confidence = models.FloatField(
        null=True,
        blank=True,
        help_text="The judge's probability that the claim is unsupported, when it gave one: "
        "active calibration samples draw in proportion to its uncertainty.",
    )

    class Meta:
        ordering = ["run", "line"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "claim"],
                condition=Q(claim__isnull=False),
                name="one_verdict_per_claim",
            ),
            models.UniqueConstraint(
                fields=["run", "answer"],
                condition=Q(claim__isnull=True),
                name="one_verdict_per_answer",
            ),
            models.CheckConstraint(
                condition=Q(relevance__isnull=True) | Q(relevance__lte=2),
                name="verdict_relevance_0_to_2",
            ),
            models.CheckConstraint(
                condition=Q(confidence__isnull=True)
                | Q(confidence__gte=0.0, confidence__lte=1.0, claim__isnull=False),
                name="verdict_confidence_0_to_1_on_claims",
            ),
        ]

    def __str__(self) -> str:
        return f"verdict line {self.line} ({self.status})"


class CalibrationDesign(models.Model):
    """A calibration sample (SPEC.md "Calibration samples (design-based)"): answers of the
    frame drawn for human labelling by Poisson sampling with known inclusion probabilities.

    The frame is fixed when the sample is drawn -- the answers with an ok claim verdict of the
    run that no reviewer has submitted a label set for and no imported gold covers -- and is
    kept as the three numbers the design estimate reads (its answers, its judged claims M and
    the judge's unsupported calls among them); the sampled answers are rows of
    CalibrationSample with their π. The seed draws the same sample again from the same frame.
    """

    class Kind(models.TextChoices):
        UNIFORM = "uniform", "uniform"
        ACTIVE = "active", "active"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="designs")
    requested = models.CharField(max_length=10, choices=Kind, help_text="The design asked for.")
    kind = models.CharField(
        max_length=10,
        choices=Kind,
        help_text="The design used: active falls back to uniform without confidences.",
    )
    fallback = models.CharField(
        max_length=255, blank=True, help_text="Why active fell back to uniform."
    )
    budget = models.FloatField(help_text="B, the expected number of sampled answers (Σ π).")
    seed = models.BigIntegerField()
    frame_answers = models.PositiveIntegerField()
    frame_claims = models.PositiveIntegerField(help_text="M: judged (ok) claims in the frame.")
    frame_judge_unsupported = models.PositiveIntegerField(
        help_text="The judge's unsupported calls among the frame's judged claims."
    )
    frame_confidences = models.PositiveIntegerField(
        default=0, help_text="Judged claims of the frame that carry a confidence."
    )
    pi_min = models.FloatField()
    pi_max = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        django_settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )

    class Meta:
        ordering = ["run", "-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(condition=Q(budget__gt=0), name="design_budget_positive"),
            models.CheckConstraint(
                condition=Q(frame_claims__gte=F("frame_judge_unsupported")),
                name="design_judge_calls_within_frame",
            ),
        ]

    def __str__(self) -> str:
        return f"design {self.pk} ({self.kind}, {self.budget:g} of {self.frame_answers})"


class CalibrationSample(models.Model):
    """One answer a calibration design drew, with its inclusion probability π."""

    # No index of its own: unique_design_answer starts with it.
    design = models.ForeignKey(
        CalibrationDesign, on_delete=models.CASCADE, related_name="sample", db_index=False
    )
    # The gold export reads an answer's samples joined to the answer's own row (no query more).
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="calibration_samples")
    pi = models.FloatField()

    class Meta:
        ordering = ["design", "answer"]
        constraints = [
            models.UniqueConstraint(fields=["design", "answer"], name="unique_design_answer"),
            models.CheckConstraint(condition=Q(pi__gt=0.0, pi__lte=1.0), name="sample_pi_0_to_1"),
        ]

    def __str__(self) -> str:
        return f"answer {self.answer_id} in design {self.design_id} (π = {self.pi:.4g})"
