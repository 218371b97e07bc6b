"""Re-auditing gold after the guidelines change, in the API (leads only): the list the lead's
Re-audit page shows (the gold settled under an older guidelines version, with its counts), and
the page's three answers to it -- keep one task's gold under the current version, re-open one
into the adjudication queue, keep every listed answer decided under one older version. Each
calls the service the page calls (annotate.adjudication.reaudit), which takes the project's
row before anything else. A task number no answer has is 404; a task that is not on the list
is 400 at `number`, saying why."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from annotate.adjudication import reaudit
from annotate.adjudication.selectors import answer_by_task_number
from annotate.api.base import ERROR_400, LeadView, ListView, responses
from annotate.api.tasks import NUMBER
from annotate.common.errors import ServiceError
from annotate.models import Reaudit


class ReauditRowSerializer(serializers.Serializer):
    task_number = serializers.IntegerField()
    question = serializers.CharField()
    state = serializers.ChoiceField(
        choices=[reaudit.AGREED, reaudit.ADJUDICATED],
        help_text="agreed: every reviewer gave the same labels; adjudicated: a lead decided.",
    )
    version = serializers.IntegerField(
        help_text="The guidelines version its gold stands under (0: none written then)."
    )


class VersionCountSerializer(serializers.Serializer):
    version = serializers.IntegerField(help_text="An older guidelines version (0: none).")
    answers = serializers.IntegerField(help_text="Listed answers whose gold stands under it.")


@extend_schema_serializer(many=False)
class ReauditPageSerializer(serializers.Serializer):
    """One page of the list, with the counts over the whole of it."""

    guidelines_version = serializers.IntegerField(help_text="The current version.")
    by_version = VersionCountSerializer(
        many=True, help_text="The listed answers by the older version, oldest first."
    )
    current_count = serializers.IntegerField(
        help_text="Settled answers whose gold stands under the current version."
    )
    kept = serializers.IntegerField(help_text="Of current_count, those a lead kept under it.")
    reopened = serializers.IntegerField(
        help_text="Answers a lead re-opened, waiting in the adjudication queue."
    )
    count = serializers.IntegerField(help_text="Listed answers (all pages).")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = ReauditRowSerializer(
        many=True, help_text="Oldest version first, then by task number."
    )


class ReauditDoneSerializer(serializers.Serializer):
    task_number = serializers.IntegerField()
    action = serializers.ChoiceField(choices=Reaudit.Action.values)
    guidelines_version = serializers.IntegerField(
        help_text="The version it was kept under, or re-opened under."
    )


class KeepAllSerializer(serializers.Serializer):
    decided_under = serializers.IntegerField(
        min_value=0,
        help_text="Keep every listed answer whose gold stands under this older version "
        "(0: no guidelines); one of by_version.",
    )


class KeptSerializer(serializers.Serializer):
    kept = serializers.IntegerField(help_text="Answers kept (0: none of it was listed).")
    decided_under = serializers.IntegerField()
    guidelines_version = serializers.IntegerField(help_text="The version they stand under now.")


class ReauditList(ListView, LeadView):
    serializer_class = ReauditRowSerializer

    @extend_schema(
        tags=["adjudication"],
        summary="Gold settled under older guidelines, to keep or re-open",
        description="The Re-audit page's list: every settled answer (agreed, or adjudicated) "
        "whose gold stands under a guidelines version older than the current one, oldest "
        "version first, with the counts over the whole list.",
        responses=responses(ReauditPageSerializer, r400=ERROR_400),
    )
    def get(self, request, *args, **kwargs):
        found = reaudit.reaudit_list(self.project)
        page = self.paginate_queryset(found.rows)
        listing = self.get_paginated_response(self.get_serializer(page, many=True).data).data
        return Response(
            {
                "guidelines_version": found.current,
                "by_version": [{"version": v, "answers": n} for v, n in found.versions],
                "current_count": found.current_count,
                "kept": found.kept,
                "reopened": found.reopened,
                **listing,
            }
        )


class ReauditAction(LeadView):
    """Keep or re-open one task's gold (`act`: the service the page's button calls)."""

    act: staticmethod

    def post(self, request, slug, number):
        answer = answer_by_task_number(self.project, number)
        if answer is None:
            raise NotFound()
        try:
            done = self.act(project=self.project, answer=answer, lead=request.user)
        except ServiceError as exc:
            raise ValidationError({"number": [f"Task {number}: {exc}"]}) from exc
        return Response(
            {
                "task_number": number,
                "action": done.action,
                "guidelines_version": done.guideline_version,
            }
        )


class Keep(ReauditAction):
    act = staticmethod(reaudit.keep_decision)

    @extend_schema(
        tags=["adjudication"],
        summary="Keep a task's gold: it stands under the current guidelines",
        description="It leaves the re-audit list until the guidelines change again; the gold "
        "itself does not change. 400 at `number` for a task that is not on the list.",
        parameters=[NUMBER],
        request=None,
        responses=responses(ReauditDoneSerializer, r400=ERROR_400),
    )
    def post(self, request, slug, number):
        return super().post(request, slug, number)


class Reopen(ReauditAction):
    act = staticmethod(reaudit.reopen_decision)

    @extend_schema(
        tags=["adjudication"],
        summary="Re-open a task's gold into the adjudication queue",
        description="It waits in `adjudication/` (`reaudit: true`) until a lead saves its "
        "adjudication again; its gold stands meanwhile. 400 at `number` for a task that is "
        "not on the list.",
        parameters=[NUMBER],
        request=None,
        responses=responses(ReauditDoneSerializer, r400=ERROR_400),
    )
    def post(self, request, slug, number):
        return super().post(request, slug, number)


class KeepAll(LeadView):
    @extend_schema(
        tags=["adjudication"],
        summary="Keep every listed answer decided under one older version",
        description="For a lead who has read the change and finds it moves none of them. 400 "
        "at `decided_under` for the current version or a later one.",
        request=KeepAllSerializer,
        responses=responses(KeptSerializer, r400=ERROR_400),
    )
    def post(self, request, slug):
        serializer = KeepAllSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        under = serializer.validated_data["decided_under"]
        try:
            kept = reaudit.keep_all(project=self.project, lead=request.user, decided_under=under)
        except ServiceError as exc:
            raise ValidationError({"decided_under": [str(exc)]}) from exc
        return Response(
            {
                "kept": kept,
                "decided_under": under,
                "guidelines_version": self.project.guidelines_version,
            }
        )
