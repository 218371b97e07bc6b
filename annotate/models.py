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
from django.db import models
from django.db.models import F, Q
from simple_history.models import HistoricalRecords

from annotate.schema import LabelSchema, default_schema


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


class Project(models.Model):
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
    guidelines = models.TextField(blank=True)
    state = models.CharField(max_length=10, choices=State, default=State.DRAFT)
    label_schema = models.JSONField(
        default=default_schema,
        help_text="Which fields reviewers label (annotate.schema); locked once labelling opens.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    opened_at = models.DateTimeField(null=True, blank=True)

    objects = ProjectQuerySet.as_manager()
    # The audit trail: who changed the schema, guidelines, overlap or state, and when.
    history = HistoricalRecords()

    class Meta:
        ordering = ["name"]
        constraints = [models.CheckConstraint(condition=Q(overlap__gte=1), name="overlap_gte_1")]

    def __str__(self) -> str:
        return self.name

    @property
    def is_draft(self) -> bool:
        return self.state == self.State.DRAFT

    @property
    def schema(self) -> LabelSchema:
        return LabelSchema.of(self.label_schema)


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


class Answer(models.Model):
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
    # The answer-level draft's save counter. A save names the version it was made from; one
    # naming an older version (another tab saved in between) is refused, never applied.
    draft_version = models.PositiveIntegerField(default=0)
    # Until when the reviewer may undo (reopen) this submission; None: no undo (an imported
    # label set, or not submitted). A lead opens an answer for adjudication only once every
    # undo window on it has closed: no label changes after a lead has read it, and a refused
    # undo depends on the reviewer's own submission time alone.
    undo_until = models.DateTimeField(null=True, blank=True)

    objects = AssignmentQuerySet.as_manager()
    # Status changes (taken, submitted, reopened, released) and imported label sets. A draft
    # save touches the assignment every few seconds; services.labelling skips those (the
    # submitted labels themselves are kept as LabelRevision snapshots).
    history = HistoricalRecords(excluded_fields=["touched_at", "seconds_spent"])

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

    class Meta:
        ordering = ["answer_id", "claim_id", "field", "decided_at", "pk"]
        indexes = [models.Index(fields=["answer", "field"], name="decision_item_idx")]

    def __str__(self) -> str:
        return f"{self.field} = {self.value!r}"


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


class StoredShare(models.Model):
    """One doubly-labelled answer's share of its project's pair summary (gold.AnswerShare),
    kept so that a process without it in memory -- another web worker, a restarted one, one
    whose kept copy expired -- reads it instead of deriving every pair again (1.3 s at 10,000
    answers). Derived data, never edited: `state` is the label state it was derived from
    (gold.label_states) and `generation` the project's content and the code that derived it
    (annotate.stored_shares); a share of another state or generation is derived again."""

    # No foreign-key constraints: an answer a re-import deletes while its share is being
    # derived would fail the request at commit, for a row nobody reads (shares are read by
    # the answers that have label states). Deletions through the ORM still take them along.
    answer = models.OneToOneField(
        Answer, on_delete=models.CASCADE, primary_key=True, related_name="+", db_constraint=False
    )
    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="+", db_index=False, db_constraint=False
    )
    generation = models.CharField(max_length=64)
    state = models.CharField(max_length=200)
    derived_at = models.DateTimeField()
    split = models.CharField(max_length=20)
    answer_state = models.CharField(max_length=20)
    claims_agreed = models.PositiveIntegerField()
    claims_adjudicated = models.PositiveIntegerField()
    claims_pending = models.PositiveIntegerField()
    score = models.IntegerField()
    pending_fields = models.JSONField(default=list)
    beyond_two = models.BooleanField()

    class Meta:
        indexes = [models.Index(fields=["project", "generation"], name="stored_share_idx")]

    def __str__(self) -> str:
        return f"share of answer {self.answer_id}"


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
