"""A project's settings: guidelines, overlap and label schema."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db import transaction

from annotate.common import computed
from annotate.common.errors import ServiceError
from annotate.models import GuidelineVersion, Project
from annotate.schema import LabelSchema

# --- Guidelines ------------------------------------------------------------------------------


@transaction.atomic
def update_guidelines(
    *, project: Project, guidelines: str, overlap: int | None = None, author=None
) -> Project:
    """Guidelines may change at any time; overlap only in draft (the queue is built on it).
    A changed text is a new version (GuidelineVersion, numbered on from the project's
    current one, with its author and time); the same text saved again is none."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    if overlap is not None and overlap != project.overlap:
        if project.state != Project.State.DRAFT:
            raise ServiceError("Overlap is fixed once labelling opens.")
        if overlap < 1:
            raise ServiceError("Overlap is at least 1 (each answer needs a reviewer).")
        project.overlap = overlap
    fields = ["overlap"]
    if guidelines != project.guidelines:
        version = GuidelineVersion.objects.create(
            project=project,
            number=project.guidelines_version + 1,
            text=guidelines,
            author=author if author is not None and author.is_authenticated else None,
        )
        project.guidelines = guidelines
        project.guidelines_version = version.number
        project.guidelines_changed_at = version.created_at
        fields += ["guidelines", "guidelines_version", "guidelines_changed_at"]
    project.save(update_fields=fields)
    computed.touch(project)
    return project


@transaction.atomic
def set_label_schema(*, project: Project, schema: LabelSchema) -> Project:
    """Which fields reviewers label. Only in draft: once labelling opens, labels exist under
    the schema and changing it would drop or invent fields in them."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    if project.state != Project.State.DRAFT:
        raise ServiceError("The label schema is locked once labelling opens.")
    project.label_schema = schema.as_dict()
    project.save(update_fields=["label_schema"])
    computed.touch(project, content=True, answers=computed.ALL)
    return project


# --- Who may create projects -----------------------------------------------------------------


@transaction.atomic
def allow_creating_projects(*, user):
    """Give ``user`` the permission to create projects
    (annotate.projects.access.CREATE_PROJECTS). Returns the user read again from the database:
    Django caches a user's permissions on the instance that checked them, and fetching the
    user again is its documented way to see a permission just granted."""
    permission = Permission.objects.get(content_type__app_label="annotate", codename="add_project")
    user.user_permissions.add(permission)
    return get_user_model().objects.get(pk=user.pk)
