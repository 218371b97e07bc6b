"""The reviewer's tasks in the API, addressed by task number (never by answer id): the next
task, one's submitted tasks, a task as the screen shows it, its drafts (one claim, the whole
answer), submitting, skipping and reopening it. Reviewers reach answers only through their
own assignments (`annotate.labelling.selectors.task_for_reviewer`).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from annotate.api.base import (
    CONFLICT_409,
    ERROR_400,
    MAX_NOTE,
    MAX_QUOTE,
    ListView,
    ReviewerView,
    TextField,
    blank_choices,
    flatten_errors,
    query,
    refused,
    responses,
)
from annotate.api.projects import LabelSchemaSerializer
from annotate.common.errors import ServiceError
from annotate.labelling import selectors
from annotate.labelling.services import (
    StaleDraft,
    reopen_task,
    save_answer_label,
    save_claim_label,
    screen_errors,
    submit_labels,
)
from annotate.models import (
    FAILURE_LABELS,
    Abstention,
    Assignment,
    CitationVerdict,
    Severity,
    Support,
)
from annotate.queue.services import next_task, release_task


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


NUMBER = OpenApiParameter("number", int, OpenApiParameter.PATH, description="The task number.")


class TaskView(ReviewerView):
    """A reviewer's own task, by number; anyone else's answers 404."""

    def assignment(self, number: int) -> Assignment:
        assignment = selectors.task_for_reviewer(self.request.user, self.project, number)
        if assignment is None:
            raise NotFound()
        return assignment

    def task(self, assignment: Assignment) -> Response:
        screen = selectors.task_screen(assignment)
        context = {"schema": assignment.project.schema}
        return Response(TaskSerializer(screen, context=context).data)


class NextTask(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="Take the next task (or get back the one in progress)",
        request=None,
        responses=responses(
            {200: TaskSerializer, 204: OpenApiResponse(description="Nothing left to label.")},
            r409=CONFLICT_409,
        ),
    )
    def post(self, request, slug):
        try:
            assignment = next_task(project=self.project, reviewer=request.user)
        except ServiceError as exc:
            return refused(exc)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return self.task(assignment)


class MyTasks(ListView, ReviewerView):
    serializer_class = MyTaskSerializer

    def get_queryset(self):
        filters = query(TaskFilterSerializer, self.request)
        tasks = (
            Assignment.objects.for_reviewer(self.request.user)
            .filter(project=self.project)
            .select_related("answer")
        )
        if "status" in filters:
            tasks = tasks.filter(status=filters["status"])
        return tasks.order_by("taken_at", "answer__task_number")  # never the rows' order

    @extend_schema(
        tags=["tasks"],
        summary="Your tasks in this project",
        parameters=[TaskFilterSerializer],
        responses=responses(MyTaskSerializer(many=True), r400=ERROR_400),
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class TaskDetail(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="A task as the labelling page shows it",
        parameters=[NUMBER],
        responses=responses(TaskSerializer),
    )
    def get(self, request, slug, number):
        return self.task(self.assignment(number))


class ClaimDraft(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="Save a draft of one claim's label",
        description="Values that break a rule (a quote not in the chosen passage) are kept and "
        "reported in `problems`; submitting refuses until they are fixed.",
        parameters=[
            NUMBER,
            OpenApiParameter("index", int, OpenApiParameter.PATH, description="0-based claim."),
        ],
        request=ClaimDraftSerializer,
        responses=responses(
            ClaimDraftResultSerializer,
            r400=ERROR_400,
            r409=OpenApiResponse(
                ClaimDraftConflictSerializer,
                description="The task is submitted (`detail` only), or the label has moved on "
                "since `version` (the stored label comes with it); nothing was written.",
            ),
        ),
    )
    def patch(self, request, slug, number, index):
        assignment = self.assignment(number)
        screen = selectors.task_screen(assignment, progress=False)
        row = next((r for r in screen.claims if r.claim.ordinal == index), None)
        if row is None:
            raise NotFound()
        serializer = ClaimDraftSerializer(
            data=request.data,
            context={
                "passage_ids": set(screen.shown),
                "cited_ids": {c.cited_id for c in row.citations},
                "schema": assignment.project.schema,
            },
        )
        if not serializer.is_valid():
            raise ValidationError(flatten_errors(serializer.errors, f"claims.{index}"))
        data = dict(serializer.validated_data)
        version = data.pop("version", None)
        schema = assignment.project.schema
        try:
            label, errors = save_claim_label(
                assignment=assignment,
                claim=row.claim,
                data=data,
                citations=row.citations,
                shown=screen.shown,
                version=version,
                stored=row.label,
            )
        except StaleDraft as exc:
            current = ClaimLabelSerializer(exc.current, context={"schema": schema}).data
            return Response({"detail": str(exc), "label": current}, status=status.HTTP_409_CONFLICT)
        except ServiceError as exc:
            return refused(exc)
        return Response(
            {
                "label": ClaimLabelSerializer(
                    label, context={"schema": assignment.project.schema}
                ).data,
                "problems": field_paths(errors.fields),
            }
        )


class AnswerDraft(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="Save a draft of the answer-level label",
        parameters=[NUMBER],
        request=AnswerDraftSerializer,
        responses=responses(
            AnswerDraftResultSerializer,
            r400=ERROR_400,
            r409=OpenApiResponse(
                AnswerDraftConflictSerializer,
                description="The task is submitted (`detail` only), or the answer label has "
                "moved on since `version` (the stored label comes with it); nothing was written.",
            ),
        ),
    )
    def patch(self, request, slug, number):
        assignment = self.assignment(number)
        schema = assignment.project.schema
        serializer = AnswerDraftSerializer(data=request.data, context={"schema": schema})
        if not serializer.is_valid():
            raise ValidationError(flatten_errors(serializer.errors, "answer"))
        data = dict(serializer.validated_data)
        version = data.pop("version", None)
        try:
            assignment, errors = save_answer_label(
                assignment=assignment, data=data, version=version
            )
        except StaleDraft as exc:
            current = AnswerLabelSerializer(exc.current, context={"schema": schema}).data
            return Response({"detail": str(exc), "label": current}, status=status.HTTP_409_CONFLICT)
        except ServiceError as exc:
            return refused(exc)
        return Response(
            {
                "label": AnswerLabelSerializer(assignment, context={"schema": schema}).data,
                "problems": field_paths(errors.fields),
            }
        )


class Submit(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="Submit the task's labels",
        description="400 lists every missing or invalid label by field path, such as "
        "`claims.1.evidence_quote` or `answer.relevance`.",
        parameters=[NUMBER],
        request=None,
        responses=responses(TaskSerializer, r400=ERROR_400, r409=CONFLICT_409),
    )
    def post(self, request, slug, number):
        assignment = self.assignment(number)
        try:
            errors = submit_labels(assignment=assignment, source="api")
        except ServiceError as exc:
            return refused(exc)
        if errors:
            raise ValidationError(field_paths(errors.fields))
        return self.task(self.assignment(number))  # the service saved a fresh copy


class Skip(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="Give the task back, with a reason",
        parameters=[NUMBER],
        request=SkipSerializer,
        responses=responses({204: None}, r400=ERROR_400, r409=CONFLICT_409),
    )
    def post(self, request, slug, number):
        assignment = self.assignment(number)
        serializer = SkipSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            release_task(assignment=assignment, reason=serializer.validated_data["reason"])
        except ServiceError as exc:
            return refused(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)


class Reopen(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="Reopen a submitted task (until a lead starts adjudicating it)",
        parameters=[NUMBER],
        request=None,
        responses=responses(TaskSerializer, r409=CONFLICT_409),
    )
    def post(self, request, slug, number):
        try:
            assignment = reopen_task(assignment=self.assignment(number))
        except ServiceError as exc:
            return refused(exc)
        return self.task(assignment)
