"""The webhook task a worker runs, one per delivery, and how deliveries are queued.

`deliver` makes one attempt (annotate.webhooks.sending) and, when it failed with retries
left, queues itself again to run at the delivery's next attempt (the backend's `run_after`).
A backend that cannot defer (CLAIMDESK_TASKS=immediate) leaves the delivery due for the sweep,
`send_due`, which `manage.py deliver_webhooks` runs and which also takes again what a lost
task or a dead worker left behind.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.utils import timezone

from annotate.models import WebhookDelivery
from annotate.webhooks import sending
from jobs import framework
from jobs.framework import task

logger = logging.getLogger(__name__)


@task
def deliver(delivery_id: int) -> None:
    delivery = sending.attempt(delivery_id)
    if delivery is not None and delivery.status == WebhookDelivery.Status.PENDING:
        schedule_retry(delivery.pk, delivery.next_attempt_at)


def enqueue(delivery_ids: list[int]) -> None:
    """Queue each delivery's task. With CLAIMDESK_TASKS=immediate the task runs here, in this
    process: emit calls this once the event's transaction has committed (docs/webhooks.md)."""
    for pk in delivery_ids:
        try:
            framework.send(deliver, pk)
        except framework.BackendUnavailable:
            logger.warning("webhook delivery %s not queued: the task backend is down", pk)


def schedule_retry(delivery_id: int, when: datetime) -> None:
    if not framework.task_backends["default"].supports_defer:
        return  # immediate: the sweep sends it once due
    try:
        framework.send(deliver.using(run_after=when), delivery_id)
    except framework.BackendUnavailable:
        logger.warning("webhook delivery %s: retry not queued, no task backend", delivery_id)


def send_due(*, now: datetime | None = None) -> int:
    """Queue every pending delivery whose time has come: a retry a backend could not defer, a
    task lost with a Redis restart, an attempt whose worker died (its lease over). With
    CLAIMDESK_TASKS=immediate they are sent here, one after the other."""
    due = list(
        WebhookDelivery.objects.filter(
            status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=now or timezone.now()
        )
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)
    )
    enqueue(due)
    return len(due)
