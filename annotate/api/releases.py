"""Gold releases in the API (leads only, as the gold set): list and make them, read one with its
dataset card, download one (JSONL byte for byte as frozen, CSV, Parquet), and compare two."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from annotate.api.base import (
    ERROR_400,
    CSVRenderer,
    JSONLinesRenderer,
    LeadView,
    ListView,
    ParquetRenderer,
    TextField,
    query,
    responses,
)
from annotate.gold.exports import JUDGE_SPLITS
from annotate.models import GoldRelease
from annotate.releases import selectors
from annotate.releases.diff import diff_releases
from annotate.releases.services import ReleaseRefused, start_release
from annotate.releases.views import download
from jobs.serializers import ACCEPTED_202, accepted


class ReleaseSerializer(serializers.ModelSerializer):
    judge_split = serializers.CharField(source="split")
    created_by = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    downloads = serializers.SerializerMethodField()

    class Meta:
        model = GoldRelease
        fields = [
            "name",
            "url",
            "item",
            "judge_split",
            "decided_only",
            "created_by",
            "created_at",
            "schema_version",
            "export_id",
            "row_count",
            "partitions",
            "sha256",
            "size",
            "downloads",
        ]

    def get_created_by(self, release) -> str | None:
        return release.created_by.username if release.created_by else None

    def get_url(self, release) -> str:
        return reverse("api:release", kwargs={"slug": self.context["slug"], "name": release.name})

    def get_downloads(self, release) -> dict[str, str]:
        return {
            fmt: reverse(
                "api:release-download",
                kwargs={"slug": self.context["slug"], "name": release.name, "fmt": fmt},
            )
            for fmt in selectors.FORMATS
        }


class ReleaseDetailSerializer(ReleaseSerializer):
    card = serializers.CharField(help_text="The dataset card: Markdown, Hugging Face format.")

    class Meta(ReleaseSerializer.Meta):
        fields = [*ReleaseSerializer.Meta.fields, "card"]


class NewReleaseSerializer(serializers.Serializer):
    name = TextField(max_length=64, help_text="v1, 2026-12-07 ...: letters, digits, '.', '_', '-'.")
    item = serializers.ChoiceField(choices=["all", "claim", "answer"], default="all")
    judge_split = serializers.ChoiceField(choices=list(JUDGE_SPLITS), default="all")
    decided_only = serializers.BooleanField(default=False)


class DiffQuerySerializer(serializers.Serializer):
    before = TextField(help_text="The earlier release's name.")


def _release(project, name: str) -> GoldRelease:
    found = selectors.release_named(project, name)
    if found is None:
        raise NotFound(f"No release named '{name}'.")
    return found


class ReleaseList(ListView, LeadView):
    serializer_class = ReleaseSerializer

    def get_queryset(self):
        return selectors.releases_of(self.project)

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "slug": self.project.slug}

    @extend_schema(
        tags=["releases"],
        summary="The project's gold releases, newest first",
        responses=responses(ReleaseSerializer(many=True), r400=ERROR_400),
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["releases"],
        summary="Freeze the current gold set as a named release",
        description="The gold export's rows (with the same options as `gold.jsonl`), frozen "
        "under `name` with their SHA-256 and a dataset card; they never change afterwards. A "
        "gold set too large for a request (CLAIMDESK_GOLD_STREAM_MAX_ROWS) is released by a "
        "worker: the answer is then 202 with the job, whose `result.release` names it. A "
        "name already taken, or not of letters, digits, '.', '_' and '-', is 400 on `name`.",
        request=NewReleaseSerializer,
        responses=responses({201: ReleaseDetailSerializer, 202: ACCEPTED_202}, r400=ERROR_400),
    )
    def post(self, request, slug):
        serializer = NewReleaseSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        options = {
            "name": data["name"],
            "item": data["item"],
            "split": data["judge_split"],
            "decided_only": data["decided_only"],
        }
        try:
            made = start_release(project=self.project, user=request.user, **options)
        except ReleaseRefused as exc:
            return Response({"name": [str(exc)]}, status=status.HTTP_400_BAD_REQUEST)
        if not isinstance(made, GoldRelease):  # a job: a worker makes it
            return accepted(made)
        body = ReleaseDetailSerializer(made, context={"slug": slug}).data
        return Response(body, status=status.HTTP_201_CREATED, headers={"Location": body["url"]})


class ReleaseDetail(LeadView):
    @extend_schema(
        tags=["releases"],
        summary="One release, with its dataset card",
        responses=responses(ReleaseDetailSerializer),
    )
    def get(self, request, slug, name):
        release = _release(self.project, name)
        return Response(ReleaseDetailSerializer(release, context={"slug": slug}).data)


class ReleaseDownload(LeadView):
    def get_renderers(self):
        return [JSONRenderer(), JSONLinesRenderer(), CSVRenderer(), ParquetRenderer()]

    @extend_schema(
        tags=["releases"],
        summary="A release's rows: JSONL (the frozen bytes), CSV or Parquet",
        description="`jsonl` is the release's file, byte for byte (its SHA-256 is the "
        "release's `sha256`); `csv` and `parquet` are made from it.",
        responses=responses(OpenApiResponse(OpenApiTypes.BINARY, description="The file.")),
    )
    def get(self, request, slug, name, fmt):
        if fmt not in selectors.FORMATS:
            raise NotFound("Formats: jsonl, csv, parquet.")
        release = _release(self.project, name)
        return download(release, fmt, slug=slug)


class ReleaseDiff(LeadView):
    @extend_schema(
        tags=["releases"],
        summary="What changed from an earlier release to this one",
        description="Rows added, removed and changed (by item, answer and claim index), and "
        "for each changed row the fields that changed (`gold.support` ...) with both values; "
        "`by_field` counts the changed rows per field.",
        parameters=[DiffQuerySerializer],
        responses=responses(OpenApiTypes.OBJECT, r400=ERROR_400),
    )
    def get(self, request, slug, name):
        before = query(DiffQuerySerializer, request)["before"]
        after = _release(self.project, name)
        return Response(diff_releases(_release(self.project, before), after).as_dict())
