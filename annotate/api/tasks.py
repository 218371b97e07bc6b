"""Serializers: what goes in and out of the API.

Reviewer-facing representations are built field by field from the selectors' screens, never
with `fields = "__all__"`: a task carries exactly what the labelling page shows (no variant,
no answer id, no case id, no other reviewer's labels), and adding a field is a deliberate act.
"""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework import serializers

from annotate.gold.pairs import ADJUDICATED, AGREED, ANSWER_FIELDS, CLAIM_FIELDS, PENDING, UNION
from annotate.models import (
    FAILURE_LABELS,
    Abstention,
    Assignment,
    CitationVerdict,
    Membership,
    Project,
    Role,
    Severity,
    Support,
)
from annotate.projects.creation import SLUG_ERRORS
from annotate.schema import ANSWER_FIELDS as SCHEMA_ANSWER_FIELDS
from annotate.schema import CLAIM_FIELDS as SCHEMA_CLAIM_FIELDS
from annotate.schema import SCALES, LabelSchema, SchemaInvalid

MAX_QUOTE = 2000
MAX_NOTE = 5000


def blank_choices(choices) -> list:
    return [("", "(none)"), *choices]


class TextField(serializers.CharField):
    """A string in a request, as the schema says: a JSON number or list is refused, where
    DRF's CharField takes 0 for "0"."""

    default_error_messages = {"not_a_string": "Not a valid string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class TextRegexField(serializers.RegexField):
    default_error_messages = TextField.default_error_messages

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class FilePart(serializers.FileField):
    """An upload's `file`: a file part, or a part that names no filename (RFC 7578 only
    recommends one; Django reads such a part as a plain field), taken as the file's text."""

    def to_internal_value(self, data):
        if isinstance(data, str):
            data = SimpleUploadedFile("upload", data.encode("utf-8"))
        return super().to_internal_value(data)


# --- Projects --------------------------------------------------------------------------------


class LabelSchemaSerializer(serializers.Serializer):
    """Which fields the project's reviewers label (annotate.schema); a field left out is
    absent from tasks, labels, agreement, gold and reports."""

    support = serializers.ChoiceField(choices=list(SCALES))
    claim_fields = serializers.MultipleChoiceField(
        choices=list(SCHEMA_CLAIM_FIELDS), required=False, default=list
    )
    answer_fields = serializers.MultipleChoiceField(
        choices=list(SCHEMA_ANSWER_FIELDS), required=False, default=list
    )

    def to_representation(self, instance):
        return instance() if callable(instance) else instance

    def validate(self, data):
        return LabelSchema.parse(
            {
                "support": data["support"],
                "claim_fields": sorted(data.get("claim_fields") or ()),
                "answer_fields": sorted(data.get("answer_fields") or ()),
            }
        )


class ProjectSerializer(serializers.Serializer):
    """A project as its member sees it, with the member's role. Built from a Membership."""

    slug = serializers.SlugField(source="project.slug")
    name = serializers.CharField(source="project.name")
    corpus_version = serializers.CharField(source="project.corpus_version")
    state = serializers.ChoiceField(source="project.state", choices=Project.State.choices)
    overlap = serializers.IntegerField(source="project.overlap")
    guidelines = serializers.CharField(source="project.guidelines")
    created_at = serializers.DateTimeField(source="project.created_at")
    opened_at = serializers.DateTimeField(source="project.opened_at", allow_null=True)
    role = serializers.ChoiceField(choices=Role.choices)
    label_schema = LabelSchemaSerializer(source="project.schema.as_dict", read_only=True)


class ProjectFilterSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=Project.State.choices, required=False)
    role = serializers.ChoiceField(choices=Role.choices, required=False)


class ImportCountsSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    replaced = serializers.IntegerField()
    corrected = serializers.IntegerField(
        help_text="Answers whose latency, cost or retrieval scores a replace corrected in "
        "place, labels kept."
    )


class ImportResultSerializer(serializers.Serializer):
    """What an import did, per kind of record."""

    project = serializers.SlugField(source="project.slug")
    created_project = serializers.BooleanField()
    counts = serializers.DictField(child=ImportCountsSerializer())
    proposed_claims = serializers.IntegerField()

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["counts"] = {
            kind: {
                key: counter.get(key, 0)
                for key in ("created", "unchanged", "replaced", "corrected")
            }
            for kind, counter in instance.counts.items()
        }
        return data


class FileUploadSerializer(serializers.Serializer):
    file = FilePart(help_text="UTF-8 JSONL, one object per line.")


class FormatSerializer(serializers.Serializer):
    """What a multipart upload is: a claimdesk bundle, or a Ragas dataset answered by
    `variant`. A raw body is always a bundle: `?format=` is DRF's renderer override, and a
    Ragas dataset is small enough to go as a file."""

    format = serializers.ChoiceField(
        choices=["bundle", "ragas"],
        default="bundle",
        help_text="`bundle` (claimdesk JSONL) or `ragas` (a Ragas evaluation dataset, JSONL or "
        "CSV: docs/ragas.md).",
    )
    variant = TextField(
        max_length=200,
        required=False,
        allow_blank=True,
        help_text="With format=ragas (required then): the system that wrote the responses.",
    )

    label_schema = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="With format=ragas (optional): the project's label schema as JSON text, "
        'checked as a bundle header\'s label_schema, e.g. `{"support": "binary", '
        '"claim_fields": [], "answer_fields": []}`. Refused once labelling is open unless it '
        "is the project's. A bundle gives its schema in its header line.",
    )

    def validate_label_schema(self, value: str) -> LabelSchema | None:
        if not value.strip():
            return None
        try:
            return LabelSchema.from_json(value)
        except SchemaInvalid as exc:
            raise serializers.ValidationError(exc.problems) from exc

    def validate(self, data):
        if data.get("format") == "ragas" and not data.get("variant", "").strip():
            raise serializers.ValidationError({"variant": ["Required with format=ragas."]})
        if data.get("label_schema") is not None and data.get("format") != "ragas":
            raise serializers.ValidationError(
                {
                    "label_schema": [
                        "Only with format=ragas: a bundle gives its label_schema in its header."
                    ]
                }
            )
        return data


UPLOAD_HELP = "The bundle (UTF-8 JSONL, one object per line), or the Ragas dataset."


class BundleUploadSerializer(FormatSerializer):
    file = FilePart(help_text=UPLOAD_HELP)
    replace = serializers.BooleanField(
        default=False, help_text="Replace changed items that no one has labelled yet."
    )
    confirm_deletions = serializers.BooleanField(
        default=False,
        help_text="Go on when the replace deletes data (answers, their claims and judge "
        "verdicts); without it the API answers 409 with the list.",
    )


class ProjectCreateSerializer(FormatSerializer):
    slug = serializers.SlugField(max_length=80, error_messages=SLUG_ERRORS)
    name = TextField(max_length=200, required=False, allow_blank=True)
    file = FilePart(help_text=UPLOAD_HELP)


class NewProjectQuerySerializer(serializers.Serializer):
    """For a raw JSONL body, the project's slug and name come in the query string."""

    slug = serializers.SlugField(max_length=80, error_messages=SLUG_ERRORS)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)


class ReplaceQuerySerializer(serializers.Serializer):
    replace = serializers.BooleanField(default=False)
    confirm_deletions = serializers.BooleanField(default=False)


class GoldSourceSerializer(serializers.Serializer):
    source = serializers.CharField(
        max_length=200,
        help_text="Where the labels come from (a benchmark's name, an expert, a campaign), "
        "kept with every gold row they give.",
    )
    replace = serializers.BooleanField(
        default=False,
        help_text="Replace the imported gold of answers this file labels differently; "
        "without it such a line is refused.",
    )


class GoldUploadSerializer(GoldSourceSerializer):
    file = serializers.FileField(
        help_text="UTF-8 JSONL, one line per answer: the reviewer-label format without `reviewer`."
    )


class LineErrorsSerializer(serializers.Serializer):
    """An import refused: every problem found, each 'line N: message'; nothing was written.
    A malformed request (no file) has field paths instead, like any other 400."""

    errors = serializers.ListField(child=serializers.CharField(), required=False)


class LabelImportResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    unchanged = serializers.IntegerField()


# --- Members ---------------------------------------------------------------------------------


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "role"]


class MemberFilterSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices, required=False)


class AddMemberSerializer(serializers.Serializer):
    username = TextRegexField(r"^[\w.@+-]+\Z", max_length=150)
    role = serializers.ChoiceField(choices=Role.choices)
    password = TextField(
        required=False,
        allow_blank=True,
        write_only=True,
        max_length=128,
        help_text="Only for a new account; an existing account keeps its password.",
    )


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(
        choices=Role.choices, required=False, help_text="Left out: nothing changes."
    )


# --- Tasks (reviewer) ------------------------------------------------------------------------


class MyTaskSerializer(serializers.ModelSerializer):
    task_number = serializers.IntegerField(source="answer.task_number")

    class Meta:
        model = Assignment
        fields = ["task_number", "status", "taken_at", "submitted_at", "revision"]


class TaskFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=Assignment.Status.choices, required=False)


class CitationSerializer(serializers.Serializer):
    passage_id = serializers.CharField(source="cited_id")
    resolved = serializers.BooleanField(help_text="False: the id resolves to no passage.")


class SchemaFieldsMixin:
    """Leaves out the fields the project's label schema does not label (context "schema")."""

    field_of: dict[str, str] = {}
    kind = "claim"
    always = ("version",)  # not a label field: every schema has it

    def to_representation(self, instance):
        data = super().to_representation(instance)
        schema = self.context.get("schema")
        if schema is None:
            return data
        labelled = schema.claim if self.kind == "claim" else schema.answer
        return {
            k: v for k, v in data.items() if k in self.always or labelled(self.field_of.get(k, k))
        }


class ClaimLabelSerializer(SchemaFieldsMixin, serializers.Serializer):
    """The reviewer's own label of one claim, as saved (drafts included): the fields of the
    project's label schema."""

    field_of = {"evidence_ids": "evidence", "evidence_quote": "evidence"}

    support = serializers.CharField()
    severity = serializers.CharField()
    requires_evidence = serializers.BooleanField()
    evidence_ids = serializers.ListField(child=serializers.CharField())
    evidence_quote = serializers.CharField()
    citations = serializers.DictField(child=serializers.CharField())
    note = serializers.CharField()
    version = serializers.IntegerField(
        help_text="Send it back with your next draft of this claim (see ClaimDraft)."
    )


class TaskClaimSerializer(serializers.Serializer):
    index = serializers.IntegerField(source="claim.ordinal")
    text = serializers.CharField(source="claim.text")
    start = serializers.IntegerField(source="claim.start")
    end = serializers.IntegerField(source="claim.end")
    citations = CitationSerializer(many=True)
    label = ClaimLabelSerializer(allow_null=True)


class AnswerLabelSerializer(SchemaFieldsMixin, serializers.Serializer):
    kind = "answer"

    relevance = serializers.IntegerField(allow_null=True)
    abstention = serializers.CharField()
    failure_labels = serializers.ListField(child=serializers.CharField())
    note = serializers.CharField()
    version = serializers.IntegerField(
        source="draft_version",
        help_text="Send it back with your next draft of the answer (see AnswerDraft).",
    )


class TaskAnswerSerializer(serializers.Serializer):
    text = serializers.CharField(source="answer.text")
    abstained = serializers.BooleanField(source="answer.abstained")
    label = AnswerLabelSerializer(source="assignment")


class PassageSerializer(serializers.Serializer):
    passage_id = serializers.CharField(source="passage.passage_id")
    document = serializers.CharField(source="passage.document")
    location = serializers.CharField(source="passage.location")
    text = serializers.CharField(source="passage.text")
    rank = serializers.IntegerField(allow_null=True, help_text="Null: cited, not retrieved.")
    in_prompt = serializers.BooleanField()
    retrieved = serializers.BooleanField()


class ProgressSerializer(serializers.Serializer):
    """The reviewer's own progress (selectors.Progress): nothing in it moves when another
    reviewer acts on an answer this reviewer holds."""

    submitted = serializers.IntegerField(help_text="Tasks you have submitted in the project.")
    in_progress = serializers.IntegerField(help_text="Tasks you hold in progress.")
    available = serializers.IntegerField(
        help_text="Answers the queue can still give you: not taken by you, still short of "
        "reviewers."
    )


FieldErrors = serializers.DictField(
    child=serializers.ListField(child=serializers.CharField()),
    help_text="Field path (claims.<index>.<field> or answer.<field>) to messages.",
)


class TaskSerializer(serializers.Serializer):
    """One task as the labelling page shows it. Built from selectors.TaskScreen, which never
    loads the variant; the answer id and case id are deliberately not fields."""

    task_number = serializers.IntegerField(source="answer.task_number")
    status = serializers.ChoiceField(source="assignment.status", choices=Assignment.Status.choices)
    label_schema = LabelSchemaSerializer(source="assignment.project.schema.as_dict")
    question = serializers.CharField()
    answer = serializers.SerializerMethodField()
    claims = TaskClaimSerializer(many=True)
    passages = PassageSerializer(many=True)
    progress = serializers.SerializerMethodField()
    missing = serializers.SerializerMethodField(
        help_text="What a submission still needs, by field path; empty when complete."
    )

    def get_answer(self, screen) -> TaskAnswerSerializer:
        return TaskAnswerSerializer(screen, context=self.context).data

    def get_progress(self, screen) -> ProgressSerializer:
        return ProgressSerializer(screen.progress).data

    def get_missing(self, screen) -> dict[str, list[str]]:
        from annotate.labelling.services import screen_errors

        return field_paths(screen_errors(screen, complete=True).fields)


def field_paths(fields: dict[str, str]) -> dict[str, list[str]]:
    """The services' keys ('claim.1.evidence_quote') as API field paths
    ('claims.1.evidence_quote'), each with a list of messages like DRF's own errors."""
    out = {}
    for key, message in fields.items():
        head, _, rest = key.partition(".")
        out[f"claims.{rest}" if head == "claim" else key] = [message]
    return out


class ClaimDraftSerializer(serializers.Serializer):
    """A draft of one claim's label; every field optional (PATCH)."""

    version = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="The label's `version` this draft was made from. When another tab or script "
        "has saved since, the draft is refused with 409 and the stored label; nothing is "
        "written. Leave it out to skip the check.",
    )

    support = serializers.ChoiceField(choices=blank_choices(Support.choices), required=False)
    severity = serializers.ChoiceField(choices=blank_choices(Severity.choices), required=False)
    requires_evidence = serializers.BooleanField(required=False)
    evidence_ids = serializers.ListField(
        child=TextField(max_length=255), required=False, max_length=100
    )
    evidence_quote = TextField(
        required=False, allow_blank=True, max_length=MAX_QUOTE, trim_whitespace=False
    )
    citations = serializers.DictField(
        child=serializers.ChoiceField(choices=blank_choices(CitationVerdict.choices)),
        required=False,
        help_text="Cited passage id to verdict.",
    )
    note = TextField(required=False, allow_blank=True, max_length=MAX_NOTE, trim_whitespace=False)

    def validate_evidence_ids(self, value: list[str]) -> list[str]:
        shown = self.context["passage_ids"]
        unknown = [pid for pid in value if pid not in shown]
        if unknown:
            raise serializers.ValidationError(f"Not a passage of this task: {', '.join(unknown)}.")
        return value

    def validate_citations(self, value: dict[str, str]) -> dict[str, str]:
        cited = self.context["cited_ids"]
        unknown = [pid for pid in value if pid not in cited]
        if unknown:
            raise serializers.ValidationError(f"The claim does not cite {', '.join(unknown)}.")
        return value

    def validate(self, data):
        version = data.pop("version", None)
        data = _labelled_only(data, self.context.get("schema"), "claim")
        return {**data, "version": version}


class ClaimDraftResultSerializer(serializers.Serializer):
    label = ClaimLabelSerializer()
    problems = FieldErrors


class ClaimDraftConflictSerializer(serializers.Serializer):
    detail = serializers.CharField()
    label = ClaimLabelSerializer(
        required=False, help_text="With a stale `version`: the label as stored now."
    )


class AnswerDraftSerializer(serializers.Serializer):
    version = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="The answer label's `version` this draft was made from. When another tab or "
        "script has saved since, the draft is refused with 409 and the stored label; nothing "
        "is written. Leave it out to skip the check.",
    )
    relevance = serializers.ChoiceField(choices=[0, 1, 2], allow_null=True, required=False)
    abstention = serializers.ChoiceField(
        choices=blank_choices(Abstention.choices), allow_null=True, required=False
    )
    failure_labels = serializers.ListField(
        child=serializers.ChoiceField(choices=FAILURE_LABELS), required=False, max_length=10
    )
    note = TextField(required=False, allow_blank=True, max_length=MAX_NOTE, trim_whitespace=False)

    def validate(self, data):
        version = data.pop("version", None)
        data = _labelled_only(data, self.context.get("schema"), "answer")
        return {**data, "version": version}


def _labelled_only(data: dict, schema, kind: str) -> dict:
    """Refuse a value for a field the project's label schema does not label, by its path."""
    if schema is None:
        return data
    labelled = schema.claim if kind == "claim" else schema.answer
    field_of = ClaimLabelSerializer.field_of if kind == "claim" else {}
    off = {
        key: [f"'{key}' is not labelled in this project ({schema.describe()})."]
        for key, value in data.items()
        if not labelled(field_of.get(key, key)) and value not in (None, "", [], {})
    }
    if off:
        raise serializers.ValidationError(off)
    return data


class AnswerDraftResultSerializer(serializers.Serializer):
    label = AnswerLabelSerializer()
    problems = FieldErrors


class AnswerDraftConflictSerializer(serializers.Serializer):
    detail = serializers.CharField()
    label = AnswerLabelSerializer(
        required=False, help_text="With a stale `version`: the answer label as stored now."
    )


class SkipSerializer(serializers.Serializer):
    reason = TextField(max_length=500, help_text="Why you skip (a lead reads it).")


class DetailSerializer(serializers.Serializer):
    detail = serializers.CharField()


# --- Adjudication (lead) ---------------------------------------------------------------------

SLICE_CHOICES = ["answerable", "unanswerable", "adversarial"]


def with_fields_field(serializer_fields, field):
    """Add an output key named 'fields', which a class attribute cannot declare (it would
    hide Serializer.fields)."""
    serializer_fields["fields"] = field
    return serializer_fields


class QueueItemSerializer(serializers.Serializer):
    task_number = serializers.IntegerField()
    score = serializers.IntegerField(help_text="How serious the disagreement is.")

    def get_fields(self):
        pending = serializers.ListField(child=serializers.CharField(), help_text="Pending fields.")
        return with_fields_field(super().get_fields(), pending)


class QueueFilterSerializer(serializers.Serializer):
    slice = serializers.ChoiceField(choices=SLICE_CHOICES, required=False)
    field = serializers.ChoiceField(choices=[*CLAIM_FIELDS, *ANSWER_FIELDS], required=False)


class FieldRowSerializer(serializers.Serializer):
    name = serializers.CharField()
    a = serializers.JSONField(help_text="Reviewer A's value.")
    b = serializers.JSONField(help_text="Reviewer B's value.")
    gold = serializers.JSONField(help_text="The gold value; null while pending.")
    source = serializers.ChoiceField(
        choices=[
            AGREED,
            ADJUDICATED,
            PENDING,
            UNION,
        ]
    )
    rationale = serializers.CharField()
    differs = serializers.BooleanField()


class AdjudicationClaimSerializer(serializers.Serializer):
    index = serializers.IntegerField(source="claim.ordinal")
    text = serializers.CharField(source="claim.text")
    start = serializers.IntegerField(source="claim.start")
    end = serializers.IntegerField(source="claim.end")
    citations = CitationSerializer(many=True)
    notes = serializers.SerializerMethodField(help_text="Each reviewer's note on the claim.")

    def get_fields(self):
        return with_fields_field(super().get_fields(), FieldRowSerializer(many=True))

    def get_notes(self, item) -> dict[str, str]:
        return {"a": item.note_a, "b": item.note_b}


class DecisionHistorySerializer(serializers.Serializer):
    claim = serializers.IntegerField(source="claim.ordinal", allow_null=True, default=None)
    field = serializers.CharField()
    value = serializers.JSONField()
    rationale = serializers.CharField()
    decided_by = serializers.CharField(source="decided_by.username")
    decided_at = serializers.DateTimeField()


class AdjudicationSerializer(serializers.Serializer):
    """Both reviewers' labels side by side with the passages. Built from
    selectors.AdjudicationScreen: the variant stays hidden from the lead too."""

    task_number = serializers.IntegerField(source="answer.task_number")
    version = serializers.IntegerField(help_text="Send it back with your decisions.")
    pending = serializers.IntegerField(help_text="Fields still waiting for a decision.")
    question = serializers.CharField()
    answer = serializers.SerializerMethodField()
    claims = AdjudicationClaimSerializer(many=True)
    answer_fields = FieldRowSerializer(many=True)
    passages = PassageSerializer(many=True)
    history = DecisionHistorySerializer(many=True)
    notes = serializers.SerializerMethodField(help_text="Each reviewer's note on the answer.")

    def get_answer(self, screen) -> dict[str, str | bool]:
        return {"text": screen.answer.text, "abstained": screen.answer.abstained}

    def get_notes(self, screen) -> dict[str, str]:
        return {"a": screen.note_a, "b": screen.note_b}


class DecisionInputSerializer(serializers.Serializer):
    claim = serializers.IntegerField(
        allow_null=True, min_value=0, help_text="Claim index; null for the answer as a whole."
    )
    field = serializers.ChoiceField(choices=[*CLAIM_FIELDS, *ANSWER_FIELDS])
    value = serializers.JSONField(help_text="The gold value for the field.")
    rationale = TextField(
        required=False,
        allow_blank=True,
        max_length=MAX_NOTE,
        default="",
        help_text="Why, for this decision's claim (or the answer); exported with its gold "
        "label. Empty: the request's `rationale` applies.",
    )

    def validate(self, data):
        allowed = ANSWER_FIELDS if data["claim"] is None else CLAIM_FIELDS
        if data["field"] not in allowed:
            where = "the answer" if data["claim"] is None else "a claim"
            raise serializers.ValidationError(
                {"field": f"'{data['field']}' is not a field of {where}."}
            )
        return data


class AdjudicateSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=0)
    rationale = TextField(
        allow_blank=True,
        max_length=MAX_NOTE,
        required=False,
        default="",
        help_text="The rationale of every decision that brings none of its own.",
    )
    decisions = DecisionInputSerializer(many=True, max_length=500)

    def validate(self, data):
        if not data["rationale"].strip() and any(
            not d["rationale"].strip() for d in data["decisions"]
        ):
            raise serializers.ValidationError(
                {"rationale": "Write a rationale: it is exported with the gold label."}
            )
        return data


class ConflictSerializer(serializers.Serializer):
    detail = serializers.CharField()
    version = serializers.IntegerField(help_text="The current version to compare against.")


class GoldFilterSerializer(serializers.Serializer):
    item = serializers.ChoiceField(
        choices=["all", "claim", "answer"],
        required=False,
        default="all",
        help_text="Answer rows are the samples Ragas' EvaluationDataset reads.",
    )
    judge_split = serializers.ChoiceField(
        choices=["all", "judge_dev", "judge_test"], required=False, default="all"
    )
    decided_only = serializers.BooleanField(
        required=False, default=False, help_text="Only rows with nothing left to decide."
    )
    with_context = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Repeat the answer's question, text and passages on claim rows.",
    )
