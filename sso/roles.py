"""A person's roles, as the provider's claim grants them (sso.mapping), written at each login."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from django.db import transaction

from annotate.models import Membership, Project, Role

log = logging.getLogger(__name__)


@transaction.atomic
def sync_roles(
    *, user, roles: Mapping[str, str], owned: frozenset[str]
) -> list[tuple[str, str | None, str | None]]:
    """Make ``user``'s role in each existing project of ``owned`` the one ``roles`` grants:
    added, changed, or removed when none is granted. Projects outside ``owned`` are not
    touched, whatever ``roles`` says of them. One rule wins over the claim: a project keeps a
    lead (as on the members page), so its last lead stays lead until another is added.

    Returns the changes, (slug, role before, role after), None for no role."""
    projects = Project.objects.filter(slug__in=owned).order_by("slug")
    held = {
        membership.project_id: membership
        for membership in Membership.objects.select_for_update().filter(
            user=user, project__in=projects
        )
    }
    changes = []
    for project in projects:
        membership = held.get(project.pk)
        before = membership.role if membership else None
        after = roles.get(project.slug)
        if before == after:
            continue
        if before == Role.LEAD and _lead_count(project) <= 1:
            log.warning(
                "single sign-on: %s keeps the lead role in %s, whose only lead they are, "
                "though their claim grants %s",
                user.get_username(),
                project.slug,
                after or "no role",
            )
            continue
        if membership is None:
            Membership.objects.create(project=project, user=user, role=after)
        elif after is None:
            membership.delete()
        else:
            membership.role = after
            membership.save(update_fields=["role"])
        changes.append((project.slug, before, after))
    return changes


def _lead_count(project: Project) -> int:
    # Locking every lead row serialises this with a lead demoting or removing another.
    return len(Membership.objects.select_for_update().filter(project=project, role=Role.LEAD))
