"""Gold checks in the API (leads only): the project's checks, marking answers as checks (named,
or every decided one), unmarking them, importing a file of answer ids, and the check rate
(`PATCH /projects/<slug>/` with `check_rate`). Answers are named by their bundle
`answer_id`. A refused request is 400 with field paths (`answers.2`: that answer), or, for a
file, `errors` by line; nothing is changed then."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from annotate.api.base import (
    ERROR_400,
    TOO_LARGE_413,
    UPLOAD_PARSERS,
    FilePart,
    LeadView,
    ListView,
    TextField,
    responses,
    upload_lines,
)
from annotate.checks import selectors, services
from annotate.models import GoldCheck


class CheckSerializer(serializers.ModelSerializer):
    answer_id = serializers.CharField(source="answer.answer_id")
    task_number = serializers.IntegerField(source="answer.task_number", allow_null=True)
    marked_by = serializers.SerializerMethodField()

    class Meta:
        model = GoldCheck
        fields = ["answer_id", "task_number", "marked_by", "marked_at"]

    def get_marked_by(self, check) -> str | None:
        return check.marked_by.username if check.marked_by else None


class MarkSerializer(serializers.Serializer):
    answers = serializers.ListField(
        child=TextField(max_length=255),
        required=False,
        allow_empty=False,
        max_length=100_000,
        help_text="Answer ids (bundle `answer_id`) to mark.",
    )
    all_decided = serializers.BooleanField(
        default=False, help_text="Mark every decided answer that is not a check yet."
    )

    def validate(self, data):
        if data.get("all_decided") and data.get("answers"):
            raise serializers.ValidationError({"all_decided": ["Either answers or all_decided."]})
        if not data.get("all_decided") and not data.get("answers"):
            raise serializers.ValidationError({"answers": ["Name the answers to mark."]})
        return data


class UnmarkSerializer(serializers.Serializer):
    answers = serializers.ListField(
        child=TextField(max_length=255), allow_empty=False, max_length=100_000
    )


class MarkedSerializer(serializers.Serializer):
    marked = serializers.IntegerField(help_text="Answers this request marked (or unmarked).")
    checks = serializers.IntegerField(help_text="The project's checks now.")
    check_rate = serializers.FloatField()


class CheckFileSerializer(serializers.Serializer):
    file = FilePart(help_text="One answer id a line (or a JSON object with answer_id).")


def refused_by_field(exc: services.ChecksRefused) -> Response:
    """400 with a field path per problem: `answers.I` for the request's I-th answer."""
    body: dict[str, list[str]] = {}
    for where, message in exc.problems:
        body.setdefault(f"answers.{where}", []).append(message)
    return Response(body, status=status.HTTP_400_BAD_REQUEST)


class ChecksView(LeadView):
    def _done(self, marked: int) -> Response:
        project = self.project
        project.refresh_from_db(fields=["check_rate"])
        return Response(
            {
                "marked": marked,
                "checks": GoldCheck.objects.filter(project=project).count(),
                "check_rate": project.check_rate,
            }
        )


class Checks(ListView, ChecksView):
    serializer_class = CheckSerializer

    def get_queryset(self):
        return selectors.checks_of(self.project)

    @extend_schema(
        tags=["checks"],
        summary="The project's gold checks, oldest mark first",
        responses=responses(CheckSerializer(many=True), r400=ERROR_400),
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["checks"],
        summary="Mark decided answers as gold checks",
        description="`answers` (answer ids) or `all_decided`. All or nothing: an unknown, "
        "repeated or undecided answer is 400 at its path (`answers.2`) and nothing is marked. "
        "An answer already a check stays one.",
        request=MarkSerializer,
        responses=responses(MarkedSerializer, r400=ERROR_400),
    )
    def post(self, request, slug):
        serializer = MarkSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            if data["all_decided"]:
                marked = services.mark_all_decided(project=self.project, lead=request.user)
            else:
                marked = services.mark_checks(
                    project=self.project, lead=request.user, answer_ids=data["answers"]
                )
        except services.ChecksRefused as exc:
            return refused_by_field(exc)
        return self._done(marked)


class Unmark(ChecksView):
    @extend_schema(
        tags=["checks"],
        summary="Stop using answers as gold checks",
        description="Label sets already made on them stay check label sets. An unknown answer "
        "or one that is not a check is 400 at its path; nothing is changed then.",
        request=UnmarkSerializer,
        responses=responses(MarkedSerializer, r400=ERROR_400),
    )
    def post(self, request, slug):
        serializer = UnmarkSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            removed = services.unmark_checks(
                project=self.project, answer_ids=serializer.validated_data["answers"]
            )
        except services.ChecksRefused as exc:
            return refused_by_field(exc)
        return self._done(removed)


class Import(ChecksView):
    parser_classes = UPLOAD_PARSERS

    @extend_schema(
        tags=["checks"],
        summary="Mark the answers a file names as gold checks",
        description="One answer id a line (or a JSON object with `answer_id`); blank lines and "
        "lines starting with # are skipped. A multipart `file`, or the file as the body. All "
        "or nothing: a refused file is 400 with `errors`, every problem by line.",
        request={
            "multipart/form-data": CheckFileSerializer,
            "application/x-ndjson": OpenApiTypes.BINARY,
        },
        responses=responses(MarkedSerializer, r400=ERROR_400, r413=TOO_LARGE_413),
    )
    def post(self, request, slug):
        lines, _ = upload_lines(request, CheckFileSerializer)
        try:
            marked = services.import_checks(project=self.project, lead=request.user, lines=lines)
        except services.ChecksRefused as exc:
            return Response({"errors": exc.lines()}, status=status.HTTP_400_BAD_REQUEST)
        return self._done(marked)
