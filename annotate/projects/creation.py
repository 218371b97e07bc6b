"""Creating a project, which an import does: who may create one under which slug
(check_new_slug), and the import that creates it with its creator as lead
(import_new_project for a bundle, import_as_new_project around any importer). Project slugs
are one namespace for the whole site."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.db import transaction

from annotate.common.errors import NotAllowed, ServiceError
from annotate.imports.bundle_import import import_bundle
from annotate.imports.bundle_plan import ImportResult
from annotate.members.services import add_member
from annotate.models import Project, Role
from annotate.projects.access import may_create_projects

# Project slugs are one namespace for the whole site, so creating a project must refuse a slug
# in use, whoever uses it. The refusal is the one a malformed or too long slug gets (the forms
# and serializers give it as their error): it says the slug cannot be used, never that a
# project holds it, nor whose project, its name or state.
SLUG_TAKEN = (
    "This slug is not available: choose another (letters, digits, hyphens and underscores, "
    "at most 80 characters)."
)
SLUG_ERRORS = {"invalid": SLUG_TAKEN, "max_length": SLUG_TAKEN}
NOT_ALLOWED = "You may not create projects: ask an administrator for the permission."


@transaction.atomic
def import_new_project(
    *,
    lines: Iterable[bytes | str],
    slug: str,
    name: str | None,
    user,
    reimport: bool = True,
    progress: Callable[[str, int], None] | None = None,
) -> ImportResult:
    """Import a bundle as a new project whose lead is ``user``. A slug that exists is refused
    unless ``user`` already leads that project and ``reimport`` allows an ordinary re-import
    into it (pipelines do; the new-project page does not, where it would surprise). The
    check and the import share one transaction: if someone else creates the slug in between,
    nothing is written into their project."""
    return import_as_new_project(
        slug=slug,
        user=user,
        reimport=reimport,
        load=lambda: import_bundle(lines=lines, project_slug=slug, name=name, progress=progress),
    )


@transaction.atomic
def import_as_new_project(
    *, slug: str, user, reimport: bool, load: Callable[[], ImportResult]
) -> ImportResult:
    """import_new_project's rules around any importer: `load` imports into `slug` (a bundle,
    a Ragas dataset) and runs only once the slug is known to be free or the user's."""
    check_new_slug(slug=slug, user=user, reimport=reimport)
    result = load()
    if result.created_project:
        add_member(project=result.project, username=user.get_username(), role=Role.LEAD)
    elif not _leads(user, slug):
        raise ServiceError(SLUG_TAKEN)  # raised inside the transaction: the import rolls back
    return result


def check_new_slug(*, slug: str, user, reimport: bool) -> None:
    """Raise ServiceError unless `user` may import a new project under `slug`: it is free, or
    theirs and `reimport` allows adding to it. Checked when an upload is accepted (to say so
    at once) and again when it is imported (the authoritative check). NotAllowed for someone
    who may not create projects (annotate.projects.access), unless it is their own project."""
    if not may_create_projects(user) and not _leads(user, slug):
        raise NotAllowed(NOT_ALLOWED)
    if Project.objects.filter(slug=slug).exists():
        if not _leads(user, slug):
            raise ServiceError(SLUG_TAKEN)
        if not reimport:
            raise ServiceError(
                "You already lead a project with this slug: to add to it, use its Upload "
                f"page (/p/{slug}/upload/), or choose another slug."
            )


def _leads(user, slug: str) -> bool:
    return Project.objects.led_by(user).filter(slug=slug).exists()
