"""Site-wide HTTP plumbing that no single view owns."""

from __future__ import annotations

from django.db import close_old_connections, connection
from django.http import HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers

from annotate.imports import uploads
from config.errors import is_api
from jobs import health

# What a multipart body may carry beyond the file itself (boundaries, headers, small fields)
# before the middleware refuses it unread; the exact file size is checked after parsing.
MULTIPART_SLACK = 1024 * 1024


class HealthzMiddleware:
    """/healthz for load balancers, answered before any other middleware: no host check (a
    balancer probes by address), no https redirect, no session, no login. A tiny JSON body;
    503 when the database does not answer, so the balancer stops sending people here. It
    answers before SecurityMiddleware, so it sets that middleware's nosniff header itself."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path_info != "/healthz" or request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        report = health.quick()
        response = JsonResponse(report, status=200 if report["database"] == "ok" else 503)
        add_never_cache_headers(response)
        response["X-Content-Type-Options"] = "nosniff"
        return response


class RetryOnceMiddleware:
    """A GET or HEAD whose database connection broke (or whose task backend did not answer)
    is run once more before it is answered 503: a connection killed under a request (a
    database restart, a failover, a proxy's idle timeout) costs the person nothing. The
    broken connection is closed first, as at the start of any request, so the second run
    opens a new one. Other methods are answered 503 at once: their first run may have done
    part of its work, and the person decides whether to send them again.

    Placed before every middleware that reads the database (sessions, the signed-in user),
    so the second run reads them afresh. config.errors marks a request that got a 503."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if getattr(request, "claimdesk_unavailable", False) and request.method in (
            "GET",
            "HEAD",
        ):
            request.claimdesk_unavailable = False
            close_old_connections()
            response = self.get_response(request)
        return response


class NoStoreMiddleware:
    """`Cache-Control: no-store` on every answer to a signed-in person and on the whole API,
    so labels, reports, gold sets and a freshly shown API token stay out of the browser's
    disk cache and any shared proxy (a lab computer, the back button after logging out).
    Static files are answered by WhiteNoise before this runs and keep their caching."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        user = getattr(request, "user", None)
        if is_api(request) or (user is not None and user.is_authenticated):
            add_never_cache_headers(response)
        return response


class UploadLimitMiddleware:
    """413 for a request body past CLAIMDESK_MAX_UPLOAD_MB (plus MULTIPART_SLACK), judged by
    its Content-Length before anything reads it: a 2 GB upload must not tie a worker up until
    it is refused. JSON under /api/, a short page elsewhere (the upload forms check the size in
    the browser first, so people rarely see it)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        size = uploads.declared_length(request)
        if size > uploads.max_upload_bytes() + MULTIPART_SLACK:
            message = uploads.too_large_message(size)
            if is_api(request):
                return JsonResponse({"detail": message}, status=413)
            return HttpResponse(
                f"<!doctype html><title>Upload too large</title><h1>Upload too large</h1>"
                f'<p>{message}</p><p><a href="/">Your projects</a></p>',
                status=413,
            )
        return self.get_response(request)


class QueryCountHeaderMiddleware:
    """`X-Query-Count` on every response: the database round trips the request made. For
    bench/reference.py, which measures a real server over HTTP; switched on only by the
    CLAIMDESK_QUERY_COUNT_HEADER environment variable, never in a deployment."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        count = 0

        def counting(execute, sql, params, many, context):
            nonlocal count
            count += 1
            return execute(sql, params, many, context)

        with connection.execute_wrapper(counting):
            response = self.get_response(request)
        response["X-Query-Count"] = str(count)
        return response
