"""The labelling domain: a project's frozen data (passages, cases, answers, claims) and the
people who label it.

Identifiers that come from a bundle (`passage_id`, `case_id`, `answer_id`, variant names) are
kept as they are but are unique only within their project. Reviewers never see `answer_id` or
variant names: a task is shown by its opaque `task_number`.

A foreign key that leads a unique constraint or an index of its model has no index of its own
(`db_index=False`): the composite index serves every lookup by the key alone, and each index
is one more write for every row an import copies in or a reviewer saves. The one exception,
Answer.project, says why at the field; tests/test_redundant_indexes.py keeps it so.

Every model of the app is here, about 700 lines, on purpose: the migrations are written
against this one module, and the capabilities' folders (see annotate/__init__.py) all read it.
"""

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from simple_history.models import HistoricalRecords

from annotate.schema import LabelSchema, default_schema
from jobs.fields import OrderedJSONField


class Role(models.TextChoices):
    REVIEWER = "reviewer", "Reviewer"
    LEAD = "lead", "Lead"


class ProjectQuerySet(models.QuerySet):
    def led_by(self, user) -> "ProjectQuerySet":
        if not user.is_authenticated:
            return self.none()
        if user.is_superuser:
            return self
        return self.filter(memberships__user=user, memberships__role=Role.LEAD)


class KeepsRevisions(models.Model):
    """A model with revision counters (annotate.common.computed) that only touch() moves, by
    UPDATE ... SET revision = revision + 1: a save of the whole row (the admin's, a script's)
    writes every other field and leaves them as the database holds them, never as this
    instance read them (that would move a revision back to one a report was computed at)."""

    REVISIONS: tuple[str, ...] = ()

    class Meta:
        abstract = True

    def save(self, *args, update_fields=None, **kwargs):
        if update_fields is None and not self._state.adding and not kwargs.get("force_insert"):
            update_fields = [
                f.name
                for f in self._meta.concrete_fields
                if not f.primary_key and f.name not in self.REVISIONS
            ]
        super().save(*args, update_fields=update_fields, **kwargs)


class Project(KeepsRevisions):
    REVISIONS = ("revision", "content_revision")

    class State(models.TextChoices):
        DRAFT = "draft", "Draft"
        OPEN = "open", "Open for labelling"
        CLOSED = "closed", "Closed"

    slug = models.SlugField(max_length=80, unique=True)
    name = models.CharField(max_length=200)
    corpus_version = models.CharField(max_length=200)
    overlap = models.PositiveSmallIntegerField(
        default=2, help_text="How many reviewers label each answer independently."
    )
    # The current guidelines: the text of GuidelineVersion number `guidelines_version` (0: none
    # written yet), kept on the project so that the labelling page, which reads the project in
    # its one task query, shows the version and its date without a query of its own.
    # annotate.projects.services.update_guidelines writes all three and the version together.
    guidelines = models.TextField(blank=True)
    guidelines_version = models.PositiveIntegerField(default=0)
    guidelines_changed_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=10, choices=State, default=State.DRAFT)
    label_schema = models.JSONField(
        default=default_schema,
        help_text="Which fields reviewers label (annotate.schema); locked once labelling opens.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    opened_at = models.DateTimeField(null=True, blank=True)
    # What computed reports are current for (annotate.common.computed): `revision` moves, in
    # the same transaction, with every write that changes what a report reads;
    # `content_revision` with those that change the answers, claims, cases or variants
    # (not the labels): what reads no label is kept while reviewers label.
    revision = models.PositiveBigIntegerField(default=0, db_default=0, editable=False)
    content_revision = models.PositiveBigIntegerField(default=0, db_default=0, editable=False)
    # Gold checks (annotate.checks): the probability that the queue gives a reviewer a check
    # (a decided answer a lead marked) in place of a new answer. 0 is off.
    check_rate = models.FloatField(
        default=0,
        db_default=0,
        validators=[MinValueValidator(0), MaxValueValidator(1)],
        help_text="Share of tasks served as gold checks, 0 (off) to 1.",
    )

    objects = ProjectQuerySet.as_manager()
    # The audit trail: who changed the schema, guidelines, overlap or state, and when.
    history = HistoricalRecords(excluded_fields=["revision", "content_revision"])

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1), name="overlap_gte_1"),
            models.CheckConstraint(
                condition=Q(check_rate__gte=0) & Q(check_rate__lte=1), name="check_rate_0_to_1"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_draft(self) -> bool:
        return self.state == self.State.DRAFT

    @property
    def schema(self) -> LabelSchema:
        return LabelSchema.of(self.label_schema)


class GuidelineVersion(models.Model):
    """One version of a project's guidelines, numbered 1, 2 ... in the order they were saved:
    every edit of the text adds one, none is ever changed. Label sets (Assignment) and
    decisions (Decision) record the number current when they were made."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="guideline_versions", db_index=False
    )
    number = models.PositiveIntegerField()
    text = models.TextField(blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="Who saved it; empty for the version made from the text found at migration.",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project_id", "number"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "number"], name="one_guideline_version_a_number"
            )
        ]

    def __str__(self) -> str:
        return f"guidelines v{self.number} of project {self.project_id}"


class Membership(models.Model):
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="memberships", db_index=False
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role)
    history = HistoricalRecords()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="one_role_per_project")
        ]

    def __str__(self) -> str:
        return f"{self.user} · {self.role} · {self.project}"


class Passage(models.Model):
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="passages", db_index=False
    )
    passage_id = models.CharField(max_length=255)
    text = models.TextField()
    document = models.CharField(max_length=255, blank=True)
    location = models.CharField(max_length=255, blank=True)
    title = models.CharField(max_length=255, blank=True)
    content_hash = models.CharField(max_length=40)

    class Meta:
        # Orderings name columns (`_id`), never relations: ordering by a relation makes every
        # query join through to that model's own ordering.
        ordering = ["project_id", "passage_id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "passage_id"], name="unique_passage_id")
        ]

    def __str__(self) -> str:
        return self.passage_id


class Variant(models.Model):
    """A system configuration. Lead-only: never shown to reviewers."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="variants", db_index=False
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    model = models.CharField(max_length=255, blank=True)
    settings = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=40)

    class Meta:
        ordering = ["project_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_variant_name")
        ]

    def __str__(self) -> str:
        return self.name


class Case(models.Model):
    class Split(models.TextChoices):
        DEV = "dev", "dev"
        HELDOUT = "heldout", "held-out"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="cases", db_index=False
    )
    case_id = models.CharField(max_length=255)
    question = models.TextField()
    answerable = models.BooleanField()
    adversarial = models.BooleanField()
    required_facts = models.JSONField(default=list, blank=True)
    reference = models.TextField(blank=True, help_text="A reference answer (Ragas' name).")
    forbidden_claims = models.JSONField(default=list, blank=True)
    split = models.CharField(max_length=10, choices=Split, default=Split.DEV)
    checked_documents = models.JSONField(default=list, blank=True)
    tags = models.JSONField(default=list, blank=True)
    # How many evidence entries the bundle named: tells a case that never had evidence from
    # one whose evidence passage has since been removed from the corpus.
    evidence_named = models.PositiveSmallIntegerField(default=0)
    content_hash = models.CharField(max_length=40)

    class Meta:
        ordering = ["project_id", "case_id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "case_id"], name="unique_case_id")
        ]

    def __str__(self) -> str:
        return self.case_id


class Evidence(models.Model):
    """A passage (with a verbatim quote) that the case's author says answers it."""

    case = models.ForeignKey(
        Case, on_delete=models.CASCADE, related_name="evidence", db_index=False
    )
    passage = models.ForeignKey(Passage, on_delete=models.CASCADE, related_name="+")
    ordinal = models.PositiveSmallIntegerField()
    quote = models.TextField(blank=True)
    location = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["case_id", "ordinal"]
        verbose_name_plural = "evidence"
        constraints = [
            models.UniqueConstraint(fields=["case", "ordinal"], name="unique_evidence_ordinal")
        ]

    def __str__(self) -> str:
        return f"{self.case_id}#{self.ordinal}"


class Answer(KeepsRevisions):
    REVISIONS = ("revision",)

    # Its own index, though unique_answer_id starts with it: the narrowest one to count a
    # project's answers from (the project list; 1.0 against 1.5 ms at 10,000 answers).
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="answers")
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="answers", db_index=False)
    variant = models.ForeignKey(Variant, on_delete=models.PROTECT, related_name="answers")
    answer_id = models.CharField(max_length=255)
    sample = models.PositiveIntegerField(default=0)
    text = models.TextField()
    abstained = models.BooleanField(default=False)
    elapsed_ms = models.FloatField(null=True, blank=True)
    request_cost = models.FloatField(null=True, blank=True)
    # The opaque number reviewers see ("Task 17"); assigned shuffled when labelling opens so
    # neither the number nor the queue order reveals the variant or the bundle order.
    task_number = models.PositiveIntegerField(null=True, blank=True)
    # Where the answer sits in the queue, a number in [0, 1) drawn when labelling opens (or
    # when it is imported into an open project): each reviewer walks the queue from their own
    # secret starting point, and late imports land spread among the rest, not in a block.
    # Answers a calibration sample drew move to [-1, 0), the band served first
    # (evaluation.judges.samples.to_front).
    queue_key = models.FloatField(null=True, blank=True)
    # True once the answer holds `overlap` assignments: the queue's index skips full answers,
    # so taking the next task costs the same at the start and at the end of a project.
    full = models.BooleanField(default=False)
    content_hash = models.CharField(max_length=40)
    # Moves with every write that changes this answer's share of the pair summary (its
    # submitted label sets, its decisions, its claims, its case, the schema), in the same
    # transaction as the project's revision (annotate.common.computed).
    revision = models.PositiveBigIntegerField(default=0, db_default=0, editable=False)

    class Meta:
        ordering = ["project_id", "answer_id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "answer_id"], name="unique_answer_id"),
            models.UniqueConstraint(
                fields=["case", "variant", "sample"], name="unique_case_variant_sample"
            ),
            models.UniqueConstraint(fields=["project", "task_number"], name="unique_task_number"),
            models.CheckConstraint(condition=Q(elapsed_ms__gte=0), name="elapsed_ms_gte_0"),
            models.CheckConstraint(condition=Q(request_cost__gte=0), name="request_cost_gte_0"),
        ]
        indexes = [
            models.Index(fields=["project", "task_number"], name="answer_queue_idx"),
            models.Index(
                fields=["project", "queue_key"],
                name="answer_open_queue_idx",
                condition=Q(full=False, queue_key__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return self.answer_id


class AnswerCorrection(models.Model):
    """What a `replace` re-import corrected in an answer in place: fields no reviewer sees
    (latency, cost, retrieval scores), which may change even after labelling, since no label
    depends on them. `changes` maps each field to {"old": ..., "new": ...}; an old value that
    JSON cannot hold (NaN, from before imports refused it) is kept as its text."""

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="corrections")
    changes = models.JSONField()
    labelled = models.BooleanField(help_text="Whether reviewers had labelled the answer.")
    corrected_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["answer_id", "corrected_at", "pk"]

    def __str__(self) -> str:
        return f"correction of {self.answer_id}: {', '.join(self.changes)}"


class RetrievedPassage(models.Model):
    answer = models.ForeignKey(
        Answer, on_delete=models.CASCADE, related_name="retrieved", db_index=False
    )
    passage = models.ForeignKey(Passage, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveIntegerField()
    score = models.FloatField(null=True, blank=True)
    in_prompt = models.BooleanField(default=False)

    class Meta:
        ordering = ["answer_id", "rank"]
        constraints = [
            models.UniqueConstraint(fields=["answer", "rank"], name="unique_rank_per_answer"),
            models.UniqueConstraint(fields=["answer", "passage"], name="unique_passage_per_answer"),
            models.CheckConstraint(condition=Q(rank__gte=1), name="rank_gte_1"),
        ]

    def __str__(self) -> str:
        return f"#{self.rank}"


class Claim(models.Model):
    """One claim of an answer: a span of the answer text. Immutable once labelling opens."""

    answer = models.ForeignKey(
        Answer, on_delete=models.CASCADE, related_name="claims", db_index=False
    )
    ordinal = models.PositiveIntegerField(help_text="0-based index within the answer.")
    text = models.TextField()
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    proposed = models.BooleanField(
        default=False, help_text="Proposed by the sentence splitter, not imported."
    )
    history = HistoricalRecords()  # a lead's boundary edits

    class Meta:
        ordering = ["answer_id", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["answer", "ordinal"], name="unique_claim_ordinal"),
            models.CheckConstraint(condition=Q(end__gt=F("start")), name="claim_span_order"),
        ]

    def __str__(self) -> str:
        return self.text


class Citation(models.Model):
    """A passage id the claim cites. `passage` is null when the id resolves to nothing: such a
    citation is kept and labelled `citation_not_found`, never dropped."""

    claim = models.ForeignKey(
        Claim, on_delete=models.CASCADE, related_name="citations", db_index=False
    )
    ordinal = models.PositiveSmallIntegerField()
    cited_id = models.CharField(max_length=255)
    passage = models.ForeignKey(
        Passage, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["claim_id", "ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["claim", "cited_id"], name="unique_citation"),
        ]

    def __str__(self) -> str:
        return self.cited_id

    @property
    def resolved(self) -> bool:
        return self.passage_id is not None


class Judgment(models.Model):
    """Graded relevance of a passage to a case: 0 irrelevant, 1 helpful, 3 directly sufficient."""

    case = models.ForeignKey(
        Case, on_delete=models.CASCADE, related_name="judgments", db_index=False
    )
    passage = models.ForeignKey(Passage, on_delete=models.CASCADE, related_name="+")
    grade = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["case_id", "passage_id"]
        constraints = [
            models.UniqueConstraint(fields=["case", "passage"], name="unique_judgment"),
            models.CheckConstraint(condition=Q(grade__gte=0), name="grade_gte_0"),
        ]

    def __str__(self) -> str:
        return f"grade {self.grade}"


class Support(models.TextChoices):
    SUPPORTED = "supported", "supported"
    CONTRADICTED = "contradicted", "contradicted"
    INSUFFICIENT = "insufficient_evidence", "insufficient evidence"
    # The binary scale's second value (a binary project's reviewers, or any judge).
    UNSUPPORTED = "unsupported", "unsupported"


class Severity(models.TextChoices):
    NONE = "none", "none"
    MINOR = "minor", "minor"
    MAJOR = "major", "major"
    CRITICAL = "critical", "critical"


class CitationVerdict(models.TextChoices):
    SUPPORTS = "supports", "supports"
    DOES_NOT_SUPPORT = "does_not_support", "does not support"
    NOT_FOUND = "citation_not_found", "citation not found"


class Abstention(models.TextChoices):
    APPROPRIATE = "appropriate", "appropriate"
    UNNECESSARY = "unnecessary", "unnecessary"


FAILURE_LABELS = ("missing_evidence", "unsupported_claim", "wrong_citation", "false_abstention")


def failure_label_words(label: str) -> str:
    """A failure label as a page shows it: missing_evidence → "Missing evidence" (the
    identifier stays in files, the API and CSV headers)."""
    return str(label).replace("_", " ").capitalize()


RELEVANCE_RUBRIC = {
    0: "off-topic",
    1: "partial coverage",
    2: "direct coverage of every requested part",
}


class AssignmentQuerySet(models.QuerySet):
    def for_reviewer(self, user) -> "AssignmentQuerySet":
        """A reviewer's own assignments, and nothing else."""
        return self.filter(reviewer=user)

    def holding(self) -> "AssignmentQuerySet":
        """Assignments that occupy one of an answer's overlap slots."""
        return self.exclude(status=Assignment.Status.RELEASED)


class Assignment(models.Model):
    """One reviewer's work on one answer: the answer-level label lives here, claim-level
    labels in ClaimLabel. A released (skipped or abandoned) row stays so the reviewer is not
    handed the same answer again."""

    class Status(models.TextChoices):
        IN_PROGRESS = "in_progress", "in progress"
        SUBMITTED = "submitted", "submitted"
        RELEASED = "released", "released"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    answer = models.ForeignKey(
        Answer, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments"
    )
    status = models.CharField(max_length=12, choices=Status, default=Status.IN_PROGRESS)
    taken_at = models.DateTimeField(auto_now_add=True)
    touched_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    release_reason = models.TextField(blank=True)
    seconds_spent = models.PositiveIntegerField(default=0)
    relevance = models.PositiveSmallIntegerField(null=True, blank=True)
    abstention = models.CharField(max_length=12, choices=Abstention, blank=True)
    failure_labels = models.JSONField(default=list, blank=True)
    note = models.TextField(blank=True)
    revision = models.PositiveIntegerField(default=0, help_text="How many times submitted.")
    # The project's guidelines version when the label set was submitted (or imported); 0: the
    # project had no guidelines then. A reopened and resubmitted task takes the version of
    # its last submission.
    guideline_version = models.PositiveIntegerField(default=0)
    # The answer-level draft's save counter. A save names the version it was made from; one
    # naming an older version (another tab saved in between) is refused, never applied.
    draft_version = models.PositiveIntegerField(default=0)
    # Until when the reviewer may undo (reopen) this submission; None: no undo (an imported
    # label set, or not submitted). A lead opens an answer for adjudication only once every
    # undo window on it has closed: no label changes after a lead has read it, and a refused
    # undo depends on the reviewer's own submission time alone.
    undo_until = models.DateTimeField(null=True, blank=True)
    # A gold check served by the queue (annotate.checks): the reviewer labels a decided answer
    # as any task; the label set is read only against gold (reviewer accuracy), never by
    # agreement, gold, adjudication or calibration. Only lead-side code reads this flag;
    # nothing a reviewer can reach shows it. A database default too: bulk writes (COPY) name
    # their columns, and those written before checks existed leave it out.
    is_check = models.BooleanField(default=False, db_default=False)

    objects = AssignmentQuerySet.as_manager()
    # Status changes (taken, submitted, reopened, released) and imported label sets. A draft
    # save touches the assignment every few seconds; services.labelling skips those (the
    # submitted labels themselves are kept as LabelRevision snapshots).
    history = HistoricalRecords(excluded_fields=["touched_at", "seconds_spent", "is_check"])

    class Meta:
        ordering = ["project_id", "reviewer_id", "taken_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["answer", "reviewer"], name="one_assignment_per_reviewer"
            ),
            models.CheckConstraint(condition=Q(relevance__lte=2), name="relevance_0_to_2"),
        ]
        indexes = [
            models.Index(fields=["project", "reviewer", "status"], name="assignment_reviewer_idx"),
            models.Index(fields=["answer", "status"], name="assignment_answer_idx"),
            # The tasks in progress, oldest touch first: what next_task releases as abandoned
            # on every call, read without walking the project's submitted assignments.
            models.Index(
                fields=["project", "touched_at"],
                condition=Q(status="in_progress"),
                name="assignment_in_progress_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk} ({self.status})"


class ClaimLabel(models.Model):
    assignment = models.ForeignKey(
        Assignment, on_delete=models.CASCADE, related_name="claim_labels", db_index=False
    )
    claim = models.ForeignKey(Claim, on_delete=models.CASCADE, related_name="labels")
    support = models.CharField(max_length=24, choices=Support, blank=True)
    severity = models.CharField(max_length=10, choices=Severity, blank=True)
    requires_evidence = models.BooleanField(default=True)
    evidence_ids = models.JSONField(default=list, blank=True)
    evidence_quote = models.TextField(blank=True)
    citations = models.JSONField(default=dict, blank=True, help_text="cited id -> verdict")
    note = models.TextField(blank=True)
    # How many times this draft was saved (see Assignment.draft_version).
    version = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["assignment_id", "claim_id"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "claim"], name="one_label_per_claim")
        ]

    def __str__(self) -> str:
        return f"label {self.pk}"


class Preferences(models.Model):
    """A person's settings for the labelling screen. No row means the defaults."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="claimdesk_preferences"
    )
    # WCAG 2.1.4: single-key shortcuts can be turned off (speech input users type letters).
    single_key_shortcuts = models.BooleanField(
        default=True, help_text="Letter and number keys act on the labelling screen."
    )

    class Meta:
        verbose_name_plural = "preferences"

    def __str__(self) -> str:
        return f"preferences of {self.user}"


class LabelRevision(models.Model):
    """A snapshot of a submitted label set. Submissions never overwrite silently: every
    submission, first or later, adds one."""

    assignment = models.ForeignKey(
        Assignment, on_delete=models.CASCADE, related_name="revisions", db_index=False
    )
    number = models.PositiveIntegerField()
    labels = models.JSONField()
    source = models.CharField(max_length=10, default="browser")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["assignment_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["assignment", "number"], name="unique_revision")
        ]

    def __str__(self) -> str:
        return f"revision {self.number}"


class Decision(models.Model):
    """A lead's adjudication of one field of one item (a claim, or the answer when `claim` is
    null). Gold is derived where it is read: the latest decision for an item's field, else the
    reviewers' shared value when they agree. Decisions are never updated, only added, so every
    decision is kept with who made it and when."""

    answer = models.ForeignKey(
        Answer, on_delete=models.CASCADE, related_name="decisions", db_index=False
    )
    claim = models.ForeignKey(
        Claim, on_delete=models.CASCADE, null=True, blank=True, related_name="decisions"
    )
    field = models.CharField(max_length=40)
    value = models.JSONField(null=True)
    rationale = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(auto_now_add=True)
    # The project's guidelines version the lead decided under (0: none written then).
    guideline_version = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["answer_id", "claim_id", "field", "decided_at", "pk"]
        indexes = [models.Index(fields=["answer", "field"], name="decision_item_idx")]

    def __str__(self) -> str:
        return f"{self.field} = {self.value!r}"


class Reaudit(models.Model):
    """A lead's answer, after the guidelines changed, to gold decided under an older version
    (annotate.adjudication.reaudit): `keep` says the answer's gold stands under version
    `guideline_version`; `reopen` puts the answer back in the adjudication queue until a lead
    saves its adjudication again (`closed_at`, under `closed_version`). Rows are only added,
    and closed once."""

    class Action(models.TextChoices):
        KEEP = "keep", "kept"
        REOPEN = "reopen", "re-opened"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="reaudits", db_index=False
    )
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="reaudits")
    action = models.CharField(max_length=10, choices=Action)
    guideline_version = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    closed_version = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["project_id", "created_at", "pk"]
        indexes = [models.Index(fields=["project", "action"], name="reaudit_project_idx")]

    def __str__(self) -> str:
        return f"{self.action} of {self.answer_id} under v{self.guideline_version}"


class Flag(models.Model):
    """A reviewer's "flag for the lead" on one of their own tasks: a problem with the task
    itself (a broken answer, wrong passages), with a reason and the reviewer's words. Listed
    in the leads' adjudication queue until a lead resolves it. The reviewer sees their own
    flags only, and nothing a lead writes in resolving one."""

    class Reason(models.TextChoices):
        BROKEN_ANSWER = "broken_answer", "The answer is broken or unreadable"
        WRONG_PASSAGES = "wrong_passages", "The passages are wrong or missing"
        UNCLEAR_QUESTION = "unclear_question", "The question is unclear"
        GUIDELINES = "guidelines", "The guidelines do not cover this case"
        OTHER = "other", "Something else"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="flags", db_index=False
    )
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="flags")
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="flags"
    )
    reason = models.CharField(max_length=20, choices=Reason)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
    )
    resolution = models.TextField(
        blank=True, help_text="The lead's words; never shown to the reviewer."
    )

    class Meta:
        ordering = ["project_id", "created_at", "pk"]
        constraints = [
            # One open flag per reviewer and task: a second one is the first one, refused.
            models.UniqueConstraint(
                fields=["answer", "reviewer"],
                condition=Q(resolved_at__isnull=True),
                name="one_open_flag_per_reviewer_task",
            ),
        ]
        indexes = [
            # The leads' list of open flags, oldest first.
            models.Index(
                fields=["project", "created_at"],
                condition=Q(resolved_at__isnull=True),
                name="flag_open_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"flag {self.reason} on {self.answer_id}"


class GoldCheck(models.Model):
    """A decided answer (agreed or adjudicated gold, annotate.gold) a lead marked as a check:
    the queue serves it to reviewers who never labelled it, at the project's check rate, and
    their labels are compared with its gold (annotate.checks). One row per answer; unmarking
    deletes it (label sets already made on it stay check label sets)."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="gold_checks", db_index=False
    )
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="gold_checks")
    marked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    marked_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project_id", "marked_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["project", "answer"], name="one_check_per_answer")
        ]

    def __str__(self) -> str:
        return f"gold check {self.answer_id}"


class DriftClearance(models.Model):
    """A lead cleared a reviewer's drift flag (evaluation.quality.drift) after ``trials`` of
    their check claims, in the chart's order: the chart runs again from 0 after them, and the
    flag is up only for an alarm raised later. Every clearance is kept (who, when, after how
    many: the record of the lead's action); the latest one of a reviewer counts."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="drift_clearances", db_index=False
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    trials = models.PositiveIntegerField(
        help_text="The reviewer's check claims (drift trials) the lead had seen when clearing."
    )
    cleared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    cleared_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["project_id", "reviewer_id", "cleared_at", "pk"]
        indexes = [
            models.Index(
                fields=["project", "reviewer", "cleared_at"], name="drift_clearance_latest"
            )
        ]

    def __str__(self) -> str:
        return f"drift of {self.reviewer_id} cleared after {self.trials}"


class AdjudicationLock(models.Model):
    """Marks that adjudication of an answer has started (reviewers can no longer reopen it)
    and carries the version two leads compare to detect a conflicting save."""

    answer = models.OneToOneField(Answer, on_delete=models.CASCADE, related_name="adjudication")
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    started_at = models.DateTimeField(auto_now_add=True)
    version = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"adjudication of {self.answer_id} (v{self.version})"


class ComputedReport(models.Model):
    """A result computed from a project's data, stored with the revision of its scope and
    the code version it was computed with (annotate.common.computed): current iff both are
    still what they are now. Derived data, never edited. `kind` is a registered report kind,
    `key` names which one (a judge run and split, two variants, an answer's pk for a pair
    share), `answer` is set for what is kept per answer (pair shares)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+", db_index=False)
    kind = models.CharField(max_length=40)
    key = models.CharField(max_length=200, blank=True)
    # No foreign-key constraint: an answer a re-import deletes while its share is being
    # derived would fail the request at commit, for a row nobody reads. Deletions through the
    # ORM still take the rows along (on_delete), by this column's index.
    answer = models.ForeignKey(
        Answer,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="+",
        db_constraint=False,
    )
    revision = models.BigIntegerField(null=True, blank=True)
    code_version = models.CharField(max_length=12, blank=True)
    result = OrderedJSONField(null=True, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True, help_text="How long it took to compute.")
    # The revision a worker was asked to compute it for, and when: one request per revision.
    wanted = models.BigIntegerField(null=True, blank=True)
    wanted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "kind", "key"], name="one_computed_report")
        ]

    def __str__(self) -> str:
        return f"{self.kind} of {self.project_id} {self.key}".strip()


class GoldImport(models.Model):
    """One file of gold from elsewhere (`import_gold`): one adjudicated label per answer, made
    outside this project's double-blind labelling -- a benchmark, an expert's pass, an earlier
    campaign. Its answers' rows (ImportedGold) are gold with source `imported`; this row is
    their provenance, kept when a later file replaces them (the file's history)."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="gold_imports", db_index=False
    )
    source = models.CharField(max_length=200, help_text="Where the labels come from (--source).")
    file_name = models.CharField(max_length=255, help_text="The imported file, as it was named.")
    sha256 = models.CharField(max_length=64, help_text="SHA-256 of the file's bytes.")
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )
    imported_at = models.DateTimeField(auto_now_add=True)
    answer_count = models.PositiveIntegerField(default=0, help_text="Answers it gave gold.")
    claim_count = models.PositiveIntegerField(default=0, help_text="Claims it gave gold.")
    replaced_count = models.PositiveIntegerField(
        default=0, help_text="Of its answers, those whose earlier imported gold it replaced."
    )

    class Meta:
        ordering = ["project_id", "imported_at", "pk"]
        indexes = [models.Index(fields=["project", "imported_at"], name="gold_import_idx")]

    def __str__(self) -> str:
        return f"gold from {self.source} ({self.file_name})"


class ImportedGold(models.Model):
    """One answer's imported gold: its answer-level fields (those of the reviewer-label
    format), its claims' in ImportedClaimGold. One per answer at a time: a later file replaces
    it only when asked to (`--replace`). Never shown to reviewers, never part of agreement."""

    gold_import = models.ForeignKey(GoldImport, on_delete=models.CASCADE, related_name="answers")
    answer = models.OneToOneField(Answer, on_delete=models.CASCADE, related_name="imported_gold")
    line = models.PositiveIntegerField(help_text="The line of the file it came from.")
    relevance = models.PositiveSmallIntegerField(null=True, blank=True)
    abstention = models.CharField(max_length=12, choices=Abstention, blank=True)
    failure_labels = models.JSONField(default=list, blank=True)
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["answer_id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(relevance__isnull=True) | Q(relevance__lte=2),
                name="imported_relevance_0_to_2",
            )
        ]

    def __str__(self) -> str:
        return f"imported gold of {self.answer_id}"


class ImportedClaimGold(models.Model):
    """One claim's imported gold, with the claim-level fields of the reviewer-label format."""

    gold = models.ForeignKey(ImportedGold, on_delete=models.CASCADE, related_name="claims")
    claim = models.OneToOneField(Claim, on_delete=models.CASCADE, related_name="imported_gold")
    support = models.CharField(max_length=24, choices=Support, blank=True)
    severity = models.CharField(max_length=10, choices=Severity, blank=True)
    requires_evidence = models.BooleanField(default=True)
    evidence_ids = models.JSONField(default=list, blank=True)
    evidence_quote = models.TextField(blank=True)
    citations = models.JSONField(default=dict, blank=True, help_text="cited id -> verdict")
    note = models.TextField(blank=True)

    class Meta:
        ordering = ["gold_id", "claim_id"]

    def __str__(self) -> str:
        return f"imported gold of claim {self.claim_id}"


class GoldRelease(models.Model):
    """A frozen, named version of a project's gold set (annotate.releases): the JSONL export's
    exact bytes as they were when it was made, kept in the "jobs" storage under `file`, with
    their SHA-256, the options it was made with and its dataset card. Never changed once made:
    later labels and decisions make a new release, never a different one of the same name."""

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="gold_releases", db_index=False
    )
    name = models.CharField(max_length=64, help_text="v1, 2026-12-07 ... unique in the project.")
    item = models.CharField(max_length=10, default="all", help_text="claim, answer or all rows.")
    split = models.CharField(max_length=10, default="all", help_text="The judge split, or all.")
    decided_only = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    schema_version = models.CharField(max_length=40, help_text="The gold rows' format version.")
    export_id = models.CharField(max_length=64, help_text="The gold export's fingerprint.")
    row_count = models.PositiveIntegerField(default=0)
    # Rows by (item, judge split): the dataset folder's files (annotate.releases.folder).
    partitions = models.JSONField(default=dict, blank=True)
    sha256 = models.CharField(max_length=64, help_text="SHA-256 of the JSONL file's bytes.")
    size = models.BigIntegerField(default=0, help_text="The JSONL file's size in bytes.")
    file = models.CharField(max_length=255, help_text='The JSONL file in the "jobs" storage.')
    card = models.TextField(help_text="The dataset card (Hugging Face README.md).")

    class Meta:
        ordering = ["project_id", "-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="unique_release_name")
        ]

    def __str__(self) -> str:
        return f"gold release {self.name} of {self.project_id}"


class WebhookEndpoint(models.Model):
    """Where a project's events are sent (annotate.webhooks): a URL a lead registered, the
    events it subscribes to, and the Standard Webhooks secret its deliveries are signed with
    (`whsec_` and base64, generated here; kept as it is, since signing needs it)."""

    class Event(models.TextChoices):
        TASK_SUBMITTED = "task.submitted", "Task submitted"
        DISPUTE_DECIDED = "dispute.decided", "Dispute decided"
        RELEASE_MADE = "release.made", "Release made"
        JOB_FINISHED = "job.finished", "Job finished"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="webhook_endpoints")
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=200, blank=True)
    events = models.JSONField(default=list, help_text="The Event values it subscribes to.")
    secret = models.CharField(max_length=100)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project_id", "created_at", "pk"]

    def __str__(self) -> str:
        return f"webhook {self.url} ({self.project_id})"


class WebhookDelivery(models.Model):
    """One event sent (or to be sent) to one endpoint: written in the transaction of the
    event itself, sent by a worker's task, retried with backoff until delivered or failed.
    `message_id` is the Standard Webhooks `webhook-id`: the same for every attempt and for
    every endpoint an event went to, so a receiver can drop a repeat."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting to be sent"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries", db_index=False
    )
    event = models.CharField(max_length=40)
    message_id = models.CharField(max_length=40)
    payload = models.JSONField()
    status = models.CharField(max_length=10, choices=Status, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["endpoint", "message_id"], name="one_delivery_a_message"
            )
        ]
        indexes = [
            models.Index(fields=["endpoint", "-created_at"], name="webhook_delivery_log"),
            models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due"),
        ]

    def __str__(self) -> str:
        return f"{self.event} {self.message_id} -> {self.endpoint_id} ({self.status})"
