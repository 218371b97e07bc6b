"""Projects in the API: the caller's projects, creating one from an upload, a
project's details, its label schema, opening labelling.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from annotate.api.base import (
    CONFLICT_409,
    DENIED,
    ERROR_400,
    TOO_LARGE_413,
    UPLOAD_PARSERS,
    APIView,
    FilePart,
    LeadView,
    ListView,
    ProjectView,
    TextField,
    query,
    refused,
    responses,
    start_import,
    upload_file,
)
from annotate.api.imports import UPLOAD_HELP, FormatSerializer
from annotate.checks.services import set_check_rate
from annotate.common.errors import NotAllowed, ServiceError
from annotate.models import Membership, Project, Role
from annotate.projects.creation import SLUG_ERRORS, check_new_slug
from annotate.projects.opening import open_labelling
from annotate.projects.services import set_label_schema
from annotate.schema import ANSWER_FIELDS as SCHEMA_ANSWER_FIELDS
from annotate.schema import CLAIM_FIELDS as SCHEMA_CLAIM_FIELDS
from annotate.schema import SCALES, LabelSchema
from jobs.models import Job
from jobs.serializers import ACCEPTED_202


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
    guidelines_version = serializers.IntegerField(
        source="project.guidelines_version", help_text="The current version; 0: none written."
    )
    guidelines_changed_at = serializers.DateTimeField(
        source="project.guidelines_changed_at", allow_null=True
    )
    created_at = serializers.DateTimeField(source="project.created_at")
    opened_at = serializers.DateTimeField(source="project.opened_at", allow_null=True)
    role = serializers.ChoiceField(choices=Role.choices)
    label_schema = LabelSchemaSerializer(source="project.schema.as_dict", read_only=True)
    check_rate = serializers.FloatField(
        source="project.check_rate",
        required=False,
        help_text="Leads only: the share of tasks served as gold checks, 0 (off) to 1.",
    )

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if instance.role != Role.LEAD:
            # Reviewers are not told that checks exist at all (annotate.checks).
            data.pop("check_rate", None)
        return data


class ProjectSettingsSerializer(serializers.Serializer):
    check_rate = serializers.FloatField(
        min_value=0,
        max_value=1,
        required=False,
        help_text="The share of tasks the queue serves as gold checks, 0 (off) to 1.",
    )


class ProjectFilterSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=Project.State.choices, required=False)
    role = serializers.ChoiceField(choices=Role.choices, required=False)


class ProjectCreateSerializer(FormatSerializer):
    slug = serializers.SlugField(max_length=80, error_messages=SLUG_ERRORS)
    name = TextField(max_length=200, required=False, allow_blank=True)
    file = FilePart(help_text=UPLOAD_HELP)


class NewProjectQuerySerializer(serializers.Serializer):
    """For a raw JSONL body, the project's slug and name come in the query string."""

    slug = serializers.SlugField(max_length=80, error_messages=SLUG_ERRORS)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)


class ProjectList(ListView, APIView):
    serializer_class = ProjectSerializer
    parser_classes = UPLOAD_PARSERS

    def get_queryset(self):
        filters = query(ProjectFilterSerializer, self.request)
        memberships = Membership.objects.filter(user=self.request.user).select_related("project")
        if "state" in filters:
            memberships = memberships.filter(project__state=filters["state"])
        if "role" in filters:
            memberships = memberships.filter(role=filters["role"])
        return memberships.order_by("project__name", "project__slug")

    @extend_schema(
        tags=["projects"],
        summary="The projects you have a role in",
        parameters=[ProjectFilterSerializer],
        responses={200: ProjectSerializer(many=True), 400: ERROR_400, **DENIED},
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["projects"],
        summary="Create a project from a bundle or a Ragas dataset; you become its lead",
        description="A multipart upload (`slug`, `name`, `file`, `format`, `variant`, "
        "`label_schema`), or the bundle itself as the body (`application/x-ndjson`) with `slug` "
        "and `name` in the query string. With `format=ragas` the file is a Ragas evaluation "
        "dataset (JSONL or CSV), imported as the answers of `variant`, and `label_schema` (JSON "
        "text, optional) sets the project's label schema. The file is stored and imported by a "
        "worker: the answer is 202 with the job to poll (`url`, and the Location header). The "
        "import is all or nothing: a refused file ends the job `failed` with every problem by line "
        "(a CSV's by row) in `errors`; a slug you may not use is refused at once with 400. "
        "Creating a project is for staff and users with the `annotate.add_project` permission (403 "
        "for others, unless `CLAIMDESK_ANYONE_CAN_CREATE_PROJECTS` is on); re-importing into a "
        "project you lead needs no permission.",
        request={
            "multipart/form-data": ProjectCreateSerializer,
            "application/x-ndjson": OpenApiTypes.BINARY,
        },
        parameters=[
            OpenApiParameter("slug", str, description="With a raw JSONL body only."),
            OpenApiParameter("name", str, description="With a raw JSONL body only."),
        ],
        responses={202: ACCEPTED_202, 400: ERROR_400, 413: TOO_LARGE_413, **DENIED},
    )
    def post(self, request, *args, **kwargs):
        if request.content_type.startswith("multipart/"):
            upload, data = upload_file(request, ProjectCreateSerializer)
        else:
            data = query(NewProjectQuerySerializer, request)
            upload, _ = upload_file(request)
        try:
            check_new_slug(slug=data["slug"], user=request.user, reimport=True)
        except NotAllowed as exc:
            raise PermissionDenied(str(exc)) from exc
        except ServiceError as exc:
            raise ValidationError({"slug": [str(exc)]}) from exc
        ragas, schema = data.get("format") == "ragas", data.get("label_schema")
        return start_import(
            kind=Job.Kind.RAGAS_IMPORT if ragas else Job.Kind.BUNDLE_IMPORT,
            user=request.user,
            upload=upload,
            slug=data["slug"],
            params={
                "name": data.get("name") or None,
                "variant": data.get("variant") if ragas else None,
                "label_schema": schema.as_dict() if schema else None,
                "reimport": True,
            },
        )


class ProjectDetail(ProjectView):
    @extend_schema(tags=["projects"], summary="One project", responses=responses(ProjectSerializer))
    def get(self, request, slug):
        membership = Membership(project=self.project, user=request.user, role=self.role)
        return Response(ProjectSerializer(membership).data)

    @extend_schema(
        tags=["projects"],
        summary="Change a project's settings (leads): the check rate",
        request=ProjectSettingsSerializer,
        responses=responses(ProjectSerializer, r400=ERROR_400),
    )
    def patch(self, request, slug):
        if self.role != Role.LEAD:
            raise PermissionDenied("Only a lead of the project changes its settings.")
        serializer = ProjectSettingsSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        project = self.project
        if "check_rate" in serializer.validated_data:
            try:
                project = set_check_rate(
                    project=project, rate=serializer.validated_data["check_rate"]
                )
            except ServiceError as exc:
                raise ValidationError({"check_rate": [str(exc)]}) from exc
        membership = Membership(project=project, user=request.user, role=self.role)
        return Response(ProjectSerializer(membership).data)


class LabelSchemaView(LeadView):
    @extend_schema(
        tags=["projects"],
        summary="Which fields reviewers label; only before labelling opens",
        request=LabelSchemaSerializer,
        responses=responses(ProjectSerializer, r400=ERROR_400, r409=CONFLICT_409),
    )
    def put(self, request, slug):
        serializer = LabelSchemaSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            project = set_label_schema(project=self.project, schema=serializer.validated_data)
        except ServiceError as exc:
            return refused(exc)
        membership = Membership(project=project, user=request.user, role=self.role)
        return Response(ProjectSerializer(membership).data)


class OpenLabelling(LeadView):
    @extend_schema(
        tags=["projects"],
        summary="Open labelling: lock the claims and open the queue",
        request=None,
        responses=responses(ProjectSerializer, r409=CONFLICT_409),
    )
    def post(self, request, slug):
        try:
            project = open_labelling(project=self.project)
        except ServiceError as exc:
            return refused(exc)
        membership = Membership(project=project, user=request.user, role=self.role)
        return Response(ProjectSerializer(membership).data)
