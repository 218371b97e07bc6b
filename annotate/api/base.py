"""Thin API views: parse with a serializer, call one service or selector, serialize.

Every project endpoint resolves the caller's role through `HasProjectRole` (404 without a
role, 403 for the wrong one), exactly as the pages do. Reviewers reach answers only through
their own assignments (`selectors.task_for_reviewer`), by task number.

Errors: a validation problem is 400 with a flat body `{"field.path": ["message", ...]}`
(`claims.1.evidence_quote`, `decisions.0.field`); an import refused is 400 with
`{"errors": ["line N: message", ...]}`; a request the current state refuses (labelling not
open, task already submitted, another lead saved first) is 409 with `{"detail": ...}`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.conf import settings
from django.core import signals
from django.core.files import File
from django.http import StreamingHttpResponse
from django.utils.log import log_response
from django.utils.text import capfirst
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import (
    APIException,
    NotFound,
    ParseError,
    PermissionDenied,
    ValidationError,
)
from rest_framework.generics import ListAPIView
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import BaseParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView as DRFAPIView
from rest_framework.views import exception_handler, set_rollback

from annotate.adjudication import services as adjudication_services
from annotate.adjudication.queue import adjudication_queue
from annotate.adjudication.selectors import adjudication_screen, answer_by_task_number
from annotate.adjudication.services import Conflict, DecisionInput, adjudicate, start_adjudication
from annotate.api import serializers as s
from annotate.api.permissions import HasProjectRole
from annotate.common import safe_json
from annotate.common.errors import NotAllowed, ServiceError
from annotate.common.jsonl import jsonl
from annotate.gold.exports import gold_csv, gold_rows, gold_size
from annotate.gold.selectors import pair_summary
from annotate.imports import uploads
from annotate.imports.bundle_export import bundle_rows
from annotate.imports.lines import BundleInvalid
from annotate.imports.ragas_import import label_schema_problem
from annotate.labelling import selectors
from annotate.labelling.services import (
    StaleDraft,
    reopen_task,
    save_answer_label,
    save_claim_label,
    submit_labels,
)
from annotate.members.services import (
    MemberError,
    add_project_member,
    change_member_role,
    remove_member,
)
from annotate.members.tokens import TokenAuthentication
from annotate.models import Assignment, Membership, Project, Role
from annotate.projects.creation import check_new_slug
from annotate.projects.opening import open_labelling
from annotate.projects.services import set_label_schema
from annotate.queue.services import next_task, release_task
from annotate.report_cache import reports_of
from config import errors
from jobs import services as jobs
from jobs.models import Job
from jobs.serializers import ACCEPTED_202, accepted

# --- Plumbing --------------------------------------------------------------------------------


def flatten_errors(data: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF's nested error structure as flat field paths: {"decisions": [{}, {"field": [..]}]}
    becomes {"decisions.1.field": [..]}, so every 400 reads the same way."""
    out: dict[str, list[str]] = {}
    if isinstance(data, dict):
        for key, value in data.items():
            out.update(flatten_errors(value, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(data, list) and all(isinstance(item, str) for item in data):
        if data:
            out[prefix or "non_field_errors"] = [str(item) for item in data]
    elif isinstance(data, list):
        for i, item in enumerate(data):
            out.update(flatten_errors(item, f"{prefix}.{i}" if prefix else str(i)))
    else:
        out[prefix or "non_field_errors"] = [str(data)]
    return out


def api_exception_handler(exc, context):
    """DRF's handler, with flat validation errors, and a JSON 500 for any other exception
    (503 for a dependency that is down: config.errors): a script parses every answer as
    JSON, so it must never get Django's HTML error page. The exception is still reported as
    Django reports one (the django.request log, which mails the admins in production, and
    the got_request_exception signal)."""
    response = exception_handler(exc, context)
    if response is None:
        request = context["request"]._request
        set_rollback()
        signals.got_request_exception.send(sender=None, request=request)
        if errors.is_unavailable(exc):  # a dependency down: 503, try again (config.errors)
            response = Response(
                {"detail": errors.UNAVAILABLE},
                status=status.HTTP_503_SERVICE_UNAVAILABLE,
                headers=errors.unavailable_headers(request),
            )
        else:
            response = Response(
                {"detail": "Server error: the request failed on our side and has been logged."},
                status=status.HTTP_500_INTERNAL_SERVER_ERROR,
            )
        log_response(
            "%s: %s",
            response.reason_phrase,
            request.path,
            response=response,
            request=request,
            exception=exc,
        )
        return response
    if isinstance(exc, ValidationError):
        response.data = flatten_errors(response.data)
    return response


MAX_JSON_BODY = 1_000_000  # bytes; the largest real body (500 decisions) is a fraction of it


class BodyTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = f"A JSON body may be at most {MAX_JSON_BODY:,} bytes."
    default_code = "too_large"


class SafeJSONParser(JSONParser):
    """JSON bodies read with annotate.common.safe_json, as the importers read their lines. DRF's own
    parser refuses NaN but takes 1e400 as infinity, passes NUL characters and lone surrogates
    on to the database, and lets deep nesting raise RecursionError: a 500 at every endpoint.
    Here each is a 400 naming the field (`{"decisions.0.value": ["NaN is not ..."]}`)."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", "utf-8")
        body = stream.read(MAX_JSON_BODY + 1)
        if len(body) > MAX_JSON_BODY:
            raise BodyTooLarge()
        try:
            return safe_json.loads(body.decode(encoding))
        except UnicodeDecodeError as exc:
            raise ParseError(
                f"The body is not {encoding}: {exc.reason} at byte {exc.start}."
            ) from None
        except (LookupError, json.JSONDecodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        except safe_json.UnsafeJSON as exc:
            errors: dict[str, list[str]] = {}
            for problem in exc.problems:
                errors.setdefault(problem.where(style="api") or "non_field_errors", []).append(
                    problem.message
                )
            raise ValidationError(errors) from None


class JSONLinesParser(BaseParser):
    """A raw JSONL body (a bundle, a judge run, labels), streamed line by line."""

    media_type = "application/x-ndjson"

    def parse(self, stream, media_type=None, parser_context=None):
        return {"lines": stream if stream is not None else []}


class JSONLParser(JSONLinesParser):
    media_type = "application/jsonl"


class StreamRenderer(BaseRenderer):
    """Lets a client ask for a download's media type; errors are still JSON text."""

    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return JSONRenderer().render(data)


class JSONLinesRenderer(StreamRenderer):
    media_type = "application/x-ndjson"
    format = "jsonl"


class CSVRenderer(StreamRenderer):
    media_type = "text/csv"
    format = "csv"


UPLOAD_PARSERS = [MultiPartParser, JSONLinesParser, JSONLParser]
ERROR_400 = OpenApiResponse(
    OpenApiTypes.OBJECT, description="Invalid input: field path to a list of messages."
)
LINE_ERRORS_400 = OpenApiResponse(
    s.LineErrorsSerializer, description="Refused; every problem by line; nothing written."
)
DENIED = {
    401: OpenApiResponse(s.DetailSerializer, description="Not authenticated."),
    403: OpenApiResponse(s.DetailSerializer, description="Your role does not allow this."),
    404: OpenApiResponse(
        s.DetailSerializer, description="Not found, or a project you have no role in."
    ),
    429: OpenApiResponse(
        s.DetailSerializer,
        description="Too many wrong tokens from your address: try again after Retry-After.",
    ),
    503: OpenApiResponse(
        s.DetailSerializer,
        description="The database or the task queue did not answer: nothing was queued; try "
        "again after Retry-After.",
    ),
}
CONFLICT_409 = OpenApiResponse(s.DetailSerializer, description="The current state refuses it.")
TOO_LARGE_413 = OpenApiResponse(
    s.DetailSerializer, description="The file is past the upload limit (CLAIMDESK_MAX_UPLOAD_MB)."
)


def responses(ok, **extra) -> dict:
    """The documented responses of an endpoint: its success, the denials every project
    endpoint can answer, and any extra ones (keyed 'r400', 'r409', …)."""
    out = dict(ok) if isinstance(ok, dict) else {200: ok}
    out.update(DENIED)
    out.update({int(key[1:]): value for key, value in extra.items()})
    return out


class UploadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


def upload_lines(request, serializer_class=None):
    """(lines, validated form fields) of an upload: a multipart `file`, or a raw JSONL body;
    413 past CLAIMDESK_MAX_UPLOAD_MB (a raw body before it is read)."""
    if request.content_type.startswith("multipart/"):
        serializer = serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        if upload.size > uploads.max_upload_bytes():
            raise UploadTooLarge(uploads.too_large_message(upload.size))
        return not_blank(upload), serializer.validated_data
    size = uploads.declared_length(request)
    if size > uploads.max_upload_bytes():
        raise UploadTooLarge(uploads.too_large_message(size))
    return not_blank(request.data.get("lines", [])), {}


def upload_file(request, serializer_class=None):
    """(file, validated form fields) of an upload that a worker will import: a multipart
    `file`, or a raw JSONL body (read as it is stored); 413 past CLAIMDESK_MAX_UPLOAD_MB."""
    if request.content_type.startswith("multipart/"):
        serializer = serializer_class(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        if upload.size > uploads.max_upload_bytes():
            raise UploadTooLarge(uploads.too_large_message(upload.size))
        return upload, serializer.validated_data
    size = uploads.declared_length(request)
    if size > uploads.max_upload_bytes():
        raise UploadTooLarge(uploads.too_large_message(size))
    stream = request.data.get("lines")
    if stream is None or not hasattr(stream, "read"):
        raise ValidationError({"errors": ["The file is empty."]})
    return File(stream, name="body.jsonl"), {}


def start_import(**kwargs) -> Response:
    """Queue an upload's import: 202 and the job to poll (already finished when
    CLAIMDESK_TASKS=immediate); 400 for an empty file."""
    try:
        job = jobs.start_import(**kwargs)
    except jobs.EmptyUpload as exc:
        raise ValidationError({"errors": [str(exc)]}) from exc
    return accepted(job)


def not_blank(lines: Iterable) -> Iterator:
    """The lines, refused with 400 when there is nothing but blank lines: an empty file is
    a mistake, and a new project must learn its corpus_version from it. The lines read to
    find out are given back, so line numbers stay right."""
    lines = iter(lines)
    head = []
    for line in lines:
        head.append(line)
        if line.strip():
            return itertools.chain(head, lines)
    raise ValidationError({"errors": ["The file is empty."]})


def query(serializer_class, request) -> dict:
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def refused(exc: ServiceError, code: int = status.HTTP_409_CONFLICT) -> Response:
    return Response({"detail": str(exc)}, status=code)


def line_errors(exc: BundleInvalid) -> Response:
    """Every error by line (for scripts), and the same grouped by message (for people)."""
    return Response(
        {"errors": [str(error) for error in exc.errors], "summary": exc.grouped()},
        status=status.HTTP_400_BAD_REQUEST,
    )


class APIView(DRFAPIView):
    """Base of every endpoint: token first (a script without one gets 401 and a
    WWW-Authenticate header), then the browser's session; flat validation errors."""

    authentication_classes = [TokenAuthentication, SessionAuthentication]
    permission_classes = [IsAuthenticated]
    parser_classes = [SafeJSONParser]

    def get_exception_handler(self):
        return api_exception_handler


class Pagination(LimitOffsetPagination):
    """?limit=&offset= on every list (50 by default), bounded so that no request can ask the
    database for an absurd slice."""

    max_limit = 500
    max_offset = 10**9

    def get_limit(self, request) -> int:
        limit = _whole_number(request, self.limit_query_param, minimum=1)
        return self.default_limit if limit is None else min(limit, self.max_limit)

    def get_offset(self, request) -> int:
        offset = _whole_number(request, self.offset_query_param, minimum=0)
        return 0 if offset is None else min(offset, self.max_offset)

    def get_schema_operation_parameters(self, view) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1 if parameter["name"] == "limit" else 0
        return parameters


def _whole_number(request, name: str, *, minimum: int) -> int | None:
    """A ?limit= or ?offset=: None when absent or empty; a 400 naming it when it is not a
    whole number of at least `minimum` (DRF's pagination reads `abc` or `-1` as absent,
    which hides a script's mistake). Any number of digits is taken, and bounded."""
    raw = request.query_params.get(name, "")
    if raw == "":
        return None
    if not (raw.isascii() and raw.isdigit()) or (len(raw) < 13 and int(raw) < minimum):
        raise ValidationError({name: [f"A whole number, {minimum} or more."]})
    return int(raw) if len(raw) < 13 else 10**12


class ListView(ListAPIView):
    """Put first in a list endpoint's bases: paginated with Pagination."""

    pagination_class = Pagination


class ProjectView(APIView):
    """An endpoint under /projects/<slug>/: sets self.project and self.role."""

    permission_classes = [IsAuthenticated, HasProjectRole]
    roles: tuple[str, ...] = ()
    project: Project
    role: str


class LeadView(ProjectView):
    roles = (Role.LEAD,)


class ReviewerView(ProjectView):
    roles = (Role.REVIEWER,)


def stream(rows, *, fmt: str, filename: str) -> StreamingHttpResponse:
    body = jsonl(rows) if fmt == "jsonl" else gold_csv(rows)
    content_type = "application/x-ndjson" if fmt == "jsonl" else "text/csv"
    response = StreamingHttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# --- Projects --------------------------------------------------------------------------------


class ProjectList(ListView, APIView):
    serializer_class = s.ProjectSerializer
    parser_classes = UPLOAD_PARSERS

    def get_queryset(self):
        filters = query(s.ProjectFilterSerializer, self.request)
        memberships = Membership.objects.filter(user=self.request.user).select_related("project")
        if "state" in filters:
            memberships = memberships.filter(project__state=filters["state"])
        if "role" in filters:
            memberships = memberships.filter(role=filters["role"])
        return memberships.order_by("project__name", "project__slug")

    @extend_schema(
        tags=["projects"],
        summary="The projects you have a role in",
        parameters=[s.ProjectFilterSerializer],
        responses={200: s.ProjectSerializer(many=True), 400: ERROR_400, **DENIED},
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
            "multipart/form-data": s.ProjectCreateSerializer,
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
            upload, data = upload_file(request, s.ProjectCreateSerializer)
        else:
            data = query(s.NewProjectQuerySerializer, request)
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
    @extend_schema(
        tags=["projects"], summary="One project", responses=responses(s.ProjectSerializer)
    )
    def get(self, request, slug):
        membership = Membership(project=self.project, user=request.user, role=self.role)
        return Response(s.ProjectSerializer(membership).data)


class LabelSchemaView(LeadView):
    @extend_schema(
        tags=["projects"],
        summary="Which fields reviewers label; only before labelling opens",
        request=s.LabelSchemaSerializer,
        responses=responses(s.ProjectSerializer, r400=ERROR_400, r409=CONFLICT_409),
    )
    def put(self, request, slug):
        serializer = s.LabelSchemaSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            project = set_label_schema(project=self.project, schema=serializer.validated_data)
        except ServiceError as exc:
            return refused(exc)
        membership = Membership(project=project, user=request.user, role=self.role)
        return Response(s.ProjectSerializer(membership).data)


class OpenLabelling(LeadView):
    @extend_schema(
        tags=["projects"],
        summary="Open labelling: lock the claims and open the queue",
        request=None,
        responses=responses(s.ProjectSerializer, r409=CONFLICT_409),
    )
    def post(self, request, slug):
        try:
            project = open_labelling(project=self.project)
        except ServiceError as exc:
            return refused(exc)
        membership = Membership(project=project, user=request.user, role=self.role)
        return Response(s.ProjectSerializer(membership).data)


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
            "multipart/form-data": s.BundleUploadSerializer,
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
        options = query(s.ReplaceQuerySerializer, request)  # checked whatever the body
        upload, data = upload_file(request, s.BundleUploadSerializer)
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
            "multipart/form-data": s.FileUploadSerializer,
            "application/x-ndjson": OpenApiTypes.BINARY,
        },
        responses=responses({202: ACCEPTED_202}, r400=ERROR_400, r413=TOO_LARGE_413),
    )
    def post(self, request, slug):
        upload, _ = upload_file(request, s.FileUploadSerializer)
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
            "multipart/form-data": s.GoldUploadSerializer,
            "application/x-ndjson": OpenApiTypes.BINARY,
        },
        parameters=[
            OpenApiParameter("source", str, description="With a raw JSONL body (required)."),
            OpenApiParameter("replace", bool, description="With a raw JSONL body."),
        ],
        responses=responses({202: ACCEPTED_202}, r400=ERROR_400, r413=TOO_LARGE_413),
    )
    def post(self, request, slug):
        upload, data = upload_file(request, s.GoldUploadSerializer)
        if not data:
            data = query(s.GoldSourceSerializer, request)
        return start_import(
            kind=Job.Kind.GOLD_IMPORT,
            user=request.user,
            upload=upload,
            slug=self.project.slug,
            project=self.project,
            params={"source": data["source"], "replace": data["replace"]},
        )


# --- Members ---------------------------------------------------------------------------------


class MemberList(ListView, LeadView):
    serializer_class = s.MemberSerializer

    def get_queryset(self):
        filters = query(s.MemberFilterSerializer, self.request)
        members = self.project.memberships.select_related("user")
        if "role" in filters:
            members = members.filter(role=filters["role"])
        return members.order_by("role", "user__username")

    @extend_schema(
        tags=["members"],
        summary="The project's members",
        parameters=[s.MemberFilterSerializer],
        responses=responses(s.MemberSerializer(many=True), r400=ERROR_400),
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["members"],
        summary="Give a person a role (creating the account if needed)",
        description="A lead adds people already in a project they lead; anyone else (an "
        "account they do not share a project with, or a new one) takes staff or the "
        "`annotate.add_membership` permission, and is otherwise refused with 400 on "
        "`username`, alike whether the account exists or not.",
        request=s.AddMemberSerializer,
        responses=responses({201: s.MemberSerializer}, r400=ERROR_400),
    )
    def post(self, request, slug):
        serializer = s.AddMemberSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            membership = add_project_member(
                project=self.project,
                username=data["username"],
                role=data["role"],
                by=request.user,
                password=data.get("password") or None,
            )
        except MemberError as exc:
            raise ValidationError({exc.field or "non_field_errors": [str(exc)]}) from exc
        except ServiceError as exc:
            raise ValidationError({"non_field_errors": [str(exc)]}) from exc
        return Response(s.MemberSerializer(membership).data, status=status.HTTP_201_CREATED)


class MemberDetail(LeadView):
    def membership(self, username: str) -> Membership:
        membership = (
            self.project.memberships.filter(user__username=username)
            .select_related("user", "project")
            .first()
        )
        if membership is None:
            raise NotFound()
        return membership

    @extend_schema(tags=["members"], summary="One member", responses=responses(s.MemberSerializer))
    def get(self, request, slug, username):
        return Response(s.MemberSerializer(self.membership(username)).data)

    @extend_schema(
        tags=["members"],
        summary="Change a member's role (the project keeps at least one lead)",
        request=s.MemberRoleSerializer,
        responses=responses(s.MemberSerializer, r400=ERROR_400, r409=CONFLICT_409),
    )
    def patch(self, request, slug, username):
        serializer = s.MemberRoleSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        membership = self.membership(username)
        if "role" not in serializer.validated_data:  # a PATCH that changes nothing
            return Response(s.MemberSerializer(membership).data)
        try:
            membership = change_member_role(
                membership=membership, role=serializer.validated_data["role"]
            )
        except ServiceError as exc:
            return refused(exc)
        return Response(s.MemberSerializer(membership).data)

    @extend_schema(
        tags=["members"],
        summary="Remove a member (their submitted labels stay)",
        responses=responses({204: None}, r409=CONFLICT_409),
    )
    def delete(self, request, slug, username):
        try:
            remove_member(membership=self.membership(username))
        except ServiceError as exc:
            return refused(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- Tasks (reviewer) ------------------------------------------------------------------------

NUMBER = OpenApiParameter("number", int, OpenApiParameter.PATH, description="The task number.")


class TaskView(ReviewerView):
    """A reviewer's own task, by number; anyone else's answers 404."""

    def assignment(self, number: int) -> Assignment:
        assignment = selectors.task_for_reviewer(self.request.user, self.project, number)
        if assignment is None:
            raise NotFound()
        return assignment

    def task(self, assignment: Assignment) -> Response:
        screen = selectors.task_screen(assignment)
        context = {"schema": assignment.project.schema}
        return Response(s.TaskSerializer(screen, context=context).data)


class NextTask(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="Take the next task (or get back the one in progress)",
        request=None,
        responses=responses(
            {200: s.TaskSerializer, 204: OpenApiResponse(description="Nothing left to label.")},
            r409=CONFLICT_409,
        ),
    )
    def post(self, request, slug):
        try:
            assignment = next_task(project=self.project, reviewer=request.user)
        except ServiceError as exc:
            return refused(exc)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return self.task(assignment)


class MyTasks(ListView, ReviewerView):
    serializer_class = s.MyTaskSerializer

    def get_queryset(self):
        filters = query(s.TaskFilterSerializer, self.request)
        tasks = (
            Assignment.objects.for_reviewer(self.request.user)
            .filter(project=self.project)
            .select_related("answer")
        )
        if "status" in filters:
            tasks = tasks.filter(status=filters["status"])
        return tasks.order_by("taken_at", "answer__task_number")  # never the rows' order

    @extend_schema(
        tags=["tasks"],
        summary="Your tasks in this project",
        parameters=[s.TaskFilterSerializer],
        responses=responses(s.MyTaskSerializer(many=True), r400=ERROR_400),
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class TaskDetail(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="A task as the labelling page shows it",
        parameters=[NUMBER],
        responses=responses(s.TaskSerializer),
    )
    def get(self, request, slug, number):
        return self.task(self.assignment(number))


class ClaimDraft(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="Save a draft of one claim's label",
        description="Values that break a rule (a quote not in the chosen passage) are kept and "
        "reported in `problems`; submitting refuses until they are fixed.",
        parameters=[
            NUMBER,
            OpenApiParameter("index", int, OpenApiParameter.PATH, description="0-based claim."),
        ],
        request=s.ClaimDraftSerializer,
        responses=responses(
            s.ClaimDraftResultSerializer,
            r400=ERROR_400,
            r409=OpenApiResponse(
                s.ClaimDraftConflictSerializer,
                description="The task is submitted (`detail` only), or the label has moved on "
                "since `version` (the stored label comes with it); nothing was written.",
            ),
        ),
    )
    def patch(self, request, slug, number, index):
        assignment = self.assignment(number)
        screen = selectors.task_screen(assignment, progress=False)
        row = next((r for r in screen.claims if r.claim.ordinal == index), None)
        if row is None:
            raise NotFound()
        serializer = s.ClaimDraftSerializer(
            data=request.data,
            context={
                "passage_ids": set(screen.shown),
                "cited_ids": {c.cited_id for c in row.citations},
                "schema": assignment.project.schema,
            },
        )
        if not serializer.is_valid():
            raise ValidationError(flatten_errors(serializer.errors, f"claims.{index}"))
        data = dict(serializer.validated_data)
        version = data.pop("version", None)
        schema = assignment.project.schema
        try:
            label, errors = save_claim_label(
                assignment=assignment,
                claim=row.claim,
                data=data,
                citations=row.citations,
                shown=screen.shown,
                version=version,
                stored=row.label,
            )
        except StaleDraft as exc:
            current = s.ClaimLabelSerializer(exc.current, context={"schema": schema}).data
            return Response({"detail": str(exc), "label": current}, status=status.HTTP_409_CONFLICT)
        except ServiceError as exc:
            return refused(exc)
        return Response(
            {
                "label": s.ClaimLabelSerializer(
                    label, context={"schema": assignment.project.schema}
                ).data,
                "problems": s.field_paths(errors.fields),
            }
        )


class AnswerDraft(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="Save a draft of the answer-level label",
        parameters=[NUMBER],
        request=s.AnswerDraftSerializer,
        responses=responses(
            s.AnswerDraftResultSerializer,
            r400=ERROR_400,
            r409=OpenApiResponse(
                s.AnswerDraftConflictSerializer,
                description="The task is submitted (`detail` only), or the answer label has "
                "moved on since `version` (the stored label comes with it); nothing was written.",
            ),
        ),
    )
    def patch(self, request, slug, number):
        assignment = self.assignment(number)
        schema = assignment.project.schema
        serializer = s.AnswerDraftSerializer(data=request.data, context={"schema": schema})
        if not serializer.is_valid():
            raise ValidationError(flatten_errors(serializer.errors, "answer"))
        data = dict(serializer.validated_data)
        version = data.pop("version", None)
        try:
            assignment, errors = save_answer_label(
                assignment=assignment, data=data, version=version
            )
        except StaleDraft as exc:
            current = s.AnswerLabelSerializer(exc.current, context={"schema": schema}).data
            return Response({"detail": str(exc), "label": current}, status=status.HTTP_409_CONFLICT)
        except ServiceError as exc:
            return refused(exc)
        return Response(
            {
                "label": s.AnswerLabelSerializer(assignment, context={"schema": schema}).data,
                "problems": s.field_paths(errors.fields),
            }
        )


class Submit(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="Submit the task's labels",
        description="400 lists every missing or invalid label by field path, such as "
        "`claims.1.evidence_quote` or `answer.relevance`.",
        parameters=[NUMBER],
        request=None,
        responses=responses(s.TaskSerializer, r400=ERROR_400, r409=CONFLICT_409),
    )
    def post(self, request, slug, number):
        assignment = self.assignment(number)
        try:
            errors = submit_labels(assignment=assignment, source="api")
        except ServiceError as exc:
            return refused(exc)
        if errors:
            raise ValidationError(s.field_paths(errors.fields))
        return self.task(self.assignment(number))  # the service saved a fresh copy


class Skip(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="Give the task back, with a reason",
        parameters=[NUMBER],
        request=s.SkipSerializer,
        responses=responses({204: None}, r400=ERROR_400, r409=CONFLICT_409),
    )
    def post(self, request, slug, number):
        assignment = self.assignment(number)
        serializer = s.SkipSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            release_task(assignment=assignment, reason=serializer.validated_data["reason"])
        except ServiceError as exc:
            return refused(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)


class Reopen(TaskView):
    @extend_schema(
        tags=["tasks"],
        summary="Reopen a submitted task (until a lead starts adjudicating it)",
        parameters=[NUMBER],
        request=None,
        responses=responses(s.TaskSerializer, r409=CONFLICT_409),
    )
    def post(self, request, slug, number):
        try:
            assignment = reopen_task(assignment=self.assignment(number))
        except ServiceError as exc:
            return refused(exc)
        return self.task(assignment)


# --- Adjudication and gold (lead) ------------------------------------------------------------


class AdjudicationQueue(ListView, LeadView):
    serializer_class = s.QueueItemSerializer

    def get_queryset(self):
        filters = query(s.QueueFilterSerializer, self.request)
        chosen = {"slice": filters.get("slice"), "field": filters.get("field")}
        key = ("adjudication-queue", chosen["slice"], chosen["field"])
        reports = reports_of(self.project)
        return reports.get(
            key,
            lambda: adjudication_queue(
                self.project, summary=pair_summary(self.project, reports), **chosen
            ),
        )

    @extend_schema(
        tags=["adjudication"],
        summary="Answers whose reviewers disagree, most serious first",
        parameters=[s.QueueFilterSerializer],
        responses=responses(s.QueueItemSerializer(many=True), r400=ERROR_400),
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
        responses=responses(s.AdjudicationSerializer, r409=CONFLICT_409),
    )
    def get(self, request, slug, number):
        return Response(s.AdjudicationSerializer(self.screen(number)).data)

    @extend_schema(
        tags=["adjudication"],
        summary="Record gold decisions for fields of the task",
        description="Send the `version` you read; if another lead saved in between, 409 with "
        "the current version and nothing is written.",
        parameters=[NUMBER],
        request=s.AdjudicateSerializer,
        responses=responses(
            s.AdjudicationSerializer,
            r400=ERROR_400,
            r409=OpenApiResponse(s.ConflictSerializer, description="Another lead saved first."),
        ),
    )
    def post(self, request, slug, number):
        screen = self.screen(number)
        serializer = s.AdjudicateSerializer(data=request.data)
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
        return Response(s.AdjudicationSerializer(self.screen(number)).data)


class Gold(LeadView):
    fmt = "jsonl"

    def get_renderers(self):
        extra = JSONLinesRenderer() if self.fmt == "jsonl" else CSVRenderer()
        return [JSONRenderer(), extra]

    def get(self, request, slug):
        filters = query(s.GoldFilterSerializer, request)
        size = gold_size(self.project)
        if size > settings.CLAIMDESK_GOLD_STREAM_MAX_ROWS:
            job = jobs.start_gold_export(
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


GOLD_PARAMETERS = [s.GoldFilterSerializer]
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
