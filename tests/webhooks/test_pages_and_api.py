"""A lead manages a project's webhooks on its Webhooks page and through the API: endpoints
added (the secret shown that once), changed, turned off, rotated, deleted, tested, and the
delivery log read. Reviewers and outsiders reach none of it. Payloads name no variant and no
answer id."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotate.adjudication.services import DecisionInput, adjudicate
from annotate.gold.exports import start_gold_export
from annotate.labelling.services import submit_labels
from annotate.models import Answer, WebhookDelivery, WebhookEndpoint
from annotate.releases.services import create_release
from annotate.webhooks.services import register_endpoint
from jobs.models import Job
from tests.annotate.test_labelling import label_everything, task_with_claims
from tests.api import API, token_client
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

HOOK = "https://hooks.example.org/claimdesk"
ALL = ["task.submitted", "dispute.decided", "release.made", "job.finished"]


def login(client, user):
    client.login(username=user.username, password=PASSWORD)
    return client


def page(project) -> str:
    return reverse("webhooks", kwargs={"slug": project.slug})


def test_a_lead_adds_an_endpoint_and_sees_its_secret_once(client, team, lead):
    login(client, lead)
    reply = client.post(
        page(team), {"action": "add", "url": HOOK, "events": ["task.submitted", "job.finished"]}
    )
    assert reply.status_code == 200
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret.startswith("whsec_") and len(endpoint.secret) > 40
    assert endpoint.events == ["task.submitted", "job.finished"] and endpoint.created_by == lead
    assert endpoint.secret in reply.content.decode()
    again = client.get(page(team)).content.decode()
    assert HOOK in again and endpoint.secret not in again


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.org/x", "Only http:// and https://"),
        ("http://localhost:8000/x", "private network"),
        ("http://127.0.0.1/x", "private network"),
        ("http://[::1]/x", "private network"),
        ("http://10.1.2.3/x", "private network"),
        ("http://169.254.169.254/latest/meta-data", "private network"),
        ("https://user:pw@example.org/x", "no user name or password"),
        ("not a url", "Only http:// and https://"),
    ],
)
def test_an_endpoint_must_be_http_and_public(client, team, lead, url, message):
    login(client, lead)
    reply = client.post(page(team), {"action": "add", "url": url, "events": ["job.finished"]})
    assert reply.status_code == 400
    assert message in reply.content.decode()
    assert not WebhookEndpoint.objects.exists()
    refused = token_client(lead).post(
        f"{API}/projects/small/webhooks/", {"url": url, "events": ["job.finished"]}, format="json"
    )
    assert refused.status_code == 400 and message in refused.json()["url"][0]


def test_a_private_address_is_allowed_when_the_setting_says_so(team, lead, settings):
    settings.CLAIMDESK_WEBHOOK_ALLOW_PRIVATE = True
    register_endpoint(project=team, url="http://127.0.0.1:9/x", events=ALL, by=lead)


def test_a_lead_changes_turns_off_rotates_tests_and_deletes_an_endpoint(client, team, lead):
    endpoint = register_endpoint(project=team, url=HOOK, events=ALL, by=lead)
    old_secret = endpoint.secret
    login(client, lead)
    edit = reverse("webhook_edit", kwargs={"slug": team.slug, "pk": endpoint.pk})
    assert client.get(edit).status_code == 200
    saved = client.post(edit, {"url": HOOK + "/v2", "events": ["dispute.decided"]})
    assert saved.status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.url, endpoint.events, endpoint.active) == (
        HOOK + "/v2",
        ["dispute.decided"],
        False,
    )
    assert endpoint.secret == old_secret
    rotated = client.post(
        edit, {"url": HOOK, "events": ["dispute.decided"], "active": "on", "rotate_secret": "on"}
    )
    endpoint.refresh_from_db()
    assert endpoint.secret != old_secret and endpoint.secret in rotated.content.decode()
    assert endpoint.active
    tested = client.post(page(team), {"action": "test", "endpoint": endpoint.pk})
    assert tested.status_code == 302
    delivery = WebhookDelivery.objects.get()
    assert (delivery.event, delivery.endpoint, delivery.status) == (
        "webhook.test",
        endpoint,
        "pending",
    )
    assert delivery.payload["data"] == {"project": "small", "sent_by": lead.username}
    log = client.get(page(team)).content.decode()
    assert "webhook.test" in log and delivery.message_id in log
    client.post(page(team), {"action": "delete", "endpoint": endpoint.pk})
    assert not WebhookEndpoint.objects.exists() and not WebhookDelivery.objects.exists()


def test_another_projects_endpoint_is_not_found(client, team, lead):
    from annotate.members.services import add_member
    from tests.conftest import import_fixture

    other = import_fixture("small.jsonl", "other")
    add_member(project=other, username=lead.username, role="lead")
    theirs = register_endpoint(project=other, url=HOOK, events=ALL, by=lead)
    login(client, lead)
    assert (
        client.get(reverse("webhook_edit", kwargs={"slug": team.slug, "pk": theirs.pk})).status_code
        == 404
    )
    assert client.post(page(team), {"action": "delete", "endpoint": theirs.pk}).status_code == 404
    api = token_client(lead)
    assert api.get(f"{API}/projects/small/webhooks/{theirs.pk}/").status_code == 404
    assert api.delete(f"{API}/projects/small/webhooks/{theirs.pk}/").status_code == 404
    assert WebhookEndpoint.objects.filter(pk=theirs.pk).exists()


@pytest.mark.parametrize("who", ["reviewer_a", "reviewer_b", "outsider"])
def test_reviewers_and_outsiders_reach_no_webhook_page_or_endpoint(
    client, team, lead, request, who
):
    person = request.getfixturevalue(who)
    endpoint = register_endpoint(project=team, url=HOOK, events=ALL, by=lead)
    login(client, person)
    edit = reverse("webhook_edit", kwargs={"slug": team.slug, "pk": endpoint.pk})
    assert client.get(page(team)).status_code == 404
    assert client.get(edit).status_code == 404
    assert client.post(page(team), {"action": "delete", "endpoint": endpoint.pk}).status_code == 404
    assert client.post(page(team), {"action": "test", "endpoint": endpoint.pk}).status_code == 404
    api = token_client(person)
    denied = 403 if who != "outsider" else 404
    base = f"{API}/projects/small/webhooks/"
    for method, url in [
        ("get", base),
        ("post", base),
        ("get", base + "deliveries/"),
        ("get", f"{base}{endpoint.pk}/"),
        ("patch", f"{base}{endpoint.pk}/"),
        ("delete", f"{base}{endpoint.pk}/"),
        ("post", f"{base}{endpoint.pk}/test/"),
    ]:
        body = {"url": HOOK, "events": ["job.finished"], "rotate_secret": True}
        reply = getattr(api, method)(url, body, format="json")
        assert reply.status_code == denied, (method, url, reply.status_code)
        assert endpoint.secret.encode() not in reply.content
    assert WebhookEndpoint.objects.get() == endpoint and not WebhookDelivery.objects.exists()
    assert token_client(None).get(base).status_code == 401


def test_the_api_registers_shows_the_secret_once_rotates_tests_and_lists_deliveries(team, lead):
    api = token_client(lead)
    base = f"{API}/projects/small/webhooks/"
    created = api.post(base, {"url": HOOK, "events": ["job.finished"]}, format="json")
    assert created.status_code == 201
    body = created.json()
    assert body["secret"].startswith("whsec_") and body["events"] == ["job.finished"]
    assert body["created_by"] == lead.username and body["active"] is True
    one = f"{base}{body['id']}/"
    assert "secret" not in api.get(one).json()
    assert "secret" not in api.get(base).json()["results"][0]
    changed = api.patch(one, {"active": False}, format="json").json()
    assert changed["active"] is False and changed["secret"] is None
    rotated = api.patch(one, {"rotate_secret": True}, format="json").json()
    assert rotated["secret"] != body["secret"]
    assert WebhookEndpoint.objects.get().secret == rotated["secret"]
    tested = api.post(one + "test/")
    assert tested.status_code == 202
    assert tested.json()["event"] == "webhook.test" and tested.json()["status"] == "pending"
    log = api.get(base + "deliveries/", {"status": "pending"}).json()
    assert log["count"] == 1 and log["results"][0]["message_id"] == tested.json()["message_id"]
    assert api.get(base + "deliveries/", {"status": "failed"}).json()["count"] == 0
    assert api.get(base + "deliveries/", {"endpoint": 999999}).json()["count"] == 0
    assert api.get(base + "deliveries/", {"status": "nope"}).status_code == 400
    assert api.delete(one).status_code == 204
    assert not WebhookEndpoint.objects.exists()


def test_the_page_and_the_log_cost_a_fixed_number_of_queries(
    client, team, lead, django_assert_num_queries
):
    login(client, lead)
    client.get(page(team))
    api = token_client(lead)
    api.get(f"{API}/projects/small/webhooks/deliveries/")
    counts = []
    for round_ in range(2):
        for n in range(3):
            endpoint = register_endpoint(
                project=team, url=f"{HOOK}/{round_}/{n}", events=ALL, by=lead
            )
            client.post(page(team), {"action": "test", "endpoint": endpoint.pk})
        with django_assert_num_queries(5):  # session, user, role, endpoints, deliveries
            assert client.get(page(team)).status_code == 200
        # the token (2), role, count, page
        with django_assert_num_queries(5):
            assert api.get(f"{API}/projects/small/webhooks/deliveries/").status_code == 200
        with django_assert_num_queries(5):
            assert api.get(f"{API}/projects/small/webhooks/").status_code == 200
        counts.append(WebhookDelivery.objects.count())
    assert counts == [3, 6]


def test_every_event_is_recorded_with_small_payloads_that_name_no_variant_or_answer_id(
    team, reviewer_a, reviewer_b, lead, settings
):
    from annotate.projects.opening import open_labelling

    settings.CLAIMDESK_REOPEN_MINUTES = 0
    project = open_labelling(project=team)
    register_endpoint(project=project, url=HOOK, events=ALL, by=lead)
    tasks = [task_with_claims(project, reviewer) for reviewer in (reviewer_a, reviewer_b)]
    for assignment in tasks:
        label_everything(assignment)
        submit_labels(assignment=assignment)
    answer = Answer.objects.get(pk=tasks[0].answer_id)
    claim = answer.claims.first()
    adjudicate(
        answer=answer,
        lead=lead,
        version=0,
        decisions=[DecisionInput(claim, "support", "contradicted")],
        rationale="the note says otherwise",
    )
    job = start_gold_export(
        project=project, user=lead, fmt="jsonl", filters={"item": "claim"}, rows=10
    )
    job.refresh_from_db()
    assert job.status == Job.Status.SUCCEEDED
    create_release(project=project, name="v1", user=lead)
    payloads = {d.event: d.payload for d in WebhookDelivery.objects.all()}
    assert set(payloads) == {"task.submitted", "dispute.decided", "job.finished", "release.made"}
    number = answer.task_number
    assert payloads["task.submitted"]["data"] == {
        "project": "small",
        "task": number,
        "revision": 1,
        "source": "browser",
    }
    assert payloads["dispute.decided"]["data"] == {
        "project": "small",
        "task": number,
        "decisions": 1,
        "fields": ["support"],
        "version": 1,
    }
    assert payloads["job.finished"]["data"] == {
        "project": "small",
        "job": str(job.pk),
        "kind": "gold_export",
        "status": "succeeded",
    }
    raw = json.dumps([d.payload for d in WebhookDelivery.objects.all()])
    for answer in Answer.objects.filter(project=project).select_related("variant"):
        assert answer.answer_id not in raw and answer.variant.name not in raw
    assert "supported" not in raw and "contradicted" not in raw  # no labels either
