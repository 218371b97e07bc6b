"""Who may do what outside a project's roles: who may create projects, and whom a lead may add.

Roles are per project (annotate.models.Membership); creating a project is the one act that
comes before any role. It is for staff, for users given the "Can add project" permission
(``annotate.add_project``, in the admin or with ``allow_creating_projects``), or for every
signed-in user when ``CLAIMDESK_ANYONE_CAN_CREATE_PROJECTS`` is on.

Adding a person to a project by username reaches outside it, to the site's accounts. A lead
adds the people already in a project they lead; adding anyone else -- an account of someone
they do not work with, or a new one -- is for staff and for users given the "Can add
membership" permission (``annotate.add_membership``, with ``allow_adding_anyone``), as the
management commands are for the server's operators. Otherwise a lead could put any account
into their project (a project in its owner's list they never asked for, led by a stranger)
and would learn which usernames exist.
"""

from __future__ import annotations

from functools import wraps

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied

CREATE_PROJECTS = "annotate.add_project"
ADD_ANYONE = "annotate.add_membership"


def may_create_projects(user) -> bool:
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    if getattr(settings, "CLAIMDESK_ANYONE_CAN_CREATE_PROJECTS", False):
        return True
    return user.is_staff or user.has_perm(CREATE_PROJECTS)


def may_add_anyone(user) -> bool:
    """Whether ``user`` may add any account to a project they lead, creating it if needed."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return user.is_staff or user.has_perm(ADD_ANYONE)


def project_creators_only(view):
    """A page for those who may create projects: others get 403 (after logging in)."""

    @login_required
    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if not may_create_projects(request.user):
            raise PermissionDenied("You may not create projects: ask an administrator.")
        return view(request, *args, **kwargs)

    return wrapper
