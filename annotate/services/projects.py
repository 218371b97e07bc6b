"""A project's settings: guidelines and overlap."""

from __future__ import annotations

from django.db import transaction

from annotate.models import (
    Project,
)
from annotate.services.base import ServiceError

# --- Guidelines ------------------------------------------------------------------------------


@transaction.atomic
def update_guidelines(*, project: Project, guidelines: str, overlap: int | None = None) -> Project:
    """Guidelines may change at any time; overlap only in draft (the queue is built on it)."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    if overlap is not None and overlap != project.overlap:
        if project.state != Project.State.DRAFT:
            raise ServiceError("Overlap is fixed once labelling opens.")
        if overlap < 1:
            raise ServiceError("Overlap is at least 1 (each answer needs a reviewer).")
        project.overlap = overlap
    project.guidelines = guidelines
    project.save(update_fields=["guidelines", "overlap"])
    return project
