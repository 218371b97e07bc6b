"""Scale-out: two app servers (gunicorn, DEBUG off, one PostgreSQL database) and a worker, as a
team runs claimdesk behind a load balancer. The lead's bundle is uploaded to one server, its
job followed on the other and imported by the worker; then 8 reviewers label over real HTTP,
every request of theirs going to either server in turn (no sticky sessions), until the queue
is empty. Afterwards: no answer has more reviewers than its overlap, no label set is lost or
half-written, no reviewer labelled an answer twice, and no session was ever refused.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
from collections import Counter
from itertools import cycle

import pytest
import requests

from annotate.members.services import add_member
from annotate.models import Answer, Assignment, ClaimLabel, LabelRevision, Project, Role
from tests.workers import ROOT, child_env, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

SERVERS = 2  # app servers, each on a port the OS assigns (see listening_sockets)
REVIEWERS = 8
CASES = 15  # two variants each: 30 answers, 60 label sets at an overlap of 2
PASSWORD = "scale-out-password-7"


def bundle() -> bytes:
    """A binary-support project (support is the one field to label), two claims an answer."""
    lines = [
        {
            "type": "bundle",
            "corpus_version": "scale-v1",
            "name": "Scale-out",
            "label_schema": {"support": "binary", "claim_fields": [], "answer_fields": []},
        }
    ]
    for c in range(CASES):
        text = f"Fact {c} holds. It is documented."
        lines.append({"type": "passage", "passage_id": f"p{c}", "text": text})
        lines.append(
            {
                "type": "case",
                "case_id": f"c{c}",
                "question": f"Does fact {c} hold?",
                "answerable": True,
                "adversarial": False,
                "required_facts": [f"fact {c}"],
                "evidence": [{"passage_id": f"p{c}", "quote": f"Fact {c} holds."}],
            }
        )
        for variant in ("a", "b"):
            answer = f"Fact {c} holds. It is documented by {variant}."
            first = answer.index(".") + 1
            lines.append(
                {
                    "type": "answer",
                    "answer_id": f"c{c}/{variant}",
                    "case_id": f"c{c}",
                    "variant": variant,
                    "text": answer,
                    "retrieved": [{"passage_id": f"p{c}", "rank": 1, "in_prompt": True}],
                    "claims": [
                        {"text": answer[:first], "start": 0, "end": first, "citations": []},
                        {
                            "text": answer[first + 1 :],
                            "start": first + 1,
                            "end": len(answer),
                            "citations": [],
                        },
                    ],
                }
            )
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


class Browser:
    """One person's cookies, sent to whichever server comes next (as a load balancer without
    sticky sessions would): a session made on one server must hold on the other."""

    def __init__(self, username: str, ports: list[int]):
        self.username = username
        self.http = requests.Session()
        self.servers = cycle(f"http://127.0.0.1:{port}" for port in ports)
        self.refused: list[str] = []

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        url = next(self.servers) + path
        headers = kwargs.pop("headers", {})
        token = self.http.cookies.get("csrftoken")
        if method == "POST" and token:
            headers["X-CSRFToken"] = token
        response = self.http.request(
            method, url, headers=headers, allow_redirects=False, timeout=180, **kwargs
        )
        location = response.headers.get("Location", "")
        if response.status_code in (401, 403, 500) or "/login/" in location:
            self.refused.append(f"{method} {url}: {response.status_code} {location}")
        return response

    def login(self) -> None:
        page = self.request("GET", "/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        response = self.request(
            "POST",
            "/login/",
            data={
                "username": self.username,
                "password": PASSWORD,
                "csrfmiddlewaretoken": token,
            },
        )
        assert response.status_code == 302, (self.username, response.status_code)


def label_until_done(person: Browser, slug: str, claims_of: dict[int, int], done: list[int]):
    person.login()
    location = person.request("POST", f"/p/{slug}/next/").headers["Location"]
    while True:
        found = re.search(r"/tasks/(\d+)/$", location)
        if found is None:
            assert location.endswith(f"/p/{slug}/done/"), location
            return
        number = int(found.group(1))
        assert person.request("GET", location).status_code == 200
        for index in range(claims_of[number]):
            saved = person.request(
                "POST", f"/p/{slug}/tasks/{number}/claims/{index}/", data={"support": "supported"}
            )
            assert saved.status_code == 302, (saved.status_code, saved.text[:300])
        submitted = person.request("POST", f"/p/{slug}/tasks/{number}/submit/")
        assert submitted.status_code == 302, (submitted.status_code, submitted.text[:500])
        done.append(number)
        location = submitted.headers["Location"]


def listening_sockets(count: int) -> list[socket.socket]:
    """Sockets listening on ports the OS assigns, for gunicorn to serve on by descriptor
    (--bind fd://N). No fixed port: two checkouts running this test at once each get their
    own, and no other process can take a port between its choice and gunicorn's start."""
    sockets = []
    for _ in range(count):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        listener.set_inheritable(True)
        sockets.append(listener)
    return sockets


def port_of(listener: socket.socket) -> int:
    return listener.getsockname()[1]


def start_servers(var_dir, *, workers: int = 2) -> tuple[list[subprocess.Popen], list[int]]:
    """Gunicorn app servers, one per OS-assigned port: (processes, ports)."""
    var_dir.mkdir(parents=True, exist_ok=True)
    sockets = listening_sockets(SERVERS)
    ports = [port_of(listener) for listener in sockets]
    env = child_env(
        var_dir,
        SECRET_KEY="scale-out-test-secret-key-" + "x" * 40,
        ALLOWED_HOSTS="127.0.0.1",
        CSRF_TRUSTED_ORIGINS=",".join(f"http://127.0.0.1:{port}" for port in ports),
        CLAIMDESK_LOGIN_FAILURE_LIMIT="100",
    )
    servers = []
    try:
        for listener, port in zip(sockets, ports, strict=True):
            log = (var_dir / f"gunicorn-{port}.log").open("wb")
            servers.append(
                subprocess.Popen(
                    [
                        *(sys.executable, "-m", "gunicorn", "config.wsgi"),
                        *("--bind", f"fd://{listener.fileno()}", "--workers", str(workers)),
                        *("--timeout", "180", "--access-logfile", "-"),
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=(listener.fileno(),),
                )
            )
    finally:
        for listener in sockets:  # the servers hold them now
            listener.close()
    return servers, ports


def up(port: int) -> bool:
    try:
        return requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5).ok
    except requests.RequestException:
        return False


def stop(servers: list[subprocess.Popen]) -> None:
    for server in servers:
        server.terminate()
    for server in servers:
        server.wait(timeout=30)


def test_two_copies_of_the_servers_run_at_once_on_ports_of_their_own(tmp_path):
    """What two checkouts running the suite at once do: each starts its app servers, and
    neither collides with the other (the servers used to bind the fixed ports 8792/8793)."""
    first, first_ports = start_servers(tmp_path / "one", workers=1)
    second, second_ports = start_servers(tmp_path / "two", workers=1)
    try:
        ports = first_ports + second_ports
        assert len(set(ports)) == 4 and not set(ports) & {8792, 8793}
        for port in ports:
            wait_for(lambda port=port: up(port), f"gunicorn on {port}", timeout=60, every=0.3)
        assert all(server.poll() is None for server in first + second)
    finally:
        stop(first + second)


def test_two_app_servers_and_a_worker_share_the_work_of_eight_reviewers(
    workers, lead, tmp_path, settings
):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.PBKDF2PasswordHasher"]
    lead.set_password(PASSWORD)
    lead.save()
    servers, ports = start_servers(tmp_path)
    worker = workers(SECRET_KEY="scale-out-test-secret-key-" + "x" * 40)
    try:
        for port in ports:
            wait_for(lambda port=port: up(port), f"gunicorn on {port}", timeout=60, every=0.3)

        # The lead uploads to one server and follows the job on the other.
        boss = Browser(lead.username, ports)
        boss.login()
        form = boss.request("GET", "/projects/new/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        accepted = boss.request(
            "POST",
            "/projects/new/",
            data={"slug": "scale", "format": "bundle", "csrfmiddlewaretoken": token},
            files={"file": ("scale.jsonl", bundle(), "application/x-ndjson")},
        )
        assert accepted.status_code == 302, accepted.text[:500]
        job_page = accepted.headers["Location"]
        if "/jobs/" in job_page:

            def imported():
                response = boss.request("GET", job_page)
                return response.status_code == 302 and response.headers["Location"]

            assert wait_for(imported, "the import", timeout=60).endswith("/p/scale/setup/"), (
                worker.output()
            )
        project = Project.objects.get(slug="scale")
        for n in range(REVIEWERS):
            add_member(
                project=project,
                username=f"reviewer{n}",
                role=Role.REVIEWER,
                password=PASSWORD,
            )
        opened = boss.request("POST", "/p/scale/open/")
        assert opened.status_code == 302
        project.refresh_from_db()
        assert project.state == Project.State.OPEN

        claims_of = {
            a.task_number: a.claims.count()
            for a in Answer.objects.filter(project=project).prefetch_related("claims")
        }
        people = [Browser(f"reviewer{n}", ports) for n in range(REVIEWERS)]
        done: dict[str, list[int]] = {p.username: [] for p in people}
        failures: list[BaseException] = []

        def run(person):
            try:
                label_until_done(person, "scale", claims_of, done[person.username])
            except BaseException as exc:  # reported below, with the person
                failures.append(exc)

        threads = [threading.Thread(target=run, args=(p,)) for p in people]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert not any(t.is_alive() for t in threads), "a reviewer never finished"
        assert not failures, failures
    finally:
        stop(servers)

    # Sessions held on both servers: nobody was ever sent to log in, refused or shown a 500.
    assert not [r for p in people for r in p.refused], [r for p in people for r in p.refused]
    assert not boss.refused, boss.refused
    # Both servers took part in the labelling.
    for port in ports:
        log = (tmp_path / f"gunicorn-{port}.log").read_text()
        assert log.count('"POST /p/scale/tasks/') > 20, log[-2000:]

    held = Counter(
        Assignment.objects.filter(project=project)
        .exclude(status=Assignment.Status.RELEASED)
        .values_list("answer_id", flat=True)
    )
    answers = Answer.objects.filter(project=project).count()
    # No answer beyond its overlap, and the queue emptied: every answer has exactly two.
    assert max(held.values()) <= project.overlap
    assert len(held) == answers and set(held.values()) == {project.overlap}
    # No task done twice: by nobody twice, and what each person submitted is what is stored.
    for username, numbers in done.items():
        assert len(numbers) == len(set(numbers)), (username, numbers)
    pairs = list(Assignment.objects.filter(project=project).values_list("answer_id", "reviewer_id"))
    assert len(pairs) == len(set(pairs))
    submitted = Assignment.objects.filter(project=project, status=Assignment.Status.SUBMITTED)
    assert submitted.count() == sum(len(n) for n in done.values()) == answers * project.overlap
    for username, numbers in done.items():
        stored = set(
            submitted.filter(reviewer__username=username).values_list(
                "answer__task_number", flat=True
            )
        )
        assert stored == set(numbers), username
    # No label lost: every claim of every submitted task has its label and each submission
    # its revision.
    claims = sum(claims_of.values()) * project.overlap
    assert ClaimLabel.objects.filter(assignment__in=submitted).count() == claims
    assert not ClaimLabel.objects.filter(assignment__in=submitted, support="").exists()
    assert LabelRevision.objects.filter(assignment__in=submitted).count() == submitted.count()
    # The labour was shared (the queue gives each person a secret start, not a fixed share).
    assert sum(1 for numbers in done.values() if numbers) >= REVIEWERS // 2
