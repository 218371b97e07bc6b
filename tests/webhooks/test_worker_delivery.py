"""Issue 36's test of webhooks, end to end on PostgreSQL with a real worker process: a
reviewer submits over the API while the project's receiver hangs; the request makes exactly
the queries it makes without webhooks plus the delivery's insert and its task's, and it
never calls the receiver -- the worker does. The worker gives up on the hanging receiver
after its timeout, then meets a 500, and retries after the schedule's waits (the database
backend's run_after) until the receiver answers 200. Every request the receiver got carries
the same webhook-id and verifies with `standardwebhooks`."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_tasks_db.models import DBTaskResult
from standardwebhooks import Webhook

from annotate.models import WebhookDelivery
from annotate.webhooks.services import register_endpoint, send_test_event
from tests.annotate.test_labelling import label_everything, task_with_claims
from tests.api import API, token_client
from tests.jobs.test_rq import REDIS_URL
from tests.workers import wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

# A pending delivery's insert, and (on commit) its task's row for the worker.
WEBHOOK_QUERIES = ["INSERT INTO annotate_webhookdelivery", "INSERT INTO django_tasks_database"]


def submit(reviewer, project):
    """A complete task of the reviewer's, submitted over the API: (response, its queries)."""
    assignment = task_with_claims(project, reviewer)
    label_everything(assignment)
    client = token_client(reviewer)
    url = f"{API}/projects/{project.slug}/tasks/{assignment.answer.task_number}/submit/"
    client.get(f"{API}/projects/{project.slug}/")  # warm up what any first request does
    with CaptureQueriesContext(connection) as queries:
        response = client.post(url)
    return response, [q["sql"] for q in queries.captured_queries]


def test_a_hanging_then_failing_receiver_never_slows_a_submit_and_ends_delivered(
    open_team, reviewer_a, reviewer_b, lead, receiver, database_tasks, workers
):
    plain, without = submit(reviewer_b, open_team)
    assert plain.status_code == 200
    hooks = receiver([("hang", 4), 500])
    endpoint = register_endpoint(
        project=open_team, url=hooks.url, events=["task.submitted"], by=lead
    )
    response, queries = submit(reviewer_a, open_team)
    assert response.status_code == 200 and response.json()["status"] == "submitted"
    added = [q for q in queries if q not in without]
    # pinned: a submit's own 25 queries (23, and the two UPDATEs of the project's and the
    # answer's revisions: annotate.common.computed), and the one read of the endpoints
    # listening (none yet)
    assert len(without) == 27, without
    assert sum(q.startswith('UPDATE "annotate_project"') for q in without) == 1
    assert sum('"annotate_webhookendpoint"' in q for q in without) == 1
    assert len(queries) == len(without) + len(WEBHOOK_QUERIES), added
    for sql, expected in zip(
        [q for q in queries if q.startswith("INSERT INTO")][-2:], WEBHOOK_QUERIES, strict=True
    ):
        assert sql.replace('"', "").startswith(expected), sql
    # The request has answered, and nobody has called the receiver: no worker runs yet.
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, hooks.received) == ("pending", 0, [])
    assert DBTaskResult.objects.filter(status="READY").count() == 1

    worker = workers(
        CLAIMDESK_WEBHOOK_ALLOW_PRIVATE="true",
        CLAIMDESK_WEBHOOK_TIMEOUT_SECONDS="1",
        CLAIMDESK_WEBHOOK_RETRY_SECONDS="0.5,0.5,0.5",
    )

    def delivered():
        delivery.refresh_from_db()
        return delivery.status != "pending"

    wait_for(delivered, "the delivery to end", timeout=120)
    assert (delivery.status, delivery.status_code, delivery.attempts) == ("delivered", 200, 3), (
        delivery.error,
        worker.output(),
    )
    hang, error, ok = hooks.received
    ids = {hit.headers["webhook-id"] for hit in hooks.received}
    assert ids == {delivery.message_id}
    payloads = [Webhook(endpoint.secret).verify(hit.body, hit.headers) for hit in hooks.received]
    assert payloads[0] == payloads[1] == payloads[2]
    assert payloads[0]["type"] == "task.submitted"
    assert payloads[0]["data"]["task"] == response.json()["task_number"]


def test_an_rq_worker_retries_through_its_scheduler(open_team, lead, receiver, rq_tasks, workers):
    """RQ keeps a task deferred with run_after in its scheduled registry; the worker runs with
    RQ's scheduler, which queues it when due. Here the worker starts where another was just
    killed with -9: that one's scheduler lock is still in Redis for a while (61 s in RQ, 20 s
    here), and the new worker must take the scheduler over once it expires, not ten minutes
    later at RQ's default maintenance interval."""
    import redis
    from rq.scheduler import RQScheduler

    redis.Redis.from_url(REDIS_URL).set(
        RQScheduler.get_locking_key("default"), "a-worker-killed-with-9", ex=20
    )
    hooks = receiver([500])
    endpoint = register_endpoint(project=open_team, url=hooks.url, events=["job.finished"], by=lead)
    delivery = send_test_event(endpoint=endpoint, by=lead)  # queued in Redis on commit
    worker = workers(
        CLAIMDESK_TASKS="rq",
        REDIS_URL=REDIS_URL,
        CLAIMDESK_WEBHOOK_ALLOW_PRIVATE="true",
        CLAIMDESK_WEBHOOK_RETRY_SECONDS="1",
    )

    def ended():
        delivery.refresh_from_db()
        return delivery.status != "pending"

    wait_for(ended, "the delivery to end", timeout=120)
    assert (delivery.status, delivery.attempts) == ("delivered", 2), worker.output()
    assert [Webhook(endpoint.secret).verify(h.body, h.headers)["type"] for h in hooks.received] == [
        "webhook.test",
        "webhook.test",
    ]
