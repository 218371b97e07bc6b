"""Reviewers' flags in the API: a reviewer flags their own task for the lead (a reason and
their words); leads list the flags and resolve them. A reviewer's reply holds their own flag
alone: never another reviewer's, nor anything a lead writes.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from annotate.adjudication import selectors as adjudication_selectors
from annotate.adjudication.services import resolve_flag
from annotate.api.base import (
    CONFLICT_409,
    ERROR_400,
    LeadView,
    ListView,
    TextField,
    query,
    refused,
    responses,
)
from annotate.api.tasks import NUMBER, TaskView
from annotate.common.errors import ServiceError
from annotate.labelling.services import MAX_FLAG_NOTE, flag_task
from annotate.models import Flag


class MyFlagSerializer(serializers.Serializer):
    """What the reviewer who flagged reads back: their own flag, as they wrote it."""

    task_number = serializers.IntegerField(source="answer.task_number")
    reason = serializers.ChoiceField(choices=Flag.Reason.choices)
    note = serializers.CharField()
    created_at = serializers.DateTimeField()


class FlagSerializer(MyFlagSerializer):
    """A flag as leads read it."""

    id = serializers.IntegerField()
    reason_text = serializers.CharField(source="get_reason_display")
    question = serializers.CharField(source="answer.case.question")
    reviewer = serializers.CharField(source="reviewer.username")
    resolved_at = serializers.DateTimeField(allow_null=True)
    resolved_by = serializers.CharField(
        source="resolved_by.username", allow_null=True, default=None
    )
    resolution = serializers.CharField()


class FlagInputSerializer(serializers.Serializer):
    reason = serializers.ChoiceField(choices=Flag.Reason.choices)
    note = TextField(
        required=False,
        allow_blank=True,
        default="",
        max_length=MAX_FLAG_NOTE,
        help_text="Your words (a lead reads them); required with reason `other`.",
    )


class FlagFilterSerializer(serializers.Serializer):
    state = serializers.ChoiceField(
        choices=["open", "resolved", "all"], required=False, default="open"
    )


class ResolveSerializer(serializers.Serializer):
    resolution = TextField(
        required=False,
        allow_blank=True,
        default="",
        max_length=MAX_FLAG_NOTE,
        help_text="What the lead did about it (leads read it; the reviewer never does).",
    )


class FlagTask(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="Flag your task for the lead, with a reason",
        description="For a problem with the task itself (a broken answer, wrong passages). "
        "409 when you have an open flag on the task already.",
        parameters=[NUMBER],
        request=FlagInputSerializer,
        responses=responses({201: MyFlagSerializer}, r400=ERROR_400, r409=CONFLICT_409),
    )
    def post(self, request, slug, number):
        assignment = self.assignment(number)
        serializer = FlagInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            flag = flag_task(assignment=assignment, reason=data["reason"], note=data["note"])
        except ServiceError as exc:
            return refused(exc)
        flag.answer = assignment.answer
        return Response(MyFlagSerializer(flag).data, status=status.HTTP_201_CREATED)


class FlagList(ListView, LeadView):
    serializer_class = FlagSerializer

    def get_queryset(self):
        state = query(FlagFilterSerializer, self.request)["state"]
        resolved = {"open": False, "resolved": True, "all": None}[state]
        return adjudication_selectors.flags(self.project, resolved=resolved)

    @extend_schema(
        tags=["adjudication"],
        summary="Reviewers' flags on their tasks, oldest first (open ones by default)",
        parameters=[FlagFilterSerializer],
        responses=responses(FlagSerializer(many=True), r400=ERROR_400),
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


FLAG_ID = OpenApiParameter("pk", int, OpenApiParameter.PATH, description="The flag's id.")


class ResolveFlag(LeadView):
    @extend_schema(
        tags=["adjudication"],
        summary="Resolve a reviewer's flag",
        parameters=[FLAG_ID],
        request=ResolveSerializer,
        responses=responses(FlagSerializer, r400=ERROR_400),
    )
    def post(self, request, slug, pk):
        flag = adjudication_selectors.flags(self.project, resolved=None).filter(pk=pk).first()
        if flag is None:
            raise NotFound()
        serializer = ResolveSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            resolve_flag(
                flag=flag, lead=request.user, resolution=serializer.validated_data["resolution"]
            )
        except ServiceError as exc:
            return refused(exc, status.HTTP_400_BAD_REQUEST)
        flag = adjudication_selectors.flags(self.project, resolved=None).get(pk=pk)
        return Response(FlagSerializer(flag).data)
