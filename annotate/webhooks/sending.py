"""Sending one delivery: sign it (Standard Webhooks, with the `standardwebhooks` package), POST
it with a short timeout, and record what happened; retry a failure later, with backoff.

An attempt first claims its delivery in a short transaction (the attempt counted, the row
leased for longer than any attempt takes), then sends with no transaction open, then records
the outcome. So a task delivered twice (a retry's own task and the sweep) sends once, and a
worker killed while sending leaves a row that the sweep takes again once its lease is over.

Retries: after attempt n fails, the next waits CLAIMDESK_WEBHOOK_RETRY_SECONDS[n-1] (5 s,
30 s, 2 min, 10 min, 1 h by default); a failure after the last is final ("failed"). The wait
is the task backend's `run_after` (the database and RQ backends defer); CLAIMDESK_TASKS=
immediate cannot defer, and `manage.py deliver_webhooks` sends what is due then.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

import requests
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from standardwebhooks import Webhook

from annotate.models import WebhookDelivery, WebhookEndpoint
from annotate.webhooks.addresses import check_address

logger = logging.getLogger(__name__)

Status = WebhookDelivery.Status
USER_AGENT = "claimdesk-webhooks/1"
# Sent by "Send a test event" to one endpoint, whatever it subscribes to or whether it is on.
TEST_EVENT = "webhook.test"
# How long after its claim a delivery that recorded no outcome is taken again: the attempt's
# own timeout (connecting, then reading) and this margin.
LEASE_MARGIN = timedelta(seconds=60)
MAX_ERROR = 500


@dataclass
class Outcome:
    status_code: int | None = None
    error: str = ""

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


def body_of(delivery: WebhookDelivery) -> bytes:
    """The bytes sent and signed: the same at every attempt (keys sorted, since a JSON column
    need not keep their order)."""
    return json.dumps(delivery.payload, sort_keys=True, separators=(",", ":")).encode()


def headers_for(delivery: WebhookDelivery, body: bytes, *, secret: str, now: datetime) -> dict:
    return {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "webhook-id": delivery.message_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(delivery.message_id, now, body),
    }


def lease() -> timedelta:
    return timedelta(seconds=2 * settings.CLAIMDESK_WEBHOOK_TIMEOUT_SECONDS) + LEASE_MARGIN


def retry_wait(attempts: int) -> timedelta | None:
    """The wait after failed attempt number `attempts`, or None: that was the last."""
    schedule = settings.CLAIMDESK_WEBHOOK_RETRY_SECONDS
    if attempts > len(schedule):
        return None
    return timedelta(seconds=schedule[attempts - 1])


def _claim(delivery_id: int) -> WebhookDelivery | None:
    """The delivery, its attempt counted and leased; None when it is not due (delivered,
    failed, deleted with its endpoint, or another attempt holds it)."""
    now = timezone.now()
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(of=("self",))
            .select_related("endpoint")
            .filter(pk=delivery_id)
            .first()
        )
        if delivery is None or delivery.status != Status.PENDING:
            return None
        if delivery.next_attempt_at is not None and delivery.next_attempt_at > now:
            return None
        delivery.attempts += 1
        delivery.next_attempt_at = now + lease()
        delivery.save(update_fields=["attempts", "next_attempt_at"])
    return delivery


def post(endpoint: WebhookEndpoint, delivery: WebhookDelivery) -> Outcome:
    """One signed POST. Redirects are not followed (a 3xx is a failure): a receiver names its
    own final URL."""
    if problem := check_address(endpoint.url):
        return Outcome(error=problem)
    body = body_of(delivery)
    now = timezone.now()
    timeout = settings.CLAIMDESK_WEBHOOK_TIMEOUT_SECONDS
    try:
        with requests.post(
            endpoint.url,
            data=body,
            headers=headers_for(delivery, body, secret=endpoint.secret, now=now),
            timeout=(timeout, timeout),
            allow_redirects=False,
            stream=True,  # the receiver's body is not read: only its status counts
        ) as response:
            code = response.status_code
    except requests.Timeout:
        return Outcome(error=f"No answer within {timeout:g} s.")
    except requests.ConnectionError as exc:
        return Outcome(error=f"Could not connect: {exc}"[:MAX_ERROR])
    except requests.RequestException as exc:
        return Outcome(error=f"{type(exc).__name__}: {exc}"[:MAX_ERROR])
    if 200 <= code < 300:
        return Outcome(status_code=code)
    return Outcome(status_code=code, error=f"The receiver answered {code}.")


def attempt(delivery_id: int) -> WebhookDelivery | None:
    """Send a due delivery once and record the outcome: delivered, due again after its wait
    (still pending, `next_attempt_at` set; annotate.webhooks.tasks queues it), or failed after
    the last attempt. None when it was not due."""
    delivery = _claim(delivery_id)
    if delivery is None:
        return None
    endpoint = delivery.endpoint
    if not endpoint.active and delivery.event != TEST_EVENT:
        outcome, final = Outcome(error="The endpoint was turned off before this was sent."), True
    else:
        outcome, final = post(endpoint, delivery), False
    now = timezone.now()
    fields = {"status_code": outcome.status_code, "error": outcome.error}
    wait = None if final else retry_wait(delivery.attempts)
    if outcome.delivered:
        fields.update(status=Status.DELIVERED, delivered_at=now, next_attempt_at=None)
    elif wait is None:
        fields.update(status=Status.FAILED, next_attempt_at=None)
    else:
        fields.update(next_attempt_at=now + wait)
    # Only the attempt that holds the row records: one whose lease ran out and was taken
    # over changes nothing.
    WebhookDelivery.objects.filter(
        pk=delivery.pk, attempts=delivery.attempts, status=Status.PENDING
    ).update(**fields)
    for name, value in fields.items():
        setattr(delivery, name, value)
    return delivery
