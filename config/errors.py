"""Error responses: JSON under /api/, the site's pages everywhere else.

DRF turns its own exceptions into JSON (annotate.api.views.api_exception_handler, which also
answers an unexpected exception in an API view with a JSON 500). What happens outside a DRF
view -- in a middleware, in the URL resolver, in a plain Django view under /api/ -- reaches
Django's error handlers, named in config.urls; these give an API client the same
`{"detail": ...}` body instead of an HTML page.
"""

from __future__ import annotations

from django.http import JsonResponse
from django.views import defaults


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


def server_error(request, template_name=defaults.ERROR_500_TEMPLATE_NAME):
    if is_api(request):
        return _json("Server error: the request failed on our side and has been logged.", 500)
    return defaults.server_error(request, template_name)
