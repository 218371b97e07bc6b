"""What every endpoint of the API shares (annotate's, evaluation's and jobs'): the base
views (token then session authentication, flat validation errors, the project role), JSON and
JSONL parsing, uploads, pagination, streamed downloads, the documented error answers, and the
serializer fields every module uses.

Every project endpoint resolves the caller's role through `HasProjectRole` (404 without a
role, 403 for the wrong one), exactly as the pages do. Errors: a validation problem is 400
with a flat body `{"field.path": ["message", ...]}` (`claims.1.evidence_quote`,
`decisions.0.field`); an import refused is 400 with `{"errors": ["line N: message", ...]}`; a
request the current state refuses (labelling not open, task already submitted, another lead
saved first) is 409 with `{"detail": ...}`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from typing import Any

from django.core import signals
from django.core.files import File
from django.core.files.uploadedfile import SimpleUploadedFile
from django.http import FileResponse, StreamingHttpResponse
from django.utils.log import log_response
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import APIException, ParseError, ValidationError
from rest_framework.generics import ListAPIView
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.parsers import BaseParser, JSONParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView as DRFAPIView
from rest_framework.views import exception_handler, set_rollback

from annotate.api.permissions import HasProjectRole
from annotate.common import safe_json
from annotate.common.errors import ServiceError
from annotate.common.jsonl import jsonl
from annotate.gold.exports import content_type, gold_csv
from annotate.gold.parquet import parquet_file
from annotate.imports import uploads
from annotate.imports.lines import BundleInvalid
from annotate.members.tokens import TokenAuthentication
from annotate.models import Project, Role
from config import errors
from jobs import accept as jobs
from jobs.serializers import accepted

MAX_QUOTE = 2000


MAX_NOTE = 5000


def blank_choices(choices) -> list:
    return [("", "(none)"), *choices]


class TextField(serializers.CharField):
    """A string in a request, as the schema says: a JSON number or list is refused, where
    DRF's CharField takes 0 for "0"."""

    default_error_messages = {"not_a_string": "Not a valid string."}

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class TextRegexField(serializers.RegexField):
    default_error_messages = TextField.default_error_messages

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("not_a_string")
        return super().to_internal_value(data)


class FilePart(serializers.FileField):
    """An upload's `file`: a file part, or a part that names no filename (RFC 7578 only
    recommends one; Django reads such a part as a plain field), taken as the file's text."""

    def to_internal_value(self, data):
        if isinstance(data, str):
            data = SimpleUploadedFile("upload", data.encode("utf-8"))
        return super().to_internal_value(data)


class LineErrorsSerializer(serializers.Serializer):
    """An import refused: every problem found, each 'line N: message'; nothing was written.
    A malformed request (no file) has field paths instead, like any other 400."""

    errors = serializers.ListField(child=serializers.CharField(), required=False)


class DetailSerializer(serializers.Serializer):
    detail = serializers.CharField()


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


class ParquetRenderer(StreamRenderer):
    media_type = "application/vnd.apache.parquet"
    format = "parquet"


UPLOAD_PARSERS = [MultiPartParser, JSONLinesParser, JSONLParser]


ERROR_400 = OpenApiResponse(
    OpenApiTypes.OBJECT, description="Invalid input: field path to a list of messages."
)


LINE_ERRORS_400 = OpenApiResponse(
    LineErrorsSerializer, description="Refused; every problem by line; nothing written."
)


DENIED = {
    401: OpenApiResponse(DetailSerializer, description="Not authenticated."),
    403: OpenApiResponse(DetailSerializer, description="Your role does not allow this."),
    404: OpenApiResponse(
        DetailSerializer, description="Not found, or a project you have no role in."
    ),
    429: OpenApiResponse(
        DetailSerializer,
        description="Too many wrong tokens from your address: try again after Retry-After.",
    ),
    503: OpenApiResponse(
        DetailSerializer,
        description="The database or the task queue did not answer: nothing was queued; try "
        "again after Retry-After.",
    ),
}


CONFLICT_409 = OpenApiResponse(DetailSerializer, description="The current state refuses it.")


TOO_LARGE_413 = OpenApiResponse(
    DetailSerializer, description="The file is past the upload limit (CLAIMDESK_MAX_UPLOAD_MB)."
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


def stream(rows, *, fmt: str, filename: str) -> StreamingHttpResponse | FileResponse:
    """Gold rows as a download: JSONL and CSV streamed as they are read; Parquet written to
    a temporary file first (its footer comes last), then sent."""
    if fmt == "parquet":
        return FileResponse(
            parquet_file(rows),
            as_attachment=True,
            filename=filename,
            content_type=content_type(fmt),
        )
    body = jsonl(rows) if fmt == "jsonl" else gold_csv(rows)
    response = StreamingHttpResponse(body, content_type=content_type(fmt))
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
