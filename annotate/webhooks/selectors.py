"""Reads of webhooks: a project's endpoints and its delivery log (lead only: the callers are
behind project_view(Role.LEAD) and the API's LeadView)."""

from __future__ import annotations

from django.db.models import QuerySet

from annotate.models import Project, WebhookDelivery, WebhookEndpoint

LOG_SIZE = 50


def endpoints_of(project: Project) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(project=project).order_by("created_at", "pk")


def endpoint_of(project: Project, pk) -> WebhookEndpoint | None:
    """One endpoint of this project, or None (another project's is not found either)."""
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        return None
    return endpoints_of(project).filter(pk=pk).first()


def delivery_log(
    project: Project, *, endpoint: WebhookEndpoint | None = None, status: str | None = None
) -> QuerySet[WebhookDelivery]:
    """The project's deliveries, newest first, each with its endpoint (one query a page)."""
    deliveries = WebhookDelivery.objects.filter(endpoint__project=project)
    if endpoint is not None:
        deliveries = deliveries.filter(endpoint=endpoint)
    if status:
        deliveries = deliveries.filter(status=status)
    return deliveries.select_related("endpoint").order_by("-created_at", "-pk")
