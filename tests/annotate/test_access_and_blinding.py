"""Who reaches what, and what a reviewer can never see.

The access matrix runs every project URL as reviewer A, reviewer B, the lead, an outsider and
an anonymous visitor. The blinding crawl logs in as a reviewer who tries: it follows every
link and form it can reach, guesses every task number and every lead URL, and asserts that no
response carries a variant name, a model, an answer id, another reviewer's name or notes, or
a judge's output."""

from __future__ import annotations

import json
import random
import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlparse

import pytest
from django.urls import NoReverseMatch, reverse

from annotate.imports.gold_import import import_gold
from annotate.imports.label_import import import_labels
from annotate.labelling.services import save_claim_label, submit_labels
from annotate.members.services import add_member
from annotate.models import Answer, Assignment, ClaimLabel
from annotate.projects.opening import open_labelling
from annotate.queue.services import next_task
from tests.annotate.test_labelling import label_everything
from tests.conftest import FIXTURES, PASSWORD, gold_for_every_answer, import_fixture

LEAD_PAGES = [
    "project_setup",
    "project_upload",
    "members",
    "guidelines",
    "boundaries",
    "agreement",
    "reviewers",
    "adjudication_queue",
    "evaluation:report",
    "judges",
]
REVIEWER_PAGES = ["my_tasks", "queue_empty"]
# Gold from elsewhere on every answer, the ones reviewers label included: none of it reaches
# them (its source, its file, its notes).
IMPORTED_SOURCE, IMPORTED_FILE = "secret-benchmark-x", "secret-benchmark-x.jsonl"
IMPORTED_NOTE = "imported-gold-note-5c1e"


@pytest.fixture
def demo(db, reviewer_a, reviewer_b, lead, outsider):
    project = import_fixture("demo.jsonl", "demo")
    for person, role in ((reviewer_a, "reviewer"), (reviewer_b, "reviewer"), (lead, "lead")):
        add_member(project=project, username=person.username, role=role)
    project = open_labelling(project=project)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        import_labels(lines=stream, project=project)
    import_gold(
        lines=gold_for_every_answer(project, note=IMPORTED_NOTE),
        project=project,
        source=IMPORTED_SOURCE,
        file_name=IMPORTED_FILE,
    )
    _import_demo_judge_run(project)
    return project


def _import_demo_judge_run(project) -> None:
    """The judge run, when that feature is installed: its output must not reach reviewers."""
    path = FIXTURES / "demo_judge_run.jsonl"
    try:
        from evaluation.judges.runs import import_judge_run
    except ImportError:
        return
    if path.exists():
        with open(path, "rb") as stream:
            import_judge_run(lines=stream, project=project)


def _url(name, project, **kwargs):
    try:
        return reverse(name, kwargs={"slug": project.slug, **kwargs})
    except NoReverseMatch:
        return None


def _status(client, user, url):
    client.logout()
    if user is not None:
        client.login(username=user.username, password=PASSWORD)
    return client.get(url).status_code


@pytest.mark.django_db
def test_access_matrix(client, demo, reviewer_a, reviewer_b, lead, outsider):
    task = next_task(project=demo, reviewer=reviewer_a)
    task_url = _url("task", demo, number=task.answer.task_number)
    people = {
        "reviewer_a": reviewer_a,
        "reviewer_b": reviewer_b,
        "lead": lead,
        "outsider": outsider,
    }
    expected: dict[str, dict[str, int]] = {}
    for name in LEAD_PAGES:
        url = _url(name, demo)
        if url:
            expected[url] = {"reviewer_a": 404, "reviewer_b": 404, "lead": 200, "outsider": 404}
    for name in REVIEWER_PAGES:
        expected[_url(name, demo)] = {
            "reviewer_a": 200,
            "reviewer_b": 200,
            "lead": 404,
            "outsider": 404,
        }
    expected[_url("project", demo)] = {
        "reviewer_a": 200,
        "reviewer_b": 200,
        "lead": 302,
        "outsider": 404,
    }
    expected[task_url] = {"reviewer_a": 200, "reviewer_b": 404, "lead": 404, "outsider": 404}
    expected[_url("gold_download", demo, fmt="jsonl")] = {
        "reviewer_a": 404,
        "reviewer_b": 404,
        "lead": 200,
        "outsider": 404,
    }
    for url, by_person in expected.items():
        for who, status in by_person.items():
            assert _status(client, people[who], url) == status, (url, who)
        assert _status(client, None, url) == 302, (url, "anonymous")  # to the login page


@pytest.mark.django_db
def test_a_missing_project_and_a_forbidden_one_look_the_same(client, demo, outsider):
    client.login(username=outsider.username, password=PASSWORD)
    forbidden = client.get(_url("project", demo))
    missing = client.get("/p/no-such-project/")
    assert forbidden.status_code == missing.status_code == 404
    token = re.compile(rb'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]+"')
    assert token.sub(b"", forbidden.content) == token.sub(b"", missing.content)


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("href", "hx-get", "src"):
            if attrs.get(key):
                self.links.append(attrs[key])
        if tag == "form" and (attrs.get("method") or "get").lower() == "get":
            self.links.append(attrs.get("action") or "")


def _secrets(project, reviewer) -> list[str]:
    """Strings the reviewer must never receive."""
    secrets = {"baseline", "verifier"}
    secrets |= set(project.variants.values_list("name", flat=True))
    secrets |= {m for m in project.variants.values_list("model", flat=True) if m}
    secrets |= set(Answer.objects.filter(project=project).values_list("answer_id", flat=True))
    others = project.memberships.exclude(user=reviewer).values_list("user__username", flat=True)
    secrets |= set(others)
    secrets |= {IMPORTED_SOURCE, IMPORTED_FILE, IMPORTED_NOTE}
    with open(FIXTURES / "demo_labels.jsonl") as f:
        rows = [json.loads(line) for line in f]
    mine = {c["note"] for r in rows if r["reviewer"] == reviewer.username for c in r["claims"]}
    mine |= {r["note"] for r in rows if r["reviewer"] == reviewer.username}
    for row in rows:
        if row["reviewer"] != reviewer.username:
            secrets |= {row["note"]} | {c["note"] for c in row["claims"]}
    secrets -= mine
    judge = FIXTURES / "demo_judge_run.jsonl"
    if judge.exists():
        with open(judge) as f:
            header = json.loads(f.readline())
        secrets |= {header.get("judge"), header.get("model"), header.get("prompt", "")[:40]}
    return sorted(s for s in secrets if s and len(s) > 2)


def _leaks(body: str, secrets: list[str]) -> list[str]:
    """Each secret found, with the text around it so a failure shows where it leaked."""
    found = []
    for secret in secrets:
        match = re.search(r"(?<![\w-])" + re.escape(secret) + r"(?![\w-])", body)
        if match:
            found.append(f"{secret!r} in …{body[max(0, match.start() - 80) : match.end() + 40]}…")
    return found


def _crawl(client, start: list[str], secrets: list[str], limit: int = 400) -> int:
    """Follow every link and GET form from `start` as the logged-in client, asserting that no
    response carries a secret; returns how many pages it read."""
    seen, queue, visited = set(), list(start), 0
    while queue and visited < limit:
        url = queue.pop(0)
        path = urlparse(url).path
        if not path or path in seen or path.startswith(("/static/", "/logout")):
            continue
        seen.add(path)
        response = client.get(url)
        visited += 1
        body = (
            b"".join(response.streaming_content) if response.streaming else response.content
        ).decode("utf-8", "replace")
        assert not _leaks(body, secrets), (url, _leaks(body, secrets))
        assert response.status_code in (200, 302, 404), (url, response.status_code)
        if response.status_code == 302:
            queue.append(response["Location"])
        parser = _Links()
        parser.feed(body)
        queue += [
            urljoin(url, link)
            for link in parser.links
            if link and not link.startswith(("http", "#", "mailto:"))
        ]
    return visited


@pytest.mark.django_db
def test_a_reviewer_who_tries_never_reaches_a_variant_an_answer_id_or_another_reviewer(
    client, demo, reviewer_a
):
    # alice has submitted labels (imported) and a task in progress with a draft
    task = next_task(project=demo, reviewer=reviewer_a)
    save_claim_label(
        assignment=task,
        claim=task.answer.claims.first(),
        data={"support": "supported", "note": "draft in progress"},
    )
    client.login(username=reviewer_a.username, password=PASSWORD)
    secrets = _secrets(demo, reviewer_a)
    assert "verifier" in secrets and "bob" in secrets and IMPORTED_NOTE in secrets

    start = ["/", _url("project", demo)]
    start += [_url("task", demo, number=n) for n in range(1, 62)]  # guessing task numbers
    start += [u for name in LEAD_PAGES if (u := _url(name, demo))]
    start += [
        _url("gold_download", demo, fmt="jsonl"),
        "/admin/",
        "/admin/annotate/answer/",
        "/p/demo/claims/1/",
        "/p/demo/adjudicate/1/",
    ]
    visited = _crawl(client, start, secrets)
    assert visited > 20

    # and the error responses of the write endpoints do not leak either
    mine = Assignment.objects.filter(reviewer=reviewer_a).values("answer_id")
    foreign = Answer.objects.filter(project=demo).exclude(pk__in=mine).first()
    for name, extra in (
        ("save_claim", {"index": 0}),
        ("save_answer", {}),
        ("submit", {}),
        ("skip", {}),
        ("reopen", {}),
    ):
        response = client.post(_url(name, demo, number=foreign.task_number, **extra), {})
        assert response.status_code == 404
        assert not _leaks(response.content.decode(), secrets)


@pytest.mark.django_db
def test_a_reviewer_never_reaches_the_admin(client, demo, reviewer_a):
    client.login(username=reviewer_a.username, password=PASSWORD)
    response = client.get("/admin/annotate/variant/")
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.django_db
def test_no_page_shows_template_syntax(client, demo, reviewer_a, lead):
    """A multi-line {# #} is not a comment in Django: it reaches the page as text."""
    task = next_task(project=demo, reviewer=reviewer_a)
    pages = {
        lead: [_url(name, demo) for name in LEAD_PAGES] + [reverse("project_new")],
        reviewer_a: [_url(name, demo) for name in REVIEWER_PAGES]
        + [_url("task", demo, number=task.answer.task_number), reverse("home")],
    }
    for person, urls in pages.items():
        client.login(username=person.username, password=PASSWORD)
        for url in filter(None, urls):
            body = client.get(url).content.decode()
            for syntax in ("{#", "#}", "{%", "%}", "{{", "}}"):
                assert syntax not in body, (url, syntax)


def _task_order(slug: str) -> list[str]:
    project = open_labelling(project=import_fixture("demo.jsonl", slug))
    order = list(
        Answer.objects.filter(project=project)
        .order_by("task_number")
        .values_list("answer_id", flat=True)
    )
    project.slug = f"{slug}-{project.pk}"  # free the slug for the next import
    project.save(update_fields=["slug"])
    return order


@pytest.mark.django_db
def test_task_numbers_cannot_be_replayed_from_anything_a_reviewer_knows():
    """A shuffle seeded with the slug let a reviewer rebuild it and name the variant of all 60
    demo tasks. The same bundle opened twice under the same slug must come out differently,
    and the variants must not keep a fixed order within a case."""
    first, second = _task_order("demo"), _task_order("demo")
    assert sorted(first) == sorted(second) and first != second
    baseline_first = {}
    for answer_id in first:
        case, variant = answer_id.split("/")
        baseline_first.setdefault(case, variant == "baseline")
    assert len(set(baseline_first.values())) == 2  # P(all one way) = 2 x 2^-30
    cases = [answer_id.split("/")[0] for answer_id in first]
    assert all(a != b for a, b in zip(cases, cases[1:], strict=False))  # still spread apart


@pytest.mark.django_db
def test_imported_labels_keep_no_trace_of_the_files_order(client, demo, reviewer_a):
    """demo_labels.jsonl runs case by case, baseline before verifier: task lists that followed
    it (by row id or by the time each row was saved) told the reviewer the variants."""
    mine = Assignment.objects.filter(project=demo, reviewer=reviewer_a)
    assert mine.count() > 2
    assert mine.values("taken_at", "touched_at", "submitted_at").distinct().count() == 1
    by_number = sorted(mine.values_list("answer__task_number", flat=True))
    client.login(username=reviewer_a.username, password=PASSWORD)
    page = client.get(_url("my_tasks", demo)).content.decode()
    shown = [int(n) for n in re.findall(r'/tasks/(\d+)/"', page)]
    assert list(dict.fromkeys(shown)) == by_number
    api = client.get(f"/api/v1/projects/{demo.slug}/tasks/?status=submitted").json()
    rows = api["results"] if isinstance(api, dict) else api
    assert [row["task_number"] for row in rows] == by_number


@pytest.mark.django_db
def test_each_reviewer_walks_the_queue_from_a_secret_point_of_their_own():
    """Issue #15: every reviewer got the tasks in the same order. Now each starts at an
    offset keyed with the server's secret; the project's spread holds within each walk."""
    from annotate.members.services import add_member
    from annotate.projects.opening import open_labelling
    from annotate.queue.services import next_task, reviewer_offset

    project = import_fixture("demo.jsonl", "walk")
    people = [add_member(project=project, username=f"w{i}", role="reviewer").user for i in range(6)]
    project = open_labelling(project=project)
    offsets = {reviewer_offset(project, person) for person in people}
    assert len(offsets) == 6 and all(0 <= o < 1 for o in offsets)
    firsts = [next_task(project=project, reviewer=person).answer_id for person in people]
    assert len(set(firsts)) >= 3  # six walks from six points: not one shared first task
    # the same reviewer resumes the same walk
    assert reviewer_offset(project, people[0]) == reviewer_offset(project, people[0])


@pytest.mark.django_db
def test_answers_imported_after_opening_are_spread_through_the_queue_not_appended():
    """Issue #15: answers imported after labelling opened got a block of their own (tasks
    21-30, all one variant), served last and back to back."""
    from annotate.imports.bundle_import import import_bundle
    from annotate.members.services import add_member
    from annotate.projects.opening import open_labelling
    from annotate.queue.services import next_task

    rows = [json.loads(line) for line in (FIXTURES / "demo.jsonl").read_text().splitlines()]
    late_variant = [r for r in rows if r.get("type") == "answer" and r["variant"] == "verifier"]
    early = [r for r in rows if r not in late_variant]
    project = import_bundle(lines=[json.dumps(r) for r in early], project_slug="late").project
    person = add_member(project=project, username="early", role="reviewer").user
    project = open_labelling(project=project)
    taken = next_task(project=project, reviewer=person)
    taken_number = taken.answer.task_number
    import_bundle(lines=[json.dumps(r) for r in late_variant], project_slug="late")
    answers = Answer.objects.filter(project=project)
    late = answers.filter(variant__name="verifier")
    numbers = sorted(late.values_list("task_number", flat=True))
    total = answers.count()
    assert sorted(answers.values_list("task_number", flat=True)) == list(range(1, total + 1))
    assert numbers != list(range(total - len(numbers) + 1, total + 1))  # no block at the end
    assert min(numbers) <= total // 2
    taken.answer.refresh_from_db()
    assert taken.answer.task_number == taken_number  # a task someone holds keeps its number
    keys = sorted(late.values_list("queue_key", flat=True))
    assert keys[0] < 0.5 < keys[-1]  # spread through the queue, not waiting at its end


@pytest.mark.django_db
def test_imported_gold_reaches_the_lead_and_never_a_reviewer(client, demo, reviewer_a, lead):
    """The secrets the crawl looks for are real: the lead's gold download carries the
    imported gold's source and notes; a reviewer's own task, on an answer that has imported
    gold, carries none of it."""
    client.login(username=lead.username, password=PASSWORD)
    download = client.get(_url("gold_download", demo, fmt="jsonl"))
    body = b"".join(download.streaming_content).decode()
    assert IMPORTED_SOURCE in body and IMPORTED_NOTE in body and IMPORTED_FILE in body
    client.logout()
    task = next_task(project=demo, reviewer=reviewer_a)
    assert task.answer.imported_gold.note == IMPORTED_NOTE
    client.login(username=reviewer_a.username, password=PASSWORD)
    page = client.get(_url("task", demo, number=task.answer.task_number))
    assert page.status_code == 200
    assert not _leaks(page.content.decode(), [IMPORTED_SOURCE, IMPORTED_NOTE, IMPORTED_FILE])


# --- Gold checks: a reviewer cannot tell a check from a task ------------------------------------

CHECK_MARKERS = ["gold check", "gold_check", "is_check", "check_rate", "GoldCheck", "check-badge"]


class _AlwaysCheck(random.Random):
    def random(self):
        return 0.0


def _take(project, reviewer, *, check: bool):
    project.check_rate = 1 if check else 0
    project.save(update_fields=["check_rate"])
    task = next_task(project=project, reviewer=reviewer, rng=_AlwaysCheck())
    assert task.is_check == check
    return task


def _copy_labels(source: Assignment, target: Assignment) -> None:
    """The target's label set made the source's, notes left out (they are the source's own)."""
    for label in source.claim_labels.all():
        ClaimLabel.objects.create(
            assignment=target,
            claim_id=label.claim_id,
            support=label.support,
            severity=label.severity,
            requires_evidence=label.requires_evidence,
            evidence_ids=label.evidence_ids,
            evidence_quote=label.evidence_quote,
            citations=label.citations,
        )
    Assignment.objects.filter(pk=target.pk).update(
        relevance=source.relevance,
        abstention=source.abstention,
        failure_labels=source.failure_labels,
    )


def _shape(task: dict) -> dict[str, set[frozenset]]:
    """The keys of each kind of object a task's payload holds (the task, its answer and its
    label, its claims and their labels, its passages, the progress)."""
    return {
        "task": {frozenset(task)},
        "answer": {frozenset(task["answer"])},
        "answer label": {frozenset(task["answer"]["label"])},
        "progress": {frozenset(task["progress"])},
        "claim": {frozenset(c) for c in task["claims"]},
        "claim label": {frozenset(c["label"]) for c in task["claims"] if c["label"]},
        "passage": {frozenset(p) for p in task["passages"]},
    }


def _normalised(body: str, names: tuple[str, ...]) -> str:
    """A page with what differs between two people's views of one task taken out: the CSRF
    token, the signed-in person's name, numbers (times, seconds, database keys)."""
    body = re.sub(r'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]+"', r"\1", body)
    for name in names:
        body = re.sub(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", "PERSON", body)
    return re.sub(r"\d+", "0", body)


@pytest.mark.django_db
def test_a_reviewer_holding_gold_checks_finds_no_marker_that_tells_a_check_from_a_task(
    client, demo, reviewer_a, lead
):
    """Carol, a third reviewer, has submitted a check (with alice's very labels), a new
    answer, and holds a check in progress. Crawling everything she can reach finds no check
    marker, no other reviewer's name or note; the API gives a check the same shape as a task;
    and her page of the checked answer is alice's page of it, but for the person and numbers."""
    from annotate.checks.services import mark_all_decided

    carol = add_member(project=demo, username="carol", role="reviewer", password=PASSWORD).user
    assert mark_all_decided(project=demo, lead=lead) >= 2
    check = _take(demo, carol, check=True)
    original = Assignment.objects.get(answer=check.answer, reviewer=reviewer_a)
    _copy_labels(original, check)
    assert not submit_labels(assignment=check)
    task = _take(demo, carol, check=False)
    label_everything(task)
    assert not submit_labels(assignment=task)
    held = _take(demo, carol, check=True)
    save_claim_label(
        assignment=held, claim=held.answer.claims.first(), data={"support": "supported"}
    )
    demo.check_rate = 0.1
    demo.save(update_fields=["check_rate"])

    client.login(username="carol", password=PASSWORD)
    secrets = _secrets(demo, carol) + CHECK_MARKERS
    assert "alice" in secrets and "bob" in secrets
    tasks = [check, task, held]
    start = ["/", _url("project", demo), _url("my_tasks", demo)]
    start += [_url("task", demo, number=t.answer.task_number) for t in tasks]
    start += [_url("task", demo, number=n) for n in range(1, 62)]
    start += [u for name in LEAD_PAGES if (u := _url(name, demo))]
    start.append(_url("gold", demo))
    api = reverse("api:project", kwargs={"slug": "demo"})
    start += [api, api + "tasks/"]
    start += [api + f"tasks/{t.answer.task_number}/" for t in tasks]
    assert _crawl(client, start, secrets) > 20

    payloads = {t.pk: client.get(api + f"tasks/{t.answer.task_number}/").json() for t in tasks}
    shapes = {pk: _shape(payload) for pk, payload in payloads.items()}
    for kind, keys in shapes[task.pk].items():
        for other in (check.pk, held.pk):
            if keys and shapes[other][kind]:  # an answer may have no claims or passages
                assert shapes[other][kind] == keys, kind
    assert shapes[check.pk]["claim label"] and shapes[held.pk]["claim label"]
    listed = client.get(api + "tasks/").json()["results"]
    assert len(listed) == 3 and len({frozenset(row) for row in listed}) == 1
    assert "check_rate" not in client.get(api).json()

    # The checked answer's page, as carol sees it and as alice (who labelled it) sees it. Their
    # undo windows closed alike (alice's label sets were imported: none), and with them the
    # day's counter, which is the person's, not the task's.
    Assignment.objects.filter(reviewer__in=[carol, reviewer_a]).update(undo_until=None)
    url = _url("task", demo, number=check.answer.task_number)
    carols = client.get(url).content.decode()
    client.logout()
    client.login(username=reviewer_a.username, password=PASSWORD)
    alices = client.get(url).content.decode()
    names = ("carol", reviewer_a.username)
    assert _normalised(carols, names) == _normalised(alices, names)
