"""The re-audit after a guidelines change, in the API: a lead's script reads the list the
Re-audit page shows (the gold settled under older guidelines, with the same counts) and gives
the page's three answers -- keep one task's gold, re-open one into the adjudication queue, keep
every listed answer of one older version -- through the services the page calls. Only a lead:
a reviewer is refused (403), an outsider learns nothing (404)."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from annotate.adjudication import reaudit
from annotate.imports.label_import import import_labels
from annotate.models import Answer, Decision, Project, Reaudit
from annotate.projects.services import update_guidelines
from tests import guidelines
from tests.api import API, token_client
from tests.conftest import PASSWORD
from tests.guidelines import V2, V3, answers_under, decide_everything, settled

versioned = guidelines.versioned  # fixture

URL = f"{API}/projects/demo/reaudit/"


@pytest.fixture
def decided(reviewer_a, reviewer_b, lead, outsider) -> dict:
    """The demo under guidelines v1: the first half of its answers labelled by both reviewers
    and one of their disagreements adjudicated (`under_v1`); then guidelines v2, the second
    half labelled under it, and another disagreement of the first half adjudicated under v2
    (`under_v2`). Returns the project and both answers' pks."""
    project, second_half = guidelines.first_half_under_v1(reviewer_a, reviewer_b, lead)
    disagreements = sorted(answers_under(project, 1) - settled(project))
    under_v1, under_v2 = disagreements[0], disagreements[1]
    decide_everything(project, Answer.objects.get(pk=under_v1), lead)
    update_guidelines(project=project, guidelines=V2, author=lead)
    project.refresh_from_db()
    import_labels(lines=second_half, project=project)
    decide_everything(project, Answer.objects.get(pk=under_v2), lead)
    return {
        "project": Project.objects.get(pk=project.pk),
        "under_v1": under_v1,
        "under_v2": under_v2,
        "disagreements": disagreements,
    }


def listed(client, **params) -> dict:
    response = client.get(URL, {"limit": 500, **params})
    assert response.status_code == 200, response.content
    return response.json()


def numbers(pks) -> list[int]:
    return sorted(Answer.objects.filter(pk__in=pks).values_list("task_number", flat=True))


def page_counts(lead) -> tuple[int, list[int], str]:
    """(how many the Re-audit page says wait, the task numbers of its first page, its counts
    line) as a lead's browser reads them."""
    from django.test import Client

    browser = Client()
    browser.login(username=lead.username, password=PASSWORD)
    html = browser.get(reverse("reaudit", kwargs={"slug": "demo"})).content.decode()
    counts = re.search(r'id="reaudit-counts">(.*?)</p>', html, re.S).group(1)
    total = int(re.match(r"<strong>(\d+)</strong>", counts).group(1))
    return total, [int(n) for n in re.findall(r'<tr data-task="(\d+)">', html)], counts


# --- The list ---------------------------------------------------------------------------------


def test_the_list_holds_exactly_the_gold_settled_under_v1(decided, lead):
    project = decided["project"]
    # From the labels and decisions themselves: every answer both reviewers labelled under
    # v1 whose gold is settled, bar the one a lead decided under v2 (it stands under v2).
    agreed_under_v1 = (settled(project) & answers_under(project, 1)) - {decided["under_v2"]}
    assert decided["under_v1"] in agreed_under_v1
    assert set(
        Decision.objects.filter(answer_id=decided["under_v1"]).values_list(
            "guideline_version", flat=True
        )
    ) == {1}
    body = listed(token_client(lead))
    rows = body["results"]
    assert sorted(row["task_number"] for row in rows) == numbers(agreed_under_v1)
    assert [row["task_number"] for row in rows] == sorted(row["task_number"] for row in rows)
    assert {row["version"] for row in rows} == {1}
    under_v1 = Answer.objects.get(pk=decided["under_v1"]).task_number
    states = {row["task_number"]: row["state"] for row in rows}
    assert states.pop(under_v1) == "adjudicated"
    assert set(states.values()) == {"agreed"}
    questions = dict(
        Answer.objects.filter(project=project).values_list("task_number", "case__question")
    )
    assert all(row["question"] == questions[row["task_number"]] for row in rows)
    # the counts: what is listed, and what stands under v2 (labelled under v2, or decided)
    under_v2 = settled(project) - agreed_under_v1
    assert body["guidelines_version"] == 2
    assert body["count"] == len(rows) == len(agreed_under_v1)
    assert body["by_version"] == [{"version": 1, "answers": len(agreed_under_v1)}]
    assert (body["current_count"], body["kept"], body["reopened"]) == (len(under_v2), 0, 0)
    # nothing a reviewer must not see, nor what the page does not show either
    assert set(rows[0]) == {"task_number", "question", "state", "version"}


def test_the_api_and_the_page_show_the_same_list_and_counts(versioned, lead):
    found = reaudit.reaudit_list(versioned)
    client = token_client(lead)
    first = client.get(URL).json()  # the default page: 50, as the page's
    total, shown, counts = page_counts(lead)
    assert first["count"] == total == len(found.rows) > 0
    assert [row["task_number"] for row in first["results"]] == shown
    assert shown == [row.task_number for row in found.rows[:50]]
    assert f"{first['by_version'][0]['answers']} under v1" in counts
    assert f"{first['current_count']} under v2 ({first['kept']} kept)" in counts
    assert f"{first['reopened']} re-opened, waiting" in counts


def test_the_list_is_paged_with_limit_and_offset(versioned, lead):
    client = token_client(lead)
    everything = [row["task_number"] for row in listed(client)["results"]]
    assert len(everything) > 4
    page = client.get(URL, {"limit": 3, "offset": 2}).json()
    assert [row["task_number"] for row in page["results"]] == everything[2:5]
    assert page["count"] == len(everything)
    assert "limit=3" in page["next"] and page["previous"] is not None
    # the counts are over the whole list, whatever the page
    assert page["by_version"] == [{"version": 1, "answers": len(everything)}]
    assert client.get(URL, {"limit": "x"}).json() == {"limit": ["A whole number, 1 or more."]}


@pytest.mark.parametrize("kept_first", [0, 12])
def test_the_list_costs_a_fixed_number_of_queries(
    versioned, lead, kept_first, django_assert_num_queries
):
    for row in reaudit.reaudit_list(versioned).rows[:kept_first]:
        answer = Answer.objects.get(pk=row.answer_pk)
        reaudit.keep_decision(project=versioned, answer=answer, lead=lead)
    client = token_client(lead)
    expected = len(reaudit.reaudit_list(versioned).rows)
    client.get(URL)  # the pair summary is derived once per revision, then kept
    # token, owner's tokens, membership, the project's revision (the kept pair summary),
    # the label sets, the decisions, the re-audits, the listed answers' questions
    with django_assert_num_queries(8):
        assert client.get(URL, {"limit": 500}).json()["count"] == expected
    with django_assert_num_queries(8):
        assert client.get(URL, {"limit": 1}).json()["count"] == expected


def documented(component: str) -> dict:
    """The OpenAPI schema's component as a JSON Schema (OpenAPI 3.0's `nullable` as a null
    type), no property but the documented ones allowed; each of the re-audit's components
    requires every property it has, so a body must be exactly what it documents."""
    served = APIClient().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    components = json.loads(served.content)["components"]["schemas"]

    def plain(node):
        if isinstance(node, list):
            return [plain(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: plain(value) for key, value in node.items() if key != "nullable"}
        if "$ref" in out:
            out["$ref"] = "#/$defs/" + out["$ref"].rsplit("/", 1)[1]
        if "properties" in out:
            out["additionalProperties"] = False
        return {"anyOf": [out, {"type": "null"}]} if node.get("nullable") else out

    for name in ("ReauditPage", "ReauditRow", "VersionCount", "ReauditDone", "Kept"):
        assert set(components[name]["required"]) == set(components[name]["properties"]), name
    return {**plain(components[component]), "$defs": plain(components)}


def test_every_answer_is_as_the_openapi_schema_documents_it(decided, lead):
    client = token_client(lead)
    body = client.get(URL, {"limit": 3}).json()
    assert {row["state"] for row in listed(client)["results"]} == {"agreed", "adjudicated"}
    assert body["next"] is not None and body["previous"] is None
    jsonschema.Draft202012Validator(documented("ReauditPage")).validate(body)
    first, last = body["results"][0]["task_number"], body["results"][-1]["task_number"]
    done = documented("ReauditDone")
    jsonschema.Draft202012Validator(done).validate(client.post(f"{URL}{first}/keep/").json())
    jsonschema.Draft202012Validator(done).validate(client.post(f"{URL}{last}/reopen/").json())
    kept = client.post(f"{URL}keep-all/", {"decided_under": 1}, format="json").json()
    jsonschema.Draft202012Validator(documented("Kept")).validate(kept)
    empty = listed(client)
    assert empty["results"] == [] and empty["next"] is None
    jsonschema.Draft202012Validator(documented("ReauditPage")).validate(empty)


# --- Keep, re-open, keep all -----------------------------------------------------------------


def test_keep_takes_one_task_off_the_list_and_records_who_kept_it_under_v2(versioned, lead):
    client = token_client(lead)
    before = listed(client)
    number = before["results"][0]["task_number"]
    response = client.post(f"{URL}{number}/keep/")
    assert response.status_code == 200, response.content
    assert response.json() == {"task_number": number, "action": "keep", "guidelines_version": 2}
    kept = Reaudit.objects.get()
    assert (kept.answer.task_number, kept.action, kept.created_by) == (number, "keep", lead)
    after = listed(client)
    assert [r["task_number"] for r in after["results"]] == [
        r["task_number"] for r in before["results"][1:]
    ]
    assert (after["count"], after["kept"]) == (before["count"] - 1, 1)
    assert after["current_count"] == before["current_count"] + 1
    assert page_counts(lead)[0] == after["count"]
    # its gold did not change; a second keep is refused, saying why
    assert not Decision.objects.filter(answer=kept.answer).exists()
    again = client.post(f"{URL}{number}/keep/")
    assert again.status_code == 400
    assert again.json() == {
        "number": [f"Task {number}: This task's gold already stands under guidelines v2."]
    }
    # the next change of the guidelines lists it again, as kept under v2
    update_guidelines(project=versioned, guidelines=V3, author=lead)
    relisted = {r["task_number"]: r for r in listed(client)["results"]}
    assert relisted[number]["version"] == 2


def test_reopen_puts_the_task_back_in_the_adjudication_queue(versioned, lead):
    client = token_client(lead)
    before = listed(client)
    number = before["results"][-1]["task_number"]
    queue = client.get(f"{API}/projects/demo/adjudication/", {"limit": 500}).json()["results"]
    assert number not in {item["task_number"] for item in queue}
    response = client.post(f"{URL}{number}/reopen/")
    assert response.status_code == 200, response.content
    assert response.json() == {"task_number": number, "action": "reopen", "guidelines_version": 2}
    queue = client.get(f"{API}/projects/demo/adjudication/", {"limit": 500}).json()["results"]
    assert [item["task_number"] for item in queue if item["reaudit"]] == [number]
    after = listed(client)
    assert number not in {r["task_number"] for r in after["results"]}
    assert (after["count"], after["reopened"]) == (before["count"] - 1, 1)
    # it waits in the queue: neither keep nor a second re-open applies to it
    for action in ("keep", "reopen"):
        refused = client.post(f"{URL}{number}/{action}/")
        assert refused.status_code == 400
        assert refused.json() == {
            "number": [
                f"Task {number}: This task is re-opened already: it waits in the "
                "adjudication queue."
            ]
        }
    # a lead saves it again (no value changed): answered under v2, off the queue and the list
    decide_everything(versioned, Answer.objects.get(task_number=number), lead, keep_only=True)
    done = listed(client)
    assert number not in {r["task_number"] for r in done["results"]} and done["reopened"] == 0
    queue = client.get(f"{API}/projects/demo/adjudication/", {"limit": 500}).json()["results"]
    assert number not in {item["task_number"] for item in queue}


def test_keep_all_empties_the_list_of_one_version(versioned, lead):
    client = token_client(lead)
    before = listed(client)
    reopened = before["results"][0]["task_number"]
    assert client.post(f"{URL}{reopened}/reopen/").status_code == 200
    response = client.post(f"{URL}keep-all/", {"decided_under": 1}, format="json")
    assert response.status_code == 200, response.content
    kept = before["count"] - 1
    assert response.json() == {"kept": kept, "decided_under": 1, "guidelines_version": 2}
    after = listed(client)
    assert after["results"] == [] and after["count"] == 0 and after["by_version"] == []
    assert (after["kept"], after["reopened"]) == (kept, 1)
    assert page_counts(lead)[0] == 0
    keeps = Reaudit.objects.filter(action="keep")
    assert numbers(keeps.values_list("answer_id", flat=True)) == sorted(
        r["task_number"] for r in before["results"][1:]
    )
    # again: nothing of v1 is listed now, so nothing is kept
    again = client.post(f"{URL}keep-all/", {"decided_under": 1}, format="json")
    assert again.json()["kept"] == 0 and keeps.count() == kept


@pytest.mark.parametrize(
    "body, message",
    [
        ({"decided_under": 2}, "Choose a version older than the current v2"),
        ({"decided_under": 5}, "Choose a version older than the current v2"),
        ({"decided_under": -1}, "greater than or equal to 0"),
        ({"decided_under": "one"}, "A valid integer is required."),
        ({}, "This field is required."),
    ],
)
def test_keep_all_refuses_a_version_that_is_not_older_at_its_field(versioned, lead, body, message):
    response = token_client(lead).post(f"{URL}keep-all/", body, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["decided_under"]
    assert message in response.json()["decided_under"][0]
    assert not Reaudit.objects.exists()


def test_a_task_that_is_not_on_the_list_is_400_and_one_that_does_not_exist_404(decided, lead):
    project = decided["project"]
    client = token_client(lead)
    waiting = Answer.objects.get(pk=decided["disagreements"][2])  # never decided
    current = Answer.objects.get(pk=decided["under_v2"])
    labelled_under_v2 = Answer.objects.get(pk=min(answers_under(project, 2) & settled(project)))
    refusals = {
        waiting.task_number: "This task still waits for a decision in the adjudication queue.",
        current.task_number: "This task's gold already stands under guidelines v2.",
        labelled_under_v2.task_number: "This task's gold already stands under guidelines v2.",
    }
    for number, reason in refusals.items():
        for action in ("keep", "reopen"):
            response = client.post(f"{URL}{number}/{action}/")
            assert response.status_code == 400, (number, action)
            assert response.json() == {"number": [f"Task {number}: {reason}"]}
    missing = Answer.objects.filter(project=project).order_by("-task_number")[0].task_number + 1
    for action in ("keep", "reopen"):
        response = client.post(f"{URL}{missing}/{action}/")
        assert response.status_code == 404 and response.json() == {"detail": "Not found."}
    assert not Reaudit.objects.exists()


def test_reopen_takes_the_project_row_before_it_writes(versioned, lead):
    """The lock order of every write that moves a revision (annotate.common.computed.lock):
    the project's row first. The API calls the page's service, which does."""
    client = token_client(lead)
    number = listed(client)["results"][0]["task_number"]
    with CaptureQueriesContext(connection) as captured:
        assert client.post(f"{URL}{number}/reopen/").status_code == 200
    sql = [q["sql"] for q in captured]
    insert = next(i for i, s in enumerate(sql) if s.startswith('INSERT INTO "annotate_reaudit"'))
    touch = next(i for i, s in enumerate(sql) if s.startswith('UPDATE "annotate_project"'))
    if connection.vendor == "postgresql":  # SQLite has no row locks: one writer at a time
        locks = [i for i, s in enumerate(sql) if s.endswith("FOR UPDATE")]
        assert sql[locks[0]].split(" WHERE ")[0].endswith('FROM "annotate_project"'), sql
        assert locks[0] < insert < touch


# --- Who may ---------------------------------------------------------------------------------


@pytest.mark.parametrize("person, status", [("reviewer_a", 403), ("outsider", 404)])
def test_only_a_lead_reads_the_list_or_keeps_or_reopens(versioned, request, person, status):
    client = token_client(request.getfixturevalue(person))
    number = listed(token_client(request.getfixturevalue("lead")))["results"][0]["task_number"]
    question = Answer.objects.get(project=versioned, task_number=number).case.question
    for method, path, body in [
        ("get", "", None),
        ("post", f"{number}/keep/", None),
        ("post", f"{number}/reopen/", None),
        ("post", "keep-all/", {"decided_under": 1}),
        ("post", "999999/keep/", None),
    ]:
        response = getattr(client, method)(f"{URL}{path}", body, format="json")
        assert response.status_code == status, (person, path)
        assert question.encode() not in response.content
        assert b"task_number" not in response.content
    assert token_client(None).get(URL).status_code == 401
    assert not Reaudit.objects.exists()
