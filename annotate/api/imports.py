"""Uploads into a project in the API: a bundle or a Ragas dataset (and the project's data
as a bundle again), labels made elsewhere, gold made elsewhere. Each file is stored and
imported by a worker: the answer is 202 with the job to poll.
"""

from __future__ import annotations

from django.utils.text import capfirst
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer

from annotate.api.base import (
    ERROR_400,
    TOO_LARGE_413,
    UPLOAD_PARSERS,
    FilePart,
    JSONLinesRenderer,
    LeadView,
    TextField,
    query,
    responses,
    start_import,
    stream,
    upload_file,
)
from annotate.imports.bundle_export import bundle_rows
from annotate.imports.ragas_import import label_schema_problem
from annotate.schema import LabelSchema, SchemaInvalid
from jobs.models import Job
from jobs.serializers import ACCEPTED_202


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


class Bundle(LeadView):
    parser_classes = UPLOAD_PARSERS
    renderer_classes = [JSONRenderer, JSONLinesRenderer]

    @extend_schema(
        tags=["projects"],
        summary="Import a bundle, or a Ragas dataset, into the project",
        description="A multipart upload (`file`, `replace`, `format`, `variant`, `label_schema`), "
        "or the bundle itself as the body (`application/x-ndjson`, `?replace=true`). With "
        "`format=ragas` the file is a Ragas evaluation dataset (JSONL or CSV), imported as the "
        "answers of `variant`; `label_schema` (JSON text, optional) sets the project's label "
        "schema, and is refused with 400 once labelling is open unless it is the project's. A "
        "schema the import changes is said in the job's `result` (`label_schema_change`, "
        "`summary`). Imported by a worker: 202 and the job to poll. All or nothing (a refused file "
        "ends the job `failed` with every problem by line); re-importing the same file is "
        "idempotent. A `replace` that would delete answers, claims or judge verdicts ends the job "
        "`failed` with `result.deletions` listing them, unless `confirm_deletions`; the file is "
        "kept: POST `jobs/{id}/retry/` with `confirm_deletions: true` to go on.",
        request={
            "multipart/form-data": BundleUploadSerializer,
            "application/x-ndjson": OpenApiTypes.BINARY,
        },
        parameters=[
            OpenApiParameter("replace", bool, description="With a raw JSONL body."),
            OpenApiParameter(
                "confirm_deletions", bool, description="With a raw JSONL body and replace."
            ),
        ],
        responses=responses({202: ACCEPTED_202}, r400=ERROR_400, r413=TOO_LARGE_413),
    )
    def post(self, request, slug):
        options = query(ReplaceQuerySerializer, request)  # checked whatever the body
        upload, data = upload_file(request, BundleUploadSerializer)
        data = data or options
        ragas, schema = data.get("format") == "ragas", data.get("label_schema")
        # Said at once, before the upload waits for a worker (which checks again).
        problem = label_schema_problem(project=self.project, schema=schema)
        if problem:
            raise ValidationError({"label_schema": [capfirst(problem)]})
        return start_import(
            kind=Job.Kind.RAGAS_IMPORT if ragas else Job.Kind.BUNDLE_IMPORT,
            user=request.user,
            upload=upload,
            slug=self.project.slug,
            project=self.project,
            params={
                "replace": data["replace"],
                "confirm_deletions": data.get("confirm_deletions", False),
                "variant": data.get("variant") if ragas else None,
                "label_schema": schema.as_dict() if schema else None,
            },
        )

    @extend_schema(
        tags=["projects"],
        summary="Export the project's data as a bundle (streamed JSONL)",
        responses=responses(
            OpenApiResponse(OpenApiTypes.BINARY, description="JSONL, one object per line.")
        ),
    )
    def get(self, request, slug):
        response = stream(bundle_rows(self.project), fmt="jsonl", filename=f"{slug}-bundle.jsonl")
        return response


class LabelsImport(LeadView):
    parser_classes = UPLOAD_PARSERS

    @extend_schema(
        tags=["projects"],
        summary="Import reviewers' submitted labels (JSONL)",
        description="Imported by a worker: 202 and the job to poll. All or nothing (a refused "
        "file ends the job `failed` with every problem by line).",
        request={
            "multipart/form-data": FileUploadSerializer,
            "application/x-ndjson": OpenApiTypes.BINARY,
        },
        responses=responses({202: ACCEPTED_202}, r400=ERROR_400, r413=TOO_LARGE_413),
    )
    def post(self, request, slug):
        upload, _ = upload_file(request, FileUploadSerializer)
        return start_import(
            kind=Job.Kind.LABEL_IMPORT,
            user=request.user,
            upload=upload,
            slug=self.project.slug,
            project=self.project,
        )


class GoldImportUpload(LeadView):
    parser_classes = UPLOAD_PARSERS

    @extend_schema(
        tags=["projects"],
        summary="Import gold from elsewhere: one adjudicated label per answer (JSONL)",
        description="The reviewer-label format without `reviewer`, one line per answer, "
        "kept as gold with source `imported` and the file's name and SHA-256 as provenance "
        "(docs/bundle-format.md, 'Gold from elsewhere'). A multipart upload (`file`, "
        "`source`, `replace`), or the file itself as the body (`?source=…&replace=`). "
        "Imported by a worker: 202 and the job to poll. All or nothing (a refused file ends "
        "the job `failed` with every problem by line); the same file again is unchanged.",
        request={
            "multipart/form-data": GoldUploadSerializer,
            "application/x-ndjson": OpenApiTypes.BINARY,
        },
        parameters=[
            OpenApiParameter("source", str, description="With a raw JSONL body (required)."),
            OpenApiParameter("replace", bool, description="With a raw JSONL body."),
        ],
        responses=responses({202: ACCEPTED_202}, r400=ERROR_400, r413=TOO_LARGE_413),
    )
    def post(self, request, slug):
        upload, data = upload_file(request, GoldUploadSerializer)
        if not data:
            data = query(GoldSourceSerializer, request)
        return start_import(
            kind=Job.Kind.GOLD_IMPORT,
            user=request.user,
            upload=upload,
            slug=self.project.slug,
            project=self.project,
            params={"source": data["source"], "replace": data["replace"]},
        )
