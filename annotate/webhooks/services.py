"""Writes of webhooks: a lead's endpoints, and `emit`, which turns an event into delivery rows.

`emit` only writes: one row per subscribed endpoint, in the transaction of the event itself
(a submit that rolls back sends nothing), and asks for the rows to be sent once that
transaction commits. The sending is a task (annotate.webhooks.tasks) a worker runs: a
receiver that is slow, down or hanging never holds a reviewer's request or its transaction.
"""

from __future__ import annotations

import base64
import secrets
import uuid
from collections.abc import Callable
from functools import partial

from django.db import transaction
from django.utils import timezone

from annotate.common.errors import ServiceError
from annotate.models import Project, WebhookDelivery, WebhookEndpoint
from annotate.webhooks.addresses import url_problem
from annotate.webhooks.sending import TEST_EVENT
from annotate.webhooks.tasks import enqueue

Event = WebhookEndpoint.Event
EVENTS = [value for value, _ in Event.choices]


class EndpointInvalid(ServiceError):
    """An endpoint's URL or events refused; `field` names which (a form or serializer field)."""

    def __init__(self, message: str, *, field: str):
        super().__init__(message)
        self.field = field


def new_secret() -> str:
    """A Standard Webhooks secret: `whsec_` and 32 random bytes in base64."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def new_message_id() -> str:
    return f"msg_{uuid.uuid4().hex}"


def _checked(url: str, events: list[str]) -> tuple[str, list[str]]:
    url = url.strip()
    if problem := url_problem(url):
        raise EndpointInvalid(problem, field="url")
    unknown = sorted(set(events) - set(EVENTS))
    if unknown:
        raise EndpointInvalid(f"Unknown event(s): {', '.join(unknown)}.", field="events")
    if not events:
        raise EndpointInvalid("Choose at least one event.", field="events")
    return url, [event for event in EVENTS if event in events]


@transaction.atomic
def register_endpoint(
    *, project: Project, url: str, events: list[str], by, description: str = ""
) -> WebhookEndpoint:
    """A new endpoint of the project, with a new secret (shown to the lead once)."""
    url, events = _checked(url, events)
    return WebhookEndpoint.objects.create(
        project=project,
        url=url,
        events=events,
        description=description.strip(),
        secret=new_secret(),
        created_by=by,
    )


@transaction.atomic
def update_endpoint(
    *,
    endpoint: WebhookEndpoint,
    url: str | None = None,
    events: list[str] | None = None,
    description: str | None = None,
    active: bool | None = None,
    rotate_secret: bool = False,
) -> WebhookEndpoint:
    """Change what is given (None: left as it is). A rotated secret signs every attempt from
    now on, retries of earlier events included."""
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
    endpoint.url, endpoint.events = _checked(
        endpoint.url if url is None else url, endpoint.events if events is None else events
    )
    if description is not None:
        endpoint.description = description.strip()
    if active is not None:
        endpoint.active = active
    if rotate_secret:
        endpoint.secret = new_secret()
    endpoint.save()
    return endpoint


@transaction.atomic
def delete_endpoint(*, endpoint: WebhookEndpoint) -> None:
    """The endpoint and its delivery log; what was waiting to be sent is not sent."""
    endpoint.delete()


def emit(
    *,
    project: Project | int,
    event: str,
    data: dict | Callable[[], dict],
    endpoints: list[WebhookEndpoint] | None = None,
) -> list[WebhookDelivery]:
    """Record `event` for every active endpoint of the project that subscribes to it (or for
    the `endpoints` given), as part of the caller's transaction, and queue their sending for
    when it commits. `data` (or the function that makes it, called only when some endpoint
    listens) is the payload's `data`; `project` (the slug) is added to it.

    One query when nobody listens; with listeners, their insert too."""
    if endpoints is None:
        project_id = project if isinstance(project, int) else project.pk
        listening = WebhookEndpoint.objects.filter(project_id=project_id, active=True)
        endpoints = [e for e in listening.select_related("project") if event in e.events]
    if not endpoints:
        return []
    now = timezone.now()
    body = data() if callable(data) else data
    message_id = new_message_id()
    payload = {
        "type": event,
        "timestamp": now.isoformat(),
        "data": {"project": endpoints[0].project.slug, **body},
    }
    deliveries = WebhookDelivery.objects.bulk_create(
        WebhookDelivery(
            endpoint=endpoint,
            event=event,
            message_id=message_id,
            payload=payload,
            next_attempt_at=now,
        )
        for endpoint in endpoints
    )
    # robust: a task backend that cannot be reached (Redis down) must not fail what has
    # committed; the rows stay due for the sweep (sending.send_due).
    transaction.on_commit(partial(enqueue, [d.pk for d in deliveries]), robust=True)
    return deliveries


def send_test_event(*, endpoint: WebhookEndpoint, by) -> WebhookDelivery:
    """A `webhook.test` event to this endpoint alone (even when it is turned off): to check a
    receiver and its signature check."""
    with transaction.atomic():
        [delivery] = emit(
            project=endpoint.project,
            event=TEST_EVENT,
            data={"sent_by": by.get_username()},
            endpoints=[endpoint],
        )
    return delivery


def resend_delivery(*, delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery again (one that failed, or one waiting for its retry) as soon as a
    worker takes it; a failure then is final unless the schedule has retries left."""
    with transaction.atomic():
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            status=WebhookDelivery.Status.PENDING, next_attempt_at=timezone.now()
        )
        transaction.on_commit(partial(enqueue, [delivery.pk]), robust=True)
    delivery.refresh_from_db()
    return delivery
