"""The API's permission matrix: every endpoint called with the tokens of reviewer A, reviewer B,
the lead and an outsider, and without one. A reviewer's token reaches what the reviewer's
browser reaches and nothing else:

- anonymous: 401 everywhere; outsider: 404 for every project endpoint (existence does not
  leak); the wrong role: 403; another reviewer's task number: 404;
- every byte a reviewer receives is free of variant names, answer ids, case ids and the other
  reviewer's labels."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.imports.gold_import import import_gold
from annotate.imports.label_import import import_labels
from annotate.labelling.services import save_answer_label, save_claim_label
from annotate.members.services import allow_adding_anyone
from annotate.models import Answer
from annotate.projects.opening import open_labelling
from annotate.queue.services import next_task, release_task
from tests import api as shared
from tests.api import API, JSONL, finished_job, token_client
from tests.conftest import FIXTURES, gold_for_every_answer, may_create_projects

people = shared.people  # fixture

LEAD, REVIEWER, ANY = "lead", "reviewer", "any"
SECRET_NOTE = "bob-private-note-7f3a"
IMPORTED_NOTE = "imported-gold-note-91d2"  # gold from elsewhere, on every answer
RUN = [
    {"type": "run", "judge": "tiny-judge", "model": "acme/judge", "prompt": "Grade it."},
    {
        "type": "verdict",
        "answer_id": "a2-deadline/baseline",
        "claim_index": 0,
        "raw": "{}",
        "label": "supported",
    },
]


def jsonl(rows) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


@pytest.fixture
def world(team, reviewer_a, reviewer_b, lead, shared_queue_start):
    """The small project, open. Both reviewers' labels of a2-deadline/baseline are imported
    (so a lead has something to adjudicate); bob drafted labels with a note on a task and
    skipped it, which alice then took (her task `mine`); bob is on another task."""
    project = open_labelling(project=team)
    allow_adding_anyone(user=lead)  # the matrix adds carol, a new account
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        import_labels(lines=stream.readlines()[:2], project=project)
    gold = gold_for_every_answer(project, note=IMPORTED_NOTE)
    import_gold(lines=gold, project=project, source="bench", file_name="bench.jsonl")

    def take_with_claims(reviewer):
        """The reviewer's next task that has claims, skipping any without."""
        while not (
            assignment := next_task(project=project, reviewer=reviewer)
        ).answer.claims.exists():
            release_task(assignment=assignment, reason="no claims")
        return assignment

    skipped = take_with_claims(reviewer_b)
    save_answer_label(assignment=skipped, data={"note": SECRET_NOTE})
    for claim in skipped.answer.claims.all():
        save_claim_label(assignment=skipped, claim=claim, data={"note": SECRET_NOTE})
    release_task(assignment=skipped, reason="testing")
    mine = take_with_claims(reviewer_a)
    theirs = next_task(project=project, reviewer=reviewer_b)
    assert mine.answer_id == skipped.answer_id and theirs.answer_id != mine.answer_id
    from evaluation.judges.runs import import_judge_run

    run = import_judge_run(lines=jsonl(RUN).splitlines(), project=project, user=lead).run
    labelled = Answer.objects.get(project=project, answer_id="a2-deadline/baseline")
    return {
        "project": project,
        "mine": mine.answer.task_number,
        "theirs": theirs.answer.task_number,
        "labelled": labelled.task_number,
        "run": run.pk,
        "gold": gold[0],  # the same line again: unchanged
    }


def endpoints(w, number=None) -> list[tuple[str, str, dict | None, str, int]]:
    """(method, path under the project, body, role served, status for that role). Ordered so
    that what changes state (a skip, a removal) comes last. Tasks are alice's unless
    `number` says otherwise."""
    n, done, run = number or w["mine"], w["labelled"], w["run"]
    labels = (FIXTURES / "demo_labels.jsonl").read_bytes().splitlines()[:2]
    return [
        ("GET", "", None, ANY, 200),
        ("GET", "tasks/", None, REVIEWER, 200),
        ("POST", "tasks/next/", None, REVIEWER, 200),
        ("GET", f"tasks/{n}/", None, REVIEWER, 200),
        ("PATCH", f"tasks/{n}/claims/0/", {"support": "supported"}, REVIEWER, 200),
        ("PATCH", f"tasks/{n}/answer/", {"relevance": 2}, REVIEWER, 200),
        ("POST", f"tasks/{n}/submit/", None, REVIEWER, 400),
        ("POST", f"tasks/{n}/reopen/", None, REVIEWER, 409),
        ("POST", f"tasks/{n}/flag/", {"reason": "wrong_passages", "note": "p2?"}, REVIEWER, 201),
        ("POST", "open/", None, LEAD, 409),
        ("POST", "bundle/", {"file": (FIXTURES / "small.jsonl").read_bytes()}, LEAD, 202),
        ("GET", "bundle/", None, LEAD, 200),
        ("POST", "labels/", {"raw": b"\n".join(labels)}, LEAD, 202),
        ("POST", "gold-imports/?source=bench", {"raw": w["gold"]}, LEAD, 202),
        ("GET", "members/", None, LEAD, 200),
        ("POST", "members/", {"username": "carol", "role": "reviewer"}, LEAD, 201),
        ("GET", "members/alice/", None, LEAD, 200),
        ("PATCH", "members/bob/", {"role": "reviewer"}, LEAD, 200),
        ("GET", "adjudication/", None, LEAD, 200),
        ("GET", f"adjudication/{done}/", None, LEAD, 200),
        (
            "POST",
            f"adjudication/{done}/",
            {"version": 0, "rationale": "", "decisions": []},
            LEAD,
            200,
        ),
        ("GET", "reaudit/", None, LEAD, 200),
        # no guidelines written: nothing is older than the current version (0)
        ("POST", f"reaudit/{done}/keep/", None, LEAD, 400),
        ("POST", f"reaudit/{done}/reopen/", None, LEAD, 400),
        ("POST", "reaudit/keep-all/", {"decided_under": 0}, LEAD, 400),
        ("GET", "flags/", None, LEAD, 200),
        ("POST", "flags/999999/resolve/", {}, LEAD, 404),
        ("GET", "gold.jsonl", None, LEAD, 200),
        ("GET", "gold.csv", None, LEAD, 200),
        ("GET", "gold.parquet", None, LEAD, 200),
        ("POST", "releases/", {"name": "v1"}, LEAD, 201),
        ("GET", "releases/", None, LEAD, 200),
        ("GET", "releases/v1/", None, LEAD, 200),
        ("GET", "releases/v1/gold.jsonl", None, LEAD, 200),
        ("GET", "releases/v1/gold.parquet", None, LEAD, 200),
        ("GET", "releases/v1/diff/?before=v1", None, LEAD, 200),
        ("GET", "agreement/", None, LEAD, 200),
        ("GET", "reviewers/", None, LEAD, 200),
        # alice took no check: no drift flag to clear
        ("POST", "reviewers/alice/clear-drift/", None, LEAD, 400),
        ("GET", "evaluation/", None, LEAD, 200),
        ("GET", "evaluation/compare/?a=baseline&b=verifier", None, LEAD, 200),
        ("GET", "judge-runs/", None, LEAD, 200),
        ("POST", "judge-runs/?name=another", {"raw": jsonl(RUN)}, LEAD, 201),
        ("GET", f"judge-runs/{run}/", None, LEAD, 200),
        ("GET", f"judge-runs/{run}/calibration/", None, LEAD, 200),
        ("GET", "webhooks/", None, LEAD, 200),
        (
            "POST",
            "webhooks/",
            {"url": "https://example.org/h", "events": ["job.finished"]},
            LEAD,
            201,
        ),
        ("GET", "webhooks/deliveries/", None, LEAD, 200),
        ("DELETE", "members/carol/", None, LEAD, 204),
        ("POST", f"tasks/{n}/skip/", {"reason": "end of the test"}, REVIEWER, 204),
    ]


def call(client, method: str, url: str, body):
    if body is None:
        return client.generic(method, url)
    if "file" in body:
        upload = SimpleUploadedFile("upload.jsonl", body["file"], content_type=JSONL)
        return client.post(url, {"file": upload})
    if "raw" in body:
        return client.post(url, body["raw"], content_type=JSONL)
    return client.generic(method, url, json.dumps(body), content_type="application/json")


def expected(person: str, role: str, served: str, ok: int, path: str, w) -> int:
    if person == "anonymous":
        return 401
    if person == "outsider":
        return 404
    if served not in (ANY, role):
        return 403
    if person == "reviewer_b" and path.startswith(f"tasks/{w['mine']}/"):
        return 404  # alice's task: bob has no assignment for it
    return ok


ROLES = {"reviewer_a": REVIEWER, "reviewer_b": REVIEWER, "lead": LEAD}


def body_bytes(response) -> bytes:
    if response.streaming:
        return b"".join(response.streaming_content)
    return response.content


def forbidden_for_reviewers(project) -> list[bytes]:
    """Everything that would break blinding if a reviewer ever received it."""
    words = {b'"variant"', b"answer_id", b"case_id", SECRET_NOTE.encode(), IMPORTED_NOTE.encode()}
    for answer in Answer.objects.filter(project=project).select_related("variant", "case"):
        words |= {answer.answer_id.encode(), answer.variant.name.encode()}
        words.add(answer.case.case_id.encode())
    return sorted(words)


@pytest.mark.parametrize("person", ["anonymous", "outsider", "reviewer_a", "reviewer_b", "lead"])
def test_every_endpoint_answers_each_person_as_their_browser_would(world, people, person):
    client = people[person]
    role = ROLES.get(person)
    mismatches = []
    for method, path, body, served, ok in endpoints(world):
        url = f"{API}/projects/small/{path}"
        response = call(client, method, url, body)
        want = expected(person, role, served, ok, path, world)
        if response.status_code != want:
            mismatches.append(f"{method} {path}: {response.status_code}, expected {want}")
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.parametrize("person", ["reviewer_a", "reviewer_b"])
def test_a_reviewer_never_receives_a_variant_an_answer_id_or_another_reviewers_label(
    world, people, person
):
    client = people[person]
    forbidden = forbidden_for_reviewers(world["project"])
    seen = 0
    own = world["mine"] if person == "reviewer_a" else world["theirs"]
    for method, path, body, _served, _ok in endpoints(world, own):
        response = call(client, method, f"{API}/projects/small/{path}", body)
        raw = body_bytes(response)
        leaked = [word for word in forbidden if word in raw]
        assert not leaked, f"{method} {path} sent {leaked}"
        seen += response.status_code < 300
    for url in (f"{API}/projects/", f"{API}/projects/?role=reviewer"):
        raw = body_bytes(client.get(url))
        assert not [word for word in forbidden if word in raw]
    assert seen >= 6  # the reviewer endpoints really answered


def test_a_task_the_reviewer_skipped_is_gone_from_their_reach(world, people, reviewer_b):
    # bob skipped what is now alice's task: his token no longer reaches it, nor his draft
    client = people["reviewer_b"]
    assert client.get(f"{API}/projects/small/tasks/{world['mine']}/").status_code == 404
    own = client.get(f"{API}/projects/small/tasks/?status=in_progress").json()["results"]
    assert len(own) == 1 and own[0]["task_number"] != world["mine"]


@pytest.mark.parametrize("person", ["outsider", "reviewer_a", "lead"])
def test_a_project_that_does_not_exist_is_404_like_one_you_have_no_role_in(world, people, person):
    client = people[person]
    assert client.get(f"{API}/projects/nowhere/").status_code == 404
    assert client.get(f"{API}/projects/nowhere/members/").status_code == 404
    assert client.post(f"{API}/projects/nowhere/tasks/next/").status_code == 404


def test_the_project_list_needs_an_account_and_creating_one_the_permission(world, people, outsider):
    assert people["anonymous"].get(f"{API}/projects/").status_code == 401
    assert people["outsider"].get(f"{API}/projects/").json()["count"] == 0

    def upload():
        return SimpleUploadedFile(
            "b.jsonl", (FIXTURES / "small.jsonl").read_bytes(), content_type=JSONL
        )

    refused = people["outsider"].post(f"{API}/projects/", {"slug": "mine", "file": upload()})
    assert refused.status_code == 403
    assert "may not create projects" in refused.json()["detail"]
    may_create_projects(outsider)
    created = people["outsider"].post(f"{API}/projects/", {"slug": "mine", "file": upload()})
    assert finished_job(people["outsider"], created)["status"] == "succeeded"
    assert people["anonymous"].post(f"{API}/projects/", {"slug": "x"}).status_code == 401


def test_a_revoked_or_unknown_token_is_401(world, reviewer_a):
    client = token_client(reviewer_a)
    reviewer_a.auth_token_set.all().delete()
    assert client.get(f"{API}/projects/small/").status_code == 401
