"""The reviewer's way into the queue: their project page (progress, the task in progress, the
button for the next one), taking the next task, and the page that says the queue is empty.
A lead's project page is the set-up dashboard."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotate.common.errors import ServiceError
from annotate.common.roles import project_view
from annotate.labelling import selectors
from annotate.models import Role
from annotate.queue.services import next_task


@project_view()
def project_page(request, project, role):
    if role == Role.LEAD:
        return redirect("project_setup", slug=project.slug)
    return render(
        request,
        "annotate/reviewer_home.html",
        {
            "project": project,
            "role": role,
            "progress": selectors.reviewer_progress(request.user, project),
            "current": selectors.task_in_progress(request.user, project),
            "reopen_minutes": settings.CLAIMDESK_REOPEN_MINUTES,
        },
    )


@require_POST
@project_view(Role.REVIEWER)
def take_next(request, project, role):
    try:
        assignment = next_task(project=project, reviewer=request.user)
    except ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("project", slug=project.slug)
    if assignment is None:
        return redirect("queue_empty", slug=project.slug)
    return redirect("task", slug=project.slug, number=assignment.answer.task_number)


@project_view(Role.REVIEWER)
def queue_empty(request, project, role):
    progress = selectors.reviewer_progress(request.user, project)
    return render(
        request,
        "annotate/queue_empty.html",
        {"project": project, "role": role, "progress": progress},
    )
