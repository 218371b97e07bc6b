"""Adjudication in the API: the queue of disagreements, one task as a lead sees it,
and a lead's decisions.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, NotFound, ValidationError
from rest_framework.response import Response

from annotate.adjudication import services as adjudication_services
from annotate.adjudication.queue import adjudication_queue
from annotate.adjudication.selectors import adjudication_screen, answer_by_task_number, side_key
from annotate.adjudication.services import Conflict, DecisionInput, adjudicate, start_adjudication
from annotate.api.base import (
    CONFLICT_409,
    ERROR_400,
    MAX_NOTE,
    LeadView,
    ListView,
    TextField,
    query,
    responses,
)
from annotate.api.tasks import NUMBER, CitationSerializer, PassageSerializer
from annotate.common.computed import reports_of
from annotate.common.errors import ServiceError
from annotate.gold.pairs import ADJUDICATED, AGREED, ANSWER_FIELDS, CLAIM_FIELDS, PENDING, UNION
from annotate.gold.selectors import pair_summary
from annotate.report_kinds import QUEUE

SLICE_CHOICES = ["answerable", "unanswerable", "adversarial"]


def with_fields_field(serializer_fields, field):
    """Add an output key named 'fields', which a class attribute cannot declare (it would
    hide Serializer.fields)."""
    serializer_fields["fields"] = field
    return serializer_fields


class QueueItemSerializer(serializers.Serializer):
    task_number = serializers.IntegerField()
    score = serializers.IntegerField(help_text="How serious the disagreement is.")
    reaudit = serializers.BooleanField(
        help_text="Re-opened by a lead after the guidelines changed (after the disagreements)."
    )

    def get_fields(self):
        pending = serializers.ListField(child=serializers.CharField(), help_text="Pending fields.")
        return with_fields_field(super().get_fields(), pending)


class QueueFilterSerializer(serializers.Serializer):
    slice = serializers.ChoiceField(choices=SLICE_CHOICES, required=False)
    field = serializers.ChoiceField(choices=[*CLAIM_FIELDS, *ANSWER_FIELDS], required=False)


def notes_by_letter(notes: list[str]) -> dict[str, str]:
    """Each label set's note by its side: a, b, and c … where more than two."""
    return {side_key(i): note for i, note in enumerate(notes)}


class FieldRowSerializer(serializers.Serializer):
    name = serializers.CharField()
    a = serializers.JSONField(help_text="Reviewer A's value.")
    b = serializers.JSONField(help_text="Reviewer B's value.")
    others = serializers.ListField(
        child=serializers.JSONField(),
        help_text="The values of reviewers C, D … (the label sets after the first two, in "
        "submission order); empty with two. A field is agreed only when all agree.",
    )
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
        return notes_by_letter(item.notes)


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
        return notes_by_letter(screen.notes)


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
        "label. Optional; empty: the request's `rationale` applies.",
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
        help_text="The task's rationale (optional): that of every decision that brings none "
        "of its own.",
    )
    decisions = DecisionInputSerializer(many=True, max_length=500)


class ConflictSerializer(serializers.Serializer):
    detail = serializers.CharField()
    version = serializers.IntegerField(help_text="The current version to compare against.")


class AdjudicationQueue(ListView, LeadView):
    serializer_class = QueueItemSerializer

    def get_queryset(self):
        filters = query(QueueFilterSerializer, self.request)
        chosen = {"slice": filters.get("slice"), "field": filters.get("field")}
        key = (chosen["slice"], chosen["field"])
        reports = reports_of(self.project)
        return reports.get(
            QUEUE,
            key,
            lambda: adjudication_queue(
                self.project, summary=pair_summary(self.project, reports), **chosen
            ),
        )

    @extend_schema(
        tags=["adjudication"],
        summary="Answers whose reviewers disagree, most serious first",
        parameters=[QueueFilterSerializer],
        responses=responses(QueueItemSerializer(many=True), r400=ERROR_400),
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class NotYetAdjudicable(APIException):
    """A reviewer may still undo a submission, or is still labelling (overlap above two)."""

    status_code = status.HTTP_409_CONFLICT
    default_code = "not_yet_adjudicable"


class Adjudication(LeadView):
    def screen(self, number: int):
        # As on the page: freeze the labels (no reopening) before reading them.
        answer = answer_by_task_number(self.project, number)
        try:
            lock = answer and start_adjudication(answer=answer, lead=self.request.user)
        except adjudication_services.NotYetAdjudicable as exc:
            raise NotYetAdjudicable(str(exc)) from exc
        if lock is None:
            raise NotFound()
        screen = adjudication_screen(self.project, number)
        if screen is None:
            raise NotFound()
        return screen

    @extend_schema(
        tags=["adjudication"],
        summary="Both reviewers' labels of one task, side by side (variant hidden)",
        description="409 while a reviewer may still undo their submission of the task (for "
        "CLAIMDESK_REOPEN_MINUTES after it): the task opens for adjudication then.",
        parameters=[NUMBER],
        responses=responses(AdjudicationSerializer, r409=CONFLICT_409),
    )
    def get(self, request, slug, number):
        return Response(AdjudicationSerializer(self.screen(number)).data)

    @extend_schema(
        tags=["adjudication"],
        summary="Record gold decisions for fields of the task",
        description="Send the `version` you read; if another lead saved in between, 409 with "
        "the current version and nothing is written.",
        parameters=[NUMBER],
        request=AdjudicateSerializer,
        responses=responses(
            AdjudicationSerializer,
            r400=ERROR_400,
            r409=OpenApiResponse(ConflictSerializer, description="Another lead saved first."),
        ),
    )
    def post(self, request, slug, number):
        screen = self.screen(number)
        serializer = AdjudicateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        claims = {c.claim.ordinal: c.claim for c in screen.claims}
        decisions = []
        for i, item in enumerate(data["decisions"]):
            if item["claim"] is not None and item["claim"] not in claims:
                raise ValidationError({f"decisions.{i}.claim": ["No such claim in this task."]})
            claim = None if item["claim"] is None else claims[item["claim"]]
            decisions.append(
                DecisionInput(
                    claim=claim,
                    field=item["field"],
                    value=item["value"],
                    rationale=item["rationale"],
                )
            )
        try:
            adjudicate(
                answer=screen.answer,
                lead=request.user,
                version=data["version"],
                decisions=decisions,
                rationale=data["rationale"],
            )
        except Conflict as exc:
            current = self.screen(number)
            return Response(
                {"detail": str(exc), "version": current.version}, status=status.HTTP_409_CONFLICT
            )
        except ServiceError as exc:
            raise ValidationError({"decisions": [str(exc)]}) from exc
        return Response(AdjudicationSerializer(self.screen(number)).data)
