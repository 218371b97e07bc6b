"""Reads. Scoping (who may see what) and eager loading live here, so views never hold a bare
`get(pk=...)` on answers or labels."""

from __future__ import annotations

from django.db.models import Count

from annotate.models import Membership, Project


def projects_for(user) -> list[dict]:
    """The user's projects with their role and progress, one query."""
    memberships = (
        Membership.objects.filter(user=user)
        .select_related("project")
        .annotate(
            answers=Count("project__answers", distinct=True),
        )
        .order_by("project__name")
    )
    return [{"project": m.project, "role": m.role, "answers": m.answers} for m in memberships]


def project_for(user, slug: str) -> tuple[Project, str] | None:
    """The project and the user's role in it, or None when the user has no role (the caller
    answers 404 so that existence itself does not leak)."""
    membership = (
        Membership.objects.filter(user=user, project__slug=slug).select_related("project").first()
    )
    if membership is None:
        return None
    return membership.project, membership.role
