"""Who may do what outside a project's roles: today, who may create projects.

Roles are per project (annotate.models.Membership); creating a project is the one act that
comes before any role. It is for staff, for users given the "Can add project" permission
(``annotate.add_project``, in the admin or with ``allow_creating_projects``), or for every
signed-in user when ``CLAIMDESK_ANYONE_CAN_CREATE_PROJECTS`` is on.
"""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

CREATE_PROJECTS = "annotate.add_project"


def may_create_projects(user) -> bool:
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    if getattr(settings, "CLAIMDESK_ANYONE_CAN_CREATE_PROJECTS", False):
        return True
    return user.is_staff or user.has_perm(CREATE_PROJECTS)


def project_creators_only(view):
    """A page for those who may create projects: others get 403 (after logging in)."""

    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not may_create_projects(request.user):
            raise PermissionDenied("You may not create projects: ask an administrator.")
        return view(request, *args, **kwargs)

    return wrapper
