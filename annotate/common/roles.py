"""A user's role in a project, the one rule every project page and endpoint starts from.

project_for finds only projects the user has a role in; project_view (the pages) and the API's
HasProjectRole (annotate.api.permissions) answer 404 to anyone without one, so a project's
existence does not leak.
"""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.http import Http404

from annotate.models import Membership, Project


def project_for(user, slug: str) -> tuple[Project, str] | None:
    """The project and the user's role in it, or None when the user has no role (the caller
    answers 404 so that existence itself does not leak)."""
    membership = (
        Membership.objects.filter(user=user, project__slug=slug).select_related("project").first()
    )
    if membership is None:
        return None
    return membership.project, membership.role


def project_view(*roles: str):
    """Resolve /p/<slug>/ to (project, role) for the logged-in user, or 404."""

    def decorator(view):
        @login_required
        @wraps(view)
        def wrapper(request, slug, *args, **kwargs):
            found = project_for(request.user, slug)
            if found is None or (roles and found[1] not in roles):
                raise Http404("Not found")
            project, role = found
            return view(request, project, role, *args, **kwargs)

        return wrapper

    return decorator
