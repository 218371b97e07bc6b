"""Error responses: JSON under /api/, the site's pages everywhere else.

DRF turns its own exceptions into JSON (annotate.api.base.api_exception_handler, which also
answers an unexpected exception in an API view with a JSON 500). What happens outside a DRF
view -- in a middleware, in the URL resolver, in a plain Django view under /api/ -- reaches
Django's error handlers, named in config.urls; these give an API client the same
`{"detail": ...}` body instead of an HTML page.

A dependency that is down is not a bug: the database unreachable or its connection killed
mid-request (OperationalError, InterfaceError) and a task backend that cannot take a task
(jobs.framework.BackendUnavailable) answer 503 with Retry-After and a message saying to try
again, JSON under /api/ and a short page elsewhere -- from server_error for plain views and
middleware, from the API's exception handler for DRF's. config.middleware.RetryOnceMiddleware
runs a GET or HEAD that got one once more before answering so.
"""

from __future__ import annotations

import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template import loader
from django.views import defaults

from jobs.framework import BackendUnavailable

RETRY_AFTER_SECONDS = 10
UNAVAILABLE = (
    "The service is briefly unavailable (its database or task queue did not answer); "
    "nothing was changed by this request that you need to undo. Try again in a few seconds."
)


def is_api(request) -> bool:
    return request.path_info.startswith("/api/")


def _json(message: str, status: int) -> JsonResponse:
    return JsonResponse({"detail": message}, status=status)


def bad_request(request, exception, template_name=defaults.ERROR_400_TEMPLATE_NAME):
    if is_api(request):
        return _json("Bad request.", 400)
    return defaults.bad_request(request, exception, template_name)


def permission_denied(request, exception, template_name=defaults.ERROR_403_TEMPLATE_NAME):
    if is_api(request):
        return _json("You do not have permission to perform this action.", 403)
    return defaults.permission_denied(request, exception, template_name)


def page_not_found(request, exception, template_name=defaults.ERROR_404_TEMPLATE_NAME):
    if is_api(request):
        return _json("Not found.", 404)
    return defaults.page_not_found(request, exception, template_name)


def is_unavailable(exc: BaseException | None) -> bool:
    """Whether ``exc`` says a dependency is down rather than that the code is wrong."""
    return isinstance(exc, (OperationalError, InterfaceError, BackendUnavailable))


def unavailable_headers(request) -> dict[str, str]:
    """A 503's headers; and the request is marked for RetryOnceMiddleware."""
    request.claimdesk_unavailable = True
    return {"Retry-After": str(RETRY_AFTER_SECONDS)}


def service_unavailable(request) -> HttpResponse:
    """503 in the request's own format. The page is standalone: the site's layout reads the
    signed-in user, which takes the database that just failed."""
    headers = unavailable_headers(request)
    if is_api(request):
        return JsonResponse({"detail": UNAVAILABLE}, status=503, headers=headers)
    page = loader.get_template("503.html").render({"message": UNAVAILABLE})
    return HttpResponse(page, status=503, headers=headers)


def server_error(request, template_name=defaults.ERROR_500_TEMPLATE_NAME):
    # Django calls this handler while it handles the exception: sys.exc_info() holds it.
    if is_unavailable(sys.exc_info()[1]):
        return service_unavailable(request)
    if is_api(request):
        return _json("Server error: the request failed on our side and has been logged.", 500)
    return defaults.server_error(request, template_name)
