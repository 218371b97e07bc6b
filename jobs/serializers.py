"""How a background job reads in the API: the body an upload answers with (202) and the one
its URL answers while it runs and once it has ended."""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers, status
from rest_framework.response import Response

from jobs import kinds
from jobs.models import Job


class JobProgressSerializer(serializers.Serializer):
    stage = serializers.CharField(help_text="reading, checking, then each write step; done.")
    lines_read = serializers.IntegerField()
    lines_total = serializers.IntegerField(help_text="Non-blank lines of the uploaded file.")
    rows_written = serializers.IntegerField()
    rows_total = serializers.IntegerField(help_text="For an export: the rows it will hold.")
    percent = serializers.IntegerField(allow_null=True)


class JobSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField(help_text="Poll this until `status` is final.")
    project = serializers.CharField(source="project_slug")
    progress = serializers.SerializerMethodField()
    stalled = serializers.BooleanField(
        help_text="Running, but its worker stopped sending heartbeats: retry it."
    )
    retryable = serializers.BooleanField()
    errors = serializers.SerializerMethodField(
        help_text="A refused file: every problem, 'line N: message'. Nothing was written."
    )
    summary = serializers.SerializerMethodField(
        help_text="The same problems grouped by message, for people."
    )
    retry_url = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = [
            "id",
            "url",
            "kind",
            "status",
            "project",
            "file_name",
            "progress",
            "stalled",
            "retryable",
            "result",
            "errors",
            "summary",
            "failure",
            "attempt",
            "created_at",
            "started_at",
            "heartbeat_at",
            "finished_at",
            "retry_url",
            "download_url",
        ]

    def get_url(self, job) -> str:
        return reverse("api:job", kwargs={"job_id": job.pk})

    def get_progress(self, job) -> JobProgressSerializer:
        return JobProgressSerializer(
            {
                "stage": job.stage,
                "lines_read": job.lines_read,
                "lines_total": job.lines_total,
                "rows_written": job.rows_written,
                "rows_total": job.rows_total,
                "percent": job.percent,
            }
        ).data

    def get_errors(self, job) -> list[str]:
        found = kinds.problems(job)
        return [str(e) for e in found.errors] if found else []

    def get_summary(self, job) -> list[str]:
        found = kinds.problems(job)
        return found.grouped() if found else []

    def get_retry_url(self, job) -> str | None:
        return reverse("api:job-retry", kwargs={"job_id": job.pk}) if job.retryable else None

    def get_download_url(self, job) -> str | None:
        if job.status == Job.Status.SUCCEEDED and job.output:
            return reverse("api:job-download", kwargs={"job_id": job.pk})
        return None


ACCEPTED_202 = OpenApiResponse(
    JobSerializer,
    description="Accepted: the work runs in the background. Poll the job (`url`, also the "
    "Location header) until `status` is `succeeded` (see `result`) or `failed` (see `errors`, "
    "every problem by line, or `failure`).",
)


def accepted(job: Job) -> Response:
    body = JobSerializer(job).data
    return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": body["url"]})
