"""Site-wide HTTP plumbing that no single view owns."""

from __future__ import annotations

from django.utils.cache import add_never_cache_headers

from config.errors import is_api


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
