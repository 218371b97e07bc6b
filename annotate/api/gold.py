"""The gold set in the API: streamed as JSONL or CSV (or sent as Parquet), or written by a
worker when it is too long for a request.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer

from annotate.api.base import (
    ERROR_400,
    CSVRenderer,
    JSONLinesRenderer,
    LeadView,
    ParquetRenderer,
    query,
    responses,
    stream,
)
from annotate.gold.exports import gold_rows, gold_size, start_gold_export
from jobs.serializers import ACCEPTED_202, accepted


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


class Gold(LeadView):
    fmt = "jsonl"

    def get_renderers(self):
        extra = {"jsonl": JSONLinesRenderer, "csv": CSVRenderer, "parquet": ParquetRenderer}
        return [JSONRenderer(), extra[self.fmt]()]

    def get(self, request, slug):
        filters = query(GoldFilterSerializer, request)
        size = gold_size(self.project)
        if size > settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS:
            job = start_gold_export(
                project=self.project,
                user=request.user,
                fmt=self.fmt,
                filters={
                    "item": filters["item"],
                    "split": filters["judge_split"],
                    "decided_only": filters["decided_only"],
                    "with_context": filters["with_context"],
                },
                rows=size,
            )
            return accepted(job)
        rows = gold_rows(
            self.project,
            item=filters["item"],
            split=filters["judge_split"],
            decided_only=filters["decided_only"],
            with_context=filters["with_context"],
        )
        return stream(rows, fmt=self.fmt, filename=f"{slug}-gold.{self.fmt}")


GOLD_PARAMETERS = [GoldFilterSerializer]


GOLD_DESCRIPTION = (
    "A gold set of up to CLAIMDESK_GOLD_STREAM_MAX_ROWS rows (20,000 by default) streams in "
    "the response. A larger one is written to a file by a worker: the answer is then 202 with "
    "the job to poll, whose `download_url` serves the file once `status` is `succeeded`. "
    "Asking again while the labels are unchanged returns the same job."
)


GOLD_ACCEPTED = OpenApiResponse(
    ACCEPTED_202.response, description="A large gold set: written by a worker; poll the job."
)


class GoldJSONL(Gold):
    fmt = "jsonl"

    @extend_schema(
        tags=["gold"],
        summary="The gold set as JSONL (streamed), one row per claim and per answer",
        description=GOLD_DESCRIPTION,
        parameters=GOLD_PARAMETERS,
        responses=responses(
            {
                200: OpenApiResponse(
                    OpenApiTypes.BINARY, description="JSONL rows with provenance."
                ),
                202: GOLD_ACCEPTED,
            },
            r400=ERROR_400,
        ),
    )
    def get(self, request, slug):
        return super().get(request, slug)


class GoldCSV(Gold):
    fmt = "csv"

    @extend_schema(
        tags=["gold"],
        summary="The gold set as CSV (streamed)",
        description=GOLD_DESCRIPTION,
        parameters=GOLD_PARAMETERS,
        responses=responses(
            {
                200: OpenApiResponse(
                    OpenApiTypes.BINARY, description="CSV; nested values as JSON."
                ),
                202: GOLD_ACCEPTED,
            },
            r400=ERROR_400,
        ),
    )
    def get(self, request, slug):
        return super().get(request, slug)


class GoldParquet(Gold):
    fmt = "parquet"

    @extend_schema(
        tags=["gold"],
        summary="The gold set as Parquet (typed columns)",
        description=GOLD_DESCRIPTION
        + " Parquet's columns are typed: docs/gold-export.md lists each column's type.",
        parameters=GOLD_PARAMETERS,
        responses=responses(
            {
                200: OpenApiResponse(
                    OpenApiTypes.BINARY, description="Parquet; nested values as JSON text."
                ),
                202: GOLD_ACCEPTED,
            },
            r400=ERROR_400,
        ),
    )
    def get(self, request, slug):
        return super().get(request, slug)
