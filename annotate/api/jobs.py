"""The API face of background jobs (jobs/): the job to poll, its retry, and an export's file.
What an upload answers (202 and the job) is jobs.serializers'. Here rather than in jobs/,
which stands below the apps: every endpoint shares annotate.api.base."""

from __future__ import annotations

from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from annotate.api.base import CONFLICT_409, ERROR_400, APIView, refused, responses
from jobs import kinds, services
from jobs.accept import CannotRetry, retry_job
from jobs.models import Job
from jobs.serializers import ACCEPTED_202, JobSerializer, accepted


class JobView(APIView):
    def job(self, job_id) -> Job:
        job = Job.objects.visible_to(self.request.user).filter(pk=job_id).first()
        if job is None:
            raise NotFound()
        return job


class JobDetail(JobView):
    @extend_schema(
        tags=["jobs"],
        summary="A background job: its progress, then its result or every error",
        responses=responses(JobSerializer),
    )
    def get(self, request, job_id):
        return Response(JobSerializer(self.job(job_id)).data)


class RetrySerializer(serializers.Serializer):
    confirm_deletions = serializers.BooleanField(
        default=False,
        help_text="Go on with a replace whose job failed listing `result.deletions`: delete "
        "those and import the same file.",
    )


class JobRetry(JobView):
    @extend_schema(
        tags=["jobs"],
        summary="Queue a failed job, or one that lost its worker, again",
        request=RetrySerializer,
        responses=responses({202: ACCEPTED_202}, r400=ERROR_400, r409=CONFLICT_409),
    )
    def post(self, request, job_id):
        body = RetrySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        confirm = body.validated_data["confirm_deletions"]
        try:
            job = retry_job(job=self.job(job_id), confirm_deletions=confirm)
        except CannotRetry as exc:
            return refused(exc)
        return accepted(job)


class JobDownload(JobView):
    @extend_schema(
        tags=["jobs"],
        summary="The file an export wrote (404 until the job has succeeded)",
        responses=responses(OpenApiResponse(OpenApiTypes.BINARY, description="The file.")),
    )
    def get(self, request, job_id):
        job = self.job(job_id)
        if job.status != Job.Status.SUCCEEDED or not job.output:
            raise NotFound("The file is not ready: poll the job until it has succeeded.")
        fmt = job.params.get("format", "jsonl")
        return FileResponse(
            services.storage().open(job.output, "rb"),
            as_attachment=True,
            filename=f"{job.project_slug}-gold.{fmt}",
            content_type=kinds.download_type(job),
        )
