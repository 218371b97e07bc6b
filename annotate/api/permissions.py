"""Who may reach an API endpoint: the same rule as the pages' `project_view`.

A project is resolved from the URL's slug through `project_for`, which only finds
projects the user has a role in. Anyone without a role gets 404, so a project's existence does
not leak; a member whose role the endpoint does not serve (a reviewer on a lead endpoint, a
lead on a reviewer's task) gets 403, since they already know the project exists.
"""

from __future__ import annotations

from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission

from annotate.common.roles import project_for


class HasProjectRole(BasePermission):
    """Resolves `view.project` and `view.role` from the `slug` URL argument and checks the
    role against `view.roles` (empty: any role)."""

    message = "Your role in this project does not allow this."

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        found = project_for(request.user, view.kwargs["slug"])
        if found is None:
            raise NotFound()
        view.project, view.role = found
        roles = getattr(view, "roles", ())
        return not roles or view.role in roles
