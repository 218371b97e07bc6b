"""Webhooks in one process (both database legs): an event's deliveries are written with it
and sent once it commits, signed so that `standardwebhooks` verifies them; a failing receiver
is retried with backoff until it answers or the schedule ends; a hanging one is given up on
after the timeout."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from standardwebhooks import Webhook

from annotate.labelling.services import submit_labels
from annotate.models import WebhookDelivery
from annotate.webhooks.services import register_endpoint
from annotate.webhooks.tasks import send_due
from tests.annotate.test_labelling import label_everything, task_with_claims

pytestmark = pytest.mark.django_db

ALL = ["task.submitted", "dispute.decided", "release.made", "job.finished"]


def verified(endpoint, hit) -> dict:
    return Webhook(endpoint.secret).verify(hit.body, hit.headers)


def labelled_task(project, reviewer):
    assignment = task_with_claims(project, reviewer)
    label_everything(assignment)
    return assignment


def test_a_submit_is_sent_signed_once_it_has_committed_and_not_before(
    open_team, reviewer_a, lead, receiver, django_capture_on_commit_callbacks
):
    hooks = receiver()
    endpoint = register_endpoint(project=open_team, url=hooks.url, events=ALL, by=lead)
    assignment = labelled_task(open_team, reviewer_a)
    with django_capture_on_commit_callbacks() as sends:
        assert not submit_labels(assignment=assignment)
    [delivery] = WebhookDelivery.objects.all()
    assert (delivery.status, delivery.attempts, hooks.received) == ("pending", 0, [])
    assert len(sends) == 1
    sends[0]()  # what commit runs: CLAIMDESK_TASKS=immediate sends here
    [hit] = hooks.received
    payload = verified(endpoint, hit)
    assert payload["type"] == "task.submitted"
    assert payload["data"] == {
        "project": "small",
        "task": assignment.answer.task_number,
        "revision": 1,
        "source": "browser",
    }
    assert hit.headers["webhook-id"] == delivery.message_id
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.status_code) == ("delivered", 1, 200)
    assert delivery.delivered_at is not None and delivery.next_attempt_at is None


def test_a_tampered_body_or_another_secret_fails_verification(
    open_team, reviewer_a, lead, receiver, django_capture_on_commit_callbacks
):
    from standardwebhooks.webhooks import WebhookVerificationError

    hooks = receiver()
    endpoint = register_endpoint(project=open_team, url=hooks.url, events=ALL, by=lead)
    with django_capture_on_commit_callbacks(execute=True):
        submit_labels(assignment=labelled_task(open_team, reviewer_a))
    [hit] = hooks.received
    with pytest.raises(WebhookVerificationError):
        Webhook(endpoint.secret).verify(
            hit.body.replace(b'"revision":1', b'"revision":2'), hit.headers
        )
    other = register_endpoint(project=open_team, url=hooks.url, events=ALL, by=lead)
    with pytest.raises(WebhookVerificationError):
        verified(other, hit)


def test_a_failing_receiver_is_retried_after_the_wait_and_ends_delivered(
    open_team, reviewer_a, lead, receiver, settings, django_capture_on_commit_callbacks
):
    settings.CLAIMDESK_WEBHOOK_RETRY_SECONDS = [3600, 7200]
    hooks = receiver([500])
    endpoint = register_endpoint(project=open_team, url=hooks.url, events=ALL, by=lead)
    assignment = labelled_task(open_team, reviewer_a)
    before = timezone.now()
    with django_capture_on_commit_callbacks(execute=True):
        submit_labels(assignment=assignment)
    after = timezone.now()
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.status_code) == ("pending", 1, 500)
    assert delivery.error == "The receiver answered 500."
    hour = timedelta(seconds=3600)
    assert before + hour <= delivery.next_attempt_at <= after + hour  # the schedule's first
    assert send_due() == 0  # not yet due
    WebhookDelivery.objects.update(next_attempt_at=timezone.now())  # as if the hour had passed
    assert send_due() == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.status_code) == ("delivered", 2, 200)
    assert delivery.error == "" and delivery.next_attempt_at is None
    first, second = hooks.received
    assert verified(endpoint, first) == verified(endpoint, second)
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == delivery.message_id


def test_after_the_last_retry_a_delivery_is_failed(
    open_team, reviewer_a, lead, receiver, settings, django_capture_on_commit_callbacks
):
    settings.CLAIMDESK_WEBHOOK_RETRY_SECONDS = [0, 0]
    hooks = receiver([503, 500, 502, 200])
    register_endpoint(project=open_team, url=hooks.url, events=["task.submitted"], by=lead)
    with django_capture_on_commit_callbacks(execute=True):
        submit_labels(assignment=labelled_task(open_team, reviewer_a))
    assert send_due() == 1 and send_due() == 1 and send_due() == 0
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.status_code) == ("failed", 3, 502)
    assert delivery.next_attempt_at is None and len(hooks.received) == 3


def test_a_hanging_receiver_is_given_up_on_after_the_timeout_and_retried(
    open_team, reviewer_a, lead, receiver, settings, django_capture_on_commit_callbacks
):
    settings.CLAIMDESK_WEBHOOK_TIMEOUT_SECONDS = 0.3
    hooks = receiver([("hang", 2)])
    register_endpoint(project=open_team, url=hooks.url, events=ALL, by=lead)
    with django_capture_on_commit_callbacks(execute=True):
        submit_labels(assignment=labelled_task(open_team, reviewer_a))
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.status_code) == ("pending", 1, None)
    assert delivery.error == "No answer within 0.3 s."


def test_an_event_nobody_subscribes_to_writes_nothing_and_a_rolled_back_one_sends_nothing(
    open_team, reviewer_a, reviewer_b, lead, receiver, django_capture_on_commit_callbacks
):
    from django.db import transaction

    hooks = receiver()
    register_endpoint(project=open_team, url=hooks.url, events=["job.finished"], by=lead)
    with django_capture_on_commit_callbacks(execute=True):
        submit_labels(assignment=labelled_task(open_team, reviewer_a))
    assert not WebhookDelivery.objects.exists()
    register_endpoint(project=open_team, url=hooks.url, events=["task.submitted"], by=lead)
    with (
        django_capture_on_commit_callbacks(execute=True) as sends,
        pytest.raises(RuntimeError),
        transaction.atomic(),
    ):
        submit_labels(assignment=labelled_task(open_team, reviewer_b))
        raise RuntimeError("rolled back")
    assert sends == [] and hooks.received == [] and not WebhookDelivery.objects.exists()


def test_deliver_webhooks_sends_what_is_due(
    open_team, reviewer_a, lead, receiver, settings, django_capture_on_commit_callbacks
):
    from io import StringIO

    from django.core.management import call_command

    hooks = receiver([500])
    register_endpoint(project=open_team, url=hooks.url, events=ALL, by=lead)
    with django_capture_on_commit_callbacks(execute=True):
        submit_labels(assignment=labelled_task(open_team, reviewer_a))
    out = StringIO()
    call_command("deliver_webhooks", stdout=out)
    assert out.getvalue() == "0 webhook deliveries due, queued.\n"
    WebhookDelivery.objects.update(next_attempt_at=timezone.now())
    call_command("deliver_webhooks", stdout=out)
    assert out.getvalue().endswith("1 webhook delivery due, queued.\n")
    assert WebhookDelivery.objects.get().status == "delivered" and len(hooks.received) == 2


def test_a_gold_release_is_heard_of_with_its_name_rows_and_hash(
    open_team, reviewer_a, lead, receiver, django_capture_on_commit_callbacks
):
    from annotate.releases.services import create_release

    hooks = receiver()
    endpoint = register_endpoint(project=open_team, url=hooks.url, events=["release.made"], by=lead)
    with django_capture_on_commit_callbacks(execute=True):
        release = create_release(project=open_team, name="v1", user=lead)
    [hit] = hooks.received
    payload = verified(endpoint, hit)
    assert payload["type"] == "release.made"
    assert payload["data"]["release"] == "v1"
    assert payload["data"]["rows"] == release.row_count
    assert payload["data"]["sha256"] == release.sha256
