"""The chaos soak: two app servers, a worker, reviewers labelling and a lead adjudicating,
exporting and uploading over real HTTP, while the worker is killed, PostgreSQL drops every
connection and (RQ backend) Redis restarts. At the end it checks, in SQL, that nothing a
client was told was saved got lost, and prints what happened.

Usage: python bench/soak.py [--minutes 10] [--reviewers 40] [--backend db|rq|both]
                           [--fault-every 45] [--window 10] [--json out.json]
(BENCH_DATABASE_URL overrides postgres://postgres@127.0.0.1:5432/claimdesk_bench_soak, which
is dropped and re-created; its name must contain 'bench'.)

What runs, per phase (`both`: the database backend for the first half of the minutes, then
RQ on a redis-server of the soak's own, on a free port, in its own directory):
- two gunicorn servers (2 workers x 4 threads, DEBUG off, --keep-alive 75) on ports the OS
  assigns, and `manage.py worker`, each in a session of its own; a supervisor thread
  restarts the worker a few seconds after it exits, whoever ended it, as systemd or docker's
  restart policy would;
- reviewers with API tokens, each request sent to the next server in turn (no sticky
  sessions): take the next task, draft each claim (sometimes twice) and the answer with the
  `version` read, submit; now and then skip a task, or reopen (undo) one just submitted,
  change a label and submit again. A request that fails (no answer, or 5xx) is sent again,
  as the Python client does with `retries`, after Retry-After;
- a lead who adjudicates the disagreements whose undo window has closed, asks for the gold
  set (a job: CLAIMDESK_GOLD_STREAM_MAX_ROWS is 5 here) and downloads it, and uploads
  bundles (new projects of 1,000 answers) and label files (into a side project); every job is
  followed through the API until it ends;
- faults, in turn, spread over the phase: `kill -9` of the worker's process group (while a job
  runs: the soak starts an upload and waits for it to be taken), then the supervisor's restart;
  every connection to the database terminated (pg_terminate_backend); Redis stopped and
  started again (RQ phase; append-only file on, so queued tasks survive as in production).

A fault's window runs from its start to `--window` seconds after it ends (the worker back,
Redis back). The target: no 5xx outside the windows, only 503 inside them. A job is
"resumed without a person" when it was running at a kill and then succeeded: the soak never
presses Retry. At the end of each phase the soak waits for the jobs to end (at most twice
CLAIMDESK_JOB_STALE_SECONDS, set to --stale-seconds, plus 30 s) before the next phase or the
checks.

Invariants, in SQL against the database after everything has stopped: every label a client
was answered 2xx for (submitted sets, and drafts of tasks still in progress) is stored once with
that value; every released task is released; no answer holds more reviewers than its overlap;
no reviewer holds an answer twice; every submitted task has a label on each claim and the
answer, and one revision per submission; no job is left queued or running. The exit status is
1 when any of them is violated. Benchmarks measure: no time is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from urllib.parse import urlparse

import psycopg
import redis
import requests

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/claimdesk_bench_soak"
)
from bench.common import ROOT, setup_bench_database  # noqa: E402
from bench.import_bundle import write_bundle  # noqa: E402

SLUG = "soak"  # the project the reviewers label
SIDE = "soak-side"  # the project label files are uploaded into
LEAD = "soak-lead"
IMPORTED = ("imported-a", "imported-b")  # the side project's reviewers, labelling elsewhere
SUPPORT = ("supported", "unsupported")
API = "/api/v1"
REDIS_SERVER = "/usr/bin/redis-server"


# --- what happened: requests and faults, timed from the start ------------------------------


T0 = time.monotonic()


def now() -> float:
    return time.monotonic() - T0


@dataclass
class Call:
    kind: str
    status: int | None  # None: no answer (connection refused or reset, timeout)
    error: str
    start: float
    end: float
    server: str = ""  # the app server's port, to find the request in that server's log


@dataclass
class Fault:
    kind: str
    start: float
    end: float  # the dependency back (worker restarted, Redis up); `start` for an instant one
    detail: str = ""


class Record:
    """Every request and fault, from every thread."""

    def __init__(self, window: float):
        self.window = window
        self.calls: list[Call] = []
        self.faults: list[Fault] = []
        self.notes: list[str] = []
        self.lock = threading.Lock()

    def call(self, *args) -> None:
        with self.lock:
            self.calls.append(Call(*args))

    def fault(self, fault: Fault) -> None:
        with self.lock:
            self.faults.append(fault)

    def note(self, text: str) -> None:
        with self.lock:
            self.notes.append(f"{now():7.1f} s  {text}")

    def in_window(self, call: Call) -> str:
        """The kind of the latest fault whose window the call overlaps, or ''."""
        for f in sorted(self.faults, key=lambda f: -f.start):
            if call.start <= f.end + self.window and call.end >= f.start:
                return f.kind
        return ""


class Servers:
    """The app servers' base URLs, taken in turn (a load balancer without sticky sessions)."""

    def __init__(self):
        self.urls: list[str] = []
        self.turn = count()
        self.lock = threading.Lock()

    def next(self) -> str:
        with self.lock:
            return self.urls[next(self.turn) % len(self.urls)]


class Api:
    """One person's token, each request to the next server. A request that gets no answer or a
    5xx is sent again after Retry-After (1 s without one), until `patience` runs out: what the
    Python client's `retries` does, and what a person pressing the button again does."""

    def __init__(self, token: str, servers: Servers, record: Record, stop: threading.Event):
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Token {token}"
        self.servers = servers
        self.record = record
        self.stop = stop

    def send(self, kind: str, method: str, path: str, *, patience: float = 180.0, **kwargs):
        """(response or None, whether an earlier attempt may have been applied)."""
        give_up = now() + patience
        ambiguous = False
        while True:
            start = now()
            server = self.servers.next()
            port = server.rsplit(":", 1)[-1]
            try:
                response = self.http.request(
                    method,
                    server + path,
                    timeout=90,
                    allow_redirects=False,
                    **kwargs,
                )
            except requests.RequestException as exc:
                self.record.call(kind, None, why_unanswered(exc), start, now(), port)
                response, wait = None, 1.0
            else:
                self.record.call(kind, response.status_code, "", start, now(), port)
                if response.status_code < 500:
                    return response, ambiguous
                wait = _retry_after(response)
            ambiguous = ambiguous or method != "GET"
            if now() + wait > give_up or self.stop.is_set():
                return response, ambiguous
            time.sleep(wait)


def why_unanswered(exc: Exception) -> str:
    """A request without an answer, in a few words: refused (no server listening), closed
    without a response (a kept-alive connection the server closed as it was reused, or a
    server process that died), reset, timed out."""
    text = str(exc)
    for marker, words in (
        ("RemoteDisconnected", "closed without a response"),
        ("refused", "connection refused"),
        ("reset", "connection reset"),
        ("timed out", "timed out"),
    ):
        if marker in text:
            return words
    return type(exc).__name__


def _retry_after(response) -> float:
    try:
        return min(float(response.headers.get("Retry-After", "1")), 10.0)
    except ValueError:
        return 1.0


# --- the data ---------------------------------------------------------------------------------


def soak_bundle(answers: int, *, name: str) -> bytes:
    """A binary-support project with relevance labelled per answer: two claims an answer, two
    answers (variants) a case."""
    lines: list[dict] = [
        {
            "type": "bundle",
            "corpus_version": "soak-v1",
            "name": name,
            "label_schema": {
                "support": "binary",
                "claim_fields": [],
                "answer_fields": ["relevance"],
            },
        }
    ]
    for c in range((answers + 1) // 2):
        lines.append({"type": "passage", "passage_id": f"p{c}", "text": f"Fact {c} holds."})
        lines.append(
            {
                "type": "case",
                "case_id": f"c{c}",
                "question": f"Does fact {c} hold?",
                "answerable": True,
                "adversarial": False,
            }
        )
        for variant in ("a", "b"):
            text = f"Fact {c} holds. It is documented by {variant}."
            cut = text.index(".") + 1
            lines.append(
                {
                    "type": "answer",
                    "answer_id": f"c{c}/{variant}",
                    "case_id": f"c{c}",
                    "variant": variant,
                    "text": text,
                    "retrieved": [{"passage_id": f"p{c}", "rank": 1, "in_prompt": True}],
                    "claims": [
                        {"text": text[:cut], "start": 0, "end": cut, "citations": []},
                        {
                            "text": text[cut + 1 :],
                            "start": cut + 1,
                            "end": len(text),
                            "citations": [],
                        },
                    ],
                }
            )
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def side_labels(answers: int) -> bytes:
    """A label file for the side project: both of its reviewers on every answer."""
    out = []
    for c in range((answers + 1) // 2):
        for variant in ("a", "b"):
            for n, reviewer in enumerate(IMPORTED):
                claims = [{"index": i, "support": SUPPORT[(c + i + n) % 2]} for i in range(2)]
                line = {"answer_id": f"c{c}/{variant}", "reviewer": reviewer, "relevance": 1}
                out.append(json.dumps({**line, "claims": claims}))
    return ("\n".join(out) + "\n").encode()


@dataclass
class People:
    lead: str  # the lead's token
    reviewers: dict[str, str]  # username -> token


def build(reviewers: int, answers: int, side_answers: int) -> People:
    """A fresh database: the soak project (open), the side project (open, its reviewers
    labelling elsewhere), the lead (may create projects) and the reviewers, each with a
    token."""
    setup_bench_database()
    # Late imports: Django is set up (on the soak's database) by setup_bench_database.
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from django.db import connection

    from annotate.imports.bundle_import import import_bundle
    from annotate.members.services import add_member
    from annotate.members.tokens import create_token
    from annotate.models import Project
    from annotate.projects.opening import open_labelling

    tokens = {}
    for slug, size, people in (
        (SLUG, answers, [f"reviewer{n:02d}" for n in range(reviewers)]),
        (SIDE, side_answers, list(IMPORTED)),
    ):
        import_bundle(lines=soak_bundle(size, name=slug).splitlines(), project_slug=slug)
        project = Project.objects.get(slug=slug)
        add_member(project=project, username=LEAD, role="lead")
        for username in people:
            add_member(project=project, username=username, role="reviewer")
        open_labelling(project=project)
        tokens.update({u: None for u in people if slug == SLUG})
    User = get_user_model()
    lead = User.objects.get(username=LEAD)
    lead.user_permissions.add(Permission.objects.get(codename="add_project"))
    people = People(
        lead=create_token(user=lead),
        reviewers={u: create_token(user=User.objects.get(username=u)) for u in tokens},
    )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    connection.close()
    return people


# --- the processes ----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Processes:
    """The app servers, the worker (with its supervisor) and, for RQ, Redis, of one phase."""

    def __init__(
        self,
        run_dir: Path,
        env: dict[str, str],
        record: Record,
        restart_delay: float,
        phase: str,
        keep_alive: float | None = None,  # None: gunicorn's own
    ):
        self.phase = phase
        self.keep_alive = keep_alive
        self.run_dir = run_dir
        self.env = env
        self.record = record
        self.restart_delay = restart_delay
        self.servers: list[subprocess.Popen] = []
        self.ports: list[int] = []
        self.worker: subprocess.Popen | None = None
        self.worker_lock = threading.Lock()
        self.killing = False  # the soak itself is killing the worker: not an exit to count
        self.exits: list[tuple[float, int]] = []  # the worker's own exits: (when, status)
        self.starts = 0
        self.redis: subprocess.Popen | None = None
        self.redis_port = 0
        self.supervising = threading.Event()
        self.supervisor: threading.Thread | None = None

    def _log(self, name: str):
        return (self.run_dir / name).open("ab")

    def start_redis(self) -> None:
        if not self.redis_port:
            self.redis_port = free_port()
        folder = self.run_dir / "redis"
        folder.mkdir(exist_ok=True)
        self.redis = subprocess.Popen(
            [
                *(REDIS_SERVER, "--port", str(self.redis_port), "--bind", "127.0.0.1"),
                *("--dir", str(folder), "--appendonly", "yes", "--save", ""),
            ],
            stdout=self._log("redis.log"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        client = redis.Redis(port=self.redis_port, socket_connect_timeout=1)
        for _ in range(100):
            try:
                client.ping()
                return
            except redis.RedisError:
                time.sleep(0.1)
        sys.exit("redis-server did not start")

    def stop_redis(self) -> None:
        if self.redis and self.redis.poll() is None:
            self.redis.terminate()
            self.redis.wait(timeout=30)

    def start_servers(self) -> None:
        sockets = []
        for _ in range(2):
            listener = socket.socket()
            listener.bind(("127.0.0.1", 0))
            listener.listen(256)
            listener.set_inheritable(True)
            sockets.append(listener)
        self.ports = [s.getsockname()[1] for s in sockets]
        env = {
            **self.env,
            "CSRF_TRUSTED_ORIGINS": ",".join(f"http://127.0.0.1:{p}" for p in self.ports),
        }
        try:
            for listener, port in zip(sockets, self.ports, strict=True):
                self.servers.append(
                    subprocess.Popen(
                        [
                            *(sys.executable, "-m", "gunicorn", "config.wsgi"),
                            *("--bind", f"fd://{listener.fileno()}"),
                            *("--workers", "2", "--threads", "4", "--timeout", "120"),
                            *(
                                ("--keep-alive", f"{self.keep_alive:g}")
                                if self.keep_alive is not None
                                else ()
                            ),
                        ],
                        cwd=ROOT,
                        env=env,
                        stdout=self._log(f"gunicorn-{self.phase}-{port}.log"),
                        stderr=subprocess.STDOUT,
                        pass_fds=(listener.fileno(),),
                        start_new_session=True,
                    )
                )
        finally:
            for listener in sockets:
                listener.close()
        for port in self.ports:
            for _ in range(300):
                try:
                    if requests.get(f"http://127.0.0.1:{port}/healthz", timeout=10).ok:
                        break
                except requests.RequestException:
                    pass
                time.sleep(0.2)
            else:
                sys.exit(f"gunicorn on {port} did not start")

    def start_worker(self) -> None:
        with self.worker_lock:
            self.worker = subprocess.Popen(
                [sys.executable, "manage.py", "worker", "--interval", "0.5"],
                cwd=ROOT,
                env=self.env,
                stdout=self._log(f"worker-{self.phase}.log"),
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a session of its own, as under a supervisor
            )
            self.starts += 1

    def kill_worker(self) -> None:
        """kill -9 of the worker and whatever it forked, as when its machine or container dies.
        RQ's work horse is a session of its own (os.setsid), outside the worker's process
        group: each descendant is found and killed."""
        with self.worker_lock:
            self.killing = True
            worker = self.worker
        if worker and worker.poll() is None:
            for pid in [*descendants(worker.pid), worker.pid]:
                with contextlib.suppress(ProcessLookupError):  # gone just now
                    os.kill(pid, signal.SIGKILL)
            worker.wait(timeout=30)
        time.sleep(self.restart_delay)
        self.start_worker()
        with self.worker_lock:
            self.killing = False

    def supervise(self) -> None:
        """Restart the worker a few seconds after it exits on its own (systemd's
        Restart=always, docker's restart policy); each such exit is counted."""
        self.supervising.set()

        def loop():
            while self.supervising.is_set():
                time.sleep(0.5)
                with self.worker_lock:
                    worker, ours = self.worker, self.killing
                if ours or worker is None or worker.poll() is None:
                    continue
                self.exits.append((now(), worker.returncode))
                log = (self.run_dir / f"worker-{self.phase}.log").read_text(errors="replace")
                last = [line for line in log.splitlines() if line.strip()][-1:] or [""]
                self.record.note(
                    f"worker exited on its own with status {worker.returncode}: {last[0][:200]}"
                )
                time.sleep(self.restart_delay)
                if self.supervising.is_set():
                    self.start_worker()

        self.supervisor = threading.Thread(target=loop, daemon=True)
        self.supervisor.start()

    def stop(self) -> None:
        self.supervising.clear()
        if self.supervisor:
            self.supervisor.join()
        for process in [*self.servers, self.worker]:
            if process and process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in [*self.servers, self.worker]:
            if process:
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        self.servers = []
        self.stop_redis()


def descendants(pid: int) -> list[int]:
    """The processes forked from `pid`, and theirs."""
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    children = [int(child) for child in found.stdout.split()]
    return [grand for child in children for grand in descendants(child)] + children


def pg_connect(url: str, dbname: str | None = None):
    u = urlparse(url)
    return psycopg.connect(
        host=u.hostname,
        port=u.port or 5432,
        user=u.username or "postgres",
        password=u.password,
        dbname=dbname or u.path.lstrip("/"),
        autocommit=True,
        connect_timeout=10,
    )


def running_jobs(url: str) -> list[tuple[str, int]]:
    """Jobs a live worker is running now: their heartbeat (every second) is fresh. A job left
    `running` by a killed worker is not one of them."""
    with pg_connect(url) as conn:
        rows = conn.execute(
            "SELECT id, attempt FROM jobs_job WHERE status = 'running' "
            "AND heartbeat_at > now() - interval '3 seconds'"
        ).fetchall()
    return [(str(pk), attempt) for pk, attempt in rows]


def open_jobs(url: str) -> int:
    with pg_connect(url) as conn:
        return conn.execute(
            "SELECT count(*) FROM jobs_job WHERE status IN ('queued', 'running')"
        ).fetchone()[0]


def terminate_connections(url: str) -> int:
    """Every connection to the soak's database, ended by PostgreSQL (as a failover or a
    restart of the database does); run from a connection to another database."""
    name = urlparse(url).path.lstrip("/")
    with pg_connect(url, "postgres") as conn:
        return conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        ).fetchone()[0]


# --- the people -------------------------------------------------------------------------------


def truth(number: int, part: int) -> int:
    return int(hashlib.sha256(f"{number}:{part}".encode()).hexdigest(), 16)


@dataclass
class Labels:
    claims: dict[int, str] = field(default_factory=dict)
    relevance: int | None = None


class Reviewer:
    """One reviewer through the API. What the server answered 2xx for is what this reviewer
    believes saved: `submitted` (task number -> the labels sent before the submit),
    `drafts` (tasks in progress), `released`. Tasks whose fate a client cannot know (a
    request given up on after retrying) are `uncertain` and left out of the checks."""

    def __init__(self, username: str, api: Api, rng: random.Random, think: float):
        self.username = username
        self.api = api
        self.rng = rng
        self.think = think
        self.submitted: dict[int, Labels] = {}
        self.drafts: dict[int, Labels] = {}
        self.released: set[int] = set()
        self.uncertain: set[int] = set()
        self.counts: Counter[str] = Counter()
        self.anomalies: list[str] = []

    def pause(self) -> None:
        time.sleep(self.rng.uniform(0, 2 * self.think))

    def path(self, number: int, rest: str = "") -> str:
        return f"{API}/projects/{SLUG}/tasks/{number}/{rest}"

    def anomaly(self, text: str, response=None) -> None:
        body = "" if response is None else f" {response.status_code} {response.text[:200]}"
        self.anomalies.append(f"{self.username}: {text}{body}")

    def value(self, number: int, index: int) -> str:
        """The reviewer's reading of a claim: the same as the other reviewer's most of the
        time, so that some answers go to adjudication."""
        agreed = SUPPORT[truth(number, index) % 2]
        return agreed if self.rng.random() < 0.85 else SUPPORT[1 - SUPPORT.index(agreed)]

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.one_task(stop)
            except Exception as exc:  # reported with the rest; the reviewer goes on
                self.anomaly(f"client error {type(exc).__name__}: {exc}")
                time.sleep(1)

    def one_task(self, stop: threading.Event) -> None:
        response, _ = self.api.send("next task", "POST", f"{API}/projects/{SLUG}/tasks/next/")
        if response is None or response.status_code >= 500:
            return
        if response.status_code == 204:
            self.counts["queue empty"] += 1
            time.sleep(2)
            return
        if response.status_code != 200:
            self.anomaly("next task", response)
            time.sleep(1)
            return
        task = response.json()
        number = task["task_number"]
        labels = self.drafts.setdefault(number, Labels())
        self.pause()
        for claim in task["claims"]:
            stored = claim["label"]
            version = stored["version"] if stored else None
            # A write given up on ends this pass: the next task the queue hands back is this
            # one, still in progress, and the reviewer goes through it again.
            version = self.draft_claim(number, claim["index"], labels, version)
            if version is None:
                return
            if self.rng.random() < 0.1:  # second thoughts
                self.pause()
                if self.draft_claim(number, claim["index"], labels, version) is None:
                    return
            self.pause()
            if stop.is_set():
                return
        if not self.draft_answer(number, labels, task["answer"]["label"]["version"]):
            return
        self.pause()
        if self.rng.random() < 0.04:
            self.skip(number)
            return
        if not self.submit(number, labels):
            return
        if self.rng.random() < 0.06:
            self.pause()
            self.reopen_and_change(number)

    def draft_claim(self, number: int, index: int, labels: Labels, version: int | None):
        value = self.value(number, index)
        for _ in range(3):
            body = {"support": value} | ({} if version is None else {"version": version})
            response, ambiguous = self.api.send(
                "claim draft", "PATCH", self.path(number, f"claims/{index}/"), json=body
            )
            if response is None or response.status_code >= 500:
                self.uncertain.add(number)
                return None
            if response.status_code == 200:
                label = response.json()["label"]
                labels.claims[index] = label["support"]
                self.counts["claim drafts"] += 1
                return label["version"]
            if response.status_code == 409 and "label" in response.json():
                stored = response.json()["label"]
                if ambiguous and stored["support"] == value:
                    labels.claims[index] = value  # the earlier attempt was saved
                    return stored["version"]
                if not ambiguous:
                    self.anomaly(f"task {number} claim {index}: stale version", response)
                version = stored["version"]
                continue
            self.anomaly(f"task {number} claim {index} draft", response)
            self.uncertain.add(number)
            return None
        self.uncertain.add(number)
        return None

    def draft_answer(self, number: int, labels: Labels, version: int) -> bool:
        relevance = truth(number, 99) % 3 if self.rng.random() < 0.9 else self.rng.randrange(3)
        for _ in range(3):
            response, ambiguous = self.api.send(
                "answer draft",
                "PATCH",
                self.path(number, "answer/"),
                json={"relevance": relevance, "version": version},
            )
            if response is None or response.status_code >= 500:
                self.uncertain.add(number)
                return False
            if response.status_code == 200:
                labels.relevance = response.json()["label"]["relevance"]
                self.counts["answer drafts"] += 1
                return True
            if response.status_code == 409 and "label" in response.json():
                stored = response.json()["label"]
                if ambiguous and stored["relevance"] == relevance:
                    labels.relevance = relevance
                    return True
                version = stored["version"]
                continue
            self.anomaly(f"task {number} answer draft", response)
            self.uncertain.add(number)
            return False
        self.uncertain.add(number)
        return False

    def status_of(self, number: int) -> str | None:
        response, _ = self.api.send("task", "GET", self.path(number))
        if response is not None and response.status_code == 200:
            return response.json()["status"]
        return None

    def submit(self, number: int, labels: Labels) -> bool:
        response, ambiguous = self.api.send("submit", "POST", self.path(number, "submit/"))
        ok = response is not None and response.status_code == 200
        if not ok and ambiguous and response is not None and response.status_code == 409:
            ok = self.status_of(number) == "submitted"  # the earlier attempt went through
        if not ok:
            if response is not None and response.status_code < 500:
                # 400 here lists a label the client was told was saved: a lost draft.
                self.anomaly(f"task {number} submit", response)
            self.uncertain.add(number)
            return False
        self.counts["submitted"] += 1
        self.uncertain.discard(number)  # every label of it answered 2xx in this pass
        self.submitted[number] = Labels(dict(labels.claims), labels.relevance)
        del self.drafts[number]
        return True

    def skip(self, number: int) -> None:
        response, ambiguous = self.api.send(
            "skip", "POST", self.path(number, "skip/"), json={"reason": "soak: not my field"}
        )
        if response is not None and response.status_code == 204:
            self.counts["skipped"] += 1
            self.released.add(number)
            del self.drafts[number]
        else:
            if not ambiguous:
                self.anomaly(f"task {number} skip", response)
            self.uncertain.add(number)

    def reopen_and_change(self, number: int) -> None:
        response, ambiguous = self.api.send("reopen", "POST", self.path(number, "reopen/"))
        reopened = response is not None and response.status_code == 200
        if not reopened and ambiguous and response is not None and response.status_code == 409:
            reopened = self.status_of(number) == "in_progress"
        if not reopened:
            if response is not None and response.status_code == 409:
                self.counts["reopen refused (window closed)"] += 1
            else:
                self.uncertain.add(number)
            return
        self.counts["reopened"] += 1
        labels = self.drafts[number] = self.submitted.pop(number)
        task = response.json() if response.status_code == 200 else None
        index = self.rng.randrange(2)
        version = None
        if task is not None:
            stored = task["claims"][index]["label"]
            version = stored["version"] if stored else None
        else:
            version = None  # unknown: saved unchecked, as a draft without a version is
        self.pause()
        if self.draft_claim(number, index, labels, version) is None:
            return
        self.pause()
        self.submit(number, labels)


class Lead:
    """The project's lead: adjudicates what is ready, asks for the gold set, uploads bundles and
    label files, and follows every job through the API until it ends (never pressing Retry)."""

    def __init__(self, api: Api, record: Record, args, rng: random.Random):
        self.api = api
        self.record = record
        self.args = args
        self.rng = rng
        self.counts: Counter[str] = Counter()
        self.anomalies: list[str] = []
        self.jobs: dict[str, dict] = {}  # id -> the job as last read
        self.upload_now = threading.Event()
        self.uploads = count()
        self.decided: set[int] = set()
        self.not_before: dict[int, float] = {}  # tasks whose undo window was open
        self.bundle = b""
        self.labels = side_labels(args.side_answers)

    def anomaly(self, text: str, response=None) -> None:
        body = "" if response is None else f" {response.status_code} {response.text[:200]}"
        self.anomalies.append(f"{LEAD}: {text}{body}")

    def run(self, stop: threading.Event) -> None:
        next_export = now() + 20
        next_upload = now() + 10
        turn = 0
        while not stop.is_set():
            try:
                if self.upload_now.is_set():
                    self.upload_now.clear()
                    self.upload_bundle()
                elif now() >= next_upload:
                    (self.upload_bundle if turn % 2 else self.upload_labels)()
                    turn += 1
                    next_upload = now() + self.args.upload_every
                elif now() >= next_export:
                    self.export_gold()
                    next_export = now() + self.args.export_every
                else:
                    self.adjudicate()
                self.follow_jobs()
            except Exception as exc:
                self.anomaly(f"client error {type(exc).__name__}: {exc}")
            stop.wait(1.0)

    def adjudicate(self) -> None:
        response, _ = self.api.send(
            "adjudication queue", "GET", f"{API}/projects/{SLUG}/adjudication/?limit=20"
        )
        if response is None or response.status_code != 200:
            if response is not None and response.status_code < 500:
                self.anomaly("adjudication queue", response)
            return
        for item in response.json()["results"]:
            number = item["task_number"]
            if number in self.decided or self.not_before.get(number, 0) > now():
                continue
            path = f"{API}/projects/{SLUG}/adjudication/{number}/"
            screen, _ = self.api.send("adjudication", "GET", path)
            if screen is None or screen.status_code == 409:  # an undo window still open
                self.not_before[number] = now() + 10
                continue
            if screen.status_code != 200:
                if screen.status_code < 500:
                    self.anomaly(f"adjudication {number}", screen)
                continue
            data = screen.json()
            rows = [(c["index"], r) for c in data["claims"] for r in c["fields"]]
            rows += [(None, r) for r in data["answer_fields"]]
            decisions = [
                {"claim": claim, "field": row["name"], "value": row["a"]}
                for claim, row in rows
                if row["source"] == "pending"
            ]
            if not decisions:
                self.decided.add(number)
                continue
            body = {
                "version": data["version"],
                "rationale": "Soak: reviewer A read it right.",
                "decisions": decisions,
            }
            saved, ambiguous = self.api.send("adjudication", "POST", path, json=body)
            if saved is not None and (saved.status_code == 200 or ambiguous):
                self.decided.add(number)
                self.counts["adjudicated"] += 1
            elif saved is not None and saved.status_code < 500:
                self.anomaly(f"adjudication {number} decision", saved)
            return  # one decision a turn: the lead has exports and uploads to see to too

    def started(self, response, what: str) -> None:
        if response is not None and response.status_code == 202:
            job = response.json()
            self.jobs[job["id"]] = job
            self.counts[f"{what} started"] += 1
        elif response is not None and response.status_code == 200:
            self.counts[f"{what} streamed (no job)"] += 1
            self.counts["gold rows streamed"] += response.content.count(b"\n")
        elif response is None or response.status_code >= 500:
            self.counts[f"{what} given up"] += 1
        else:
            self.anomaly(what, response)

    def export_gold(self) -> None:
        response, _ = self.api.send("gold export", "GET", f"{API}/projects/{SLUG}/gold.jsonl")
        self.started(response, "gold export")

    def upload_bundle(self) -> None:
        n = next(self.uploads)
        if not self.bundle:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "upload.jsonl"
                write_bundle(path, self.args.upload_answers)
                self.bundle = path.read_bytes()
        slug = f"upload-{os.getpid()}-{n}"
        response, ambiguous = self.api.send(
            "upload",
            "POST",
            f"{API}/projects/",
            data={"slug": slug, "name": f"Upload {n}"},
            files={"file": (f"{slug}.jsonl", self.bundle, "application/x-ndjson")},
        )
        if ambiguous and response is not None and response.status_code == 400:
            self.counts["bundle upload: an earlier attempt took the slug"] += 1
            return
        self.started(response, "bundle upload")

    def upload_labels(self) -> None:
        response, _ = self.api.send(
            "upload",
            "POST",
            f"{API}/projects/{SIDE}/labels/",
            files={"file": ("labels.jsonl", self.labels, "application/x-ndjson")},
        )
        self.started(response, "label upload")

    def follow_jobs(self) -> None:
        for pk, job in list(self.jobs.items()):
            if job["status"] in ("succeeded", "failed"):
                continue
            response, _ = self.api.send("job", "GET", f"{API}/jobs/{pk}/", patience=5)
            if response is None or response.status_code != 200:
                continue
            job = self.jobs[pk] = response.json()
            if job["status"] == "succeeded" and job["download_url"]:
                download, _ = self.api.send("download", "GET", job["download_url"], patience=30)
                if download is not None and download.status_code == 200:
                    self.counts["exports downloaded"] += 1
                    rows = download.content.count(b"\n")
                    if rows != job["result"].get("rows"):
                        self.anomaly(f"export {pk}: {rows} lines, result says {job['result']}")


# --- a phase --------------------------------------------------------------------------------


@dataclass
class PhaseResult:
    backend: str
    seconds: float
    faults: list[Fault]
    killed_jobs: list[tuple[str, int]]  # (job id, attempt) running at a kill
    worker_exits: list[tuple[float, int]]
    worker_starts: int
    jobs_open_after_grace: int
    grace_seconds: float


def run_phase(backend, args, url, people, run_dir, record, reviewers, lead_api, lead, servers):
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "CLAIMDESK_VAR_DIR": str(run_dir / "var"),
        "CLAIMDESK_TASKS": "database" if backend == "db" else "rq",
        "DEBUG": "false",
        "SECRET_KEY": "soak-" + "x" * 50,
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "PYTHONUNBUFFERED": "1",
        # Every gold export a job; undo windows that close within the soak, for adjudication;
        # a lost worker noticed within the soak.
        "CLAIMDESK_GOLD_STREAM_MAX_ROWS": "5",
        "CLAIMDESK_REOPEN_MINUTES": str(args.reopen_minutes),
        "CLAIMDESK_JOB_STALE_SECONDS": str(args.stale_seconds),
        "CLAIMDESK_LOGIN_FAILURE_LIMIT": "1000",
        "CLAIMDESK_TOKEN_FAILURE_LIMIT": "1000",
    }
    processes = Processes(run_dir, env, record, args.restart_delay, backend, args.keep_alive)
    if backend == "rq":
        processes.start_redis()
        env["REDIS_URL"] = f"redis://127.0.0.1:{processes.redis_port}/0"
    processes.start_servers()
    servers.urls = [f"http://127.0.0.1:{port}" for port in processes.ports]
    processes.start_worker()
    processes.supervise()
    seconds = args.minutes * 60 / (2 if args.backend == "both" else 1)
    stop = threading.Event()
    threads = [threading.Thread(target=r.run, args=(stop,)) for r in reviewers]
    threads.append(threading.Thread(target=lead.run, args=(stop,)))
    start = now()
    record.note(f"phase {backend}: servers on {processes.ports}, {len(reviewers)} reviewers")
    for thread in threads:
        thread.start()
    kinds = ["worker kill", "connections terminated"] + (
        ["redis restart"] if backend == "rq" else []
    )
    faults = max(len(kinds), round(seconds / args.fault_every))
    schedule = [start + seconds * (i + 1) / (faults + 1) for i in range(faults)]
    killed: list[tuple[str, int]] = []
    phase_faults: list[Fault] = []
    for i, at in enumerate(schedule):
        time.sleep(max(0.0, at - now()))
        kind = kinds[i % len(kinds)]
        if kind == "worker kill":
            lead.upload_now.set()  # an import to kill the worker in the middle of
            deadline = now() + 30
            running = running_jobs(url)
            while not running and now() < deadline:
                time.sleep(0.2)
                running = running_jobs(url)
            began = now()
            processes.kill_worker()
            fault = Fault(kind, began, now(), f"{len(running)} job(s) running")
            killed += [job for job in running if job not in killed]
        elif kind == "connections terminated":
            began = now()
            ended = terminate_connections(url)
            fault = Fault(kind, began, now(), f"{ended} connections")
        else:
            began = now()
            processes.stop_redis()
            lead.upload_now.set()  # an upload while Redis is down
            time.sleep(args.redis_down)
            processes.start_redis()
            fault = Fault(kind, began, now(), f"down {now() - began:.1f} s")
        record.fault(fault)
        phase_faults.append(fault)
        record.note(f"fault: {fault.kind} ({fault.detail})")
    time.sleep(max(0.0, start + seconds - now()))
    stop.set()
    for thread in threads:
        thread.join()
    # The jobs started get the time a resumption needs before the phase ends.
    grace_start = now()
    grace = 2 * args.stale_seconds + 30
    while now() - grace_start < grace:
        lead.follow_jobs()
        if open_jobs(url) == 0:
            break
        time.sleep(1)
    lead.follow_jobs()
    left = open_jobs(url)
    result = PhaseResult(
        backend=backend,
        seconds=now() - start,
        faults=phase_faults,
        killed_jobs=killed,
        worker_exits=list(processes.exits),
        worker_starts=processes.starts,
        jobs_open_after_grace=left,
        grace_seconds=now() - grace_start,
    )
    processes.stop()
    return result


# --- the checks -------------------------------------------------------------------------------


INVARIANTS = {
    "no answer over its overlap": """
        SELECT s.answer_id, count(*), p.overlap FROM annotate_assignment s
        JOIN annotate_project p ON p.id = s.project_id
        WHERE s.status <> 'released'
        GROUP BY s.answer_id, p.overlap HAVING count(*) > p.overlap""",
    "no reviewer twice on an answer": """
        SELECT answer_id, reviewer_id, count(*) FROM annotate_assignment
        GROUP BY answer_id, reviewer_id HAVING count(*) > 1""",
    "no claim labelled twice by one assignment": """
        SELECT assignment_id, claim_id, count(*) FROM annotate_claimlabel
        GROUP BY assignment_id, claim_id HAVING count(*) > 1""",
    "every submitted task complete (each claim labelled)": """
        SELECT s.id, c.id FROM annotate_assignment s
        JOIN annotate_claim c ON c.answer_id = s.answer_id
        LEFT JOIN annotate_claimlabel l ON l.assignment_id = s.id AND l.claim_id = c.id
        WHERE s.status = 'submitted' AND (l.id IS NULL OR l.support = '')""",
    "every submitted task complete (the answer labelled)": """
        SELECT s.id FROM annotate_assignment s JOIN annotate_project p ON p.id = s.project_id
        WHERE s.status = 'submitted' AND p.slug = %(slug)s AND s.relevance IS NULL""",
    "one revision per submission": """
        SELECT s.id, s.revision, count(r.id) FROM annotate_assignment s
        JOIN annotate_project p ON p.id = s.project_id
        LEFT JOIN annotate_labelrevision r ON r.assignment_id = s.id
        WHERE p.slug = %(slug)s AND s.revision > 0
        GROUP BY s.id, s.revision HAVING count(r.id) <> s.revision""",
    "every job ended (none queued or running)": """
        SELECT id, kind, status, attempt FROM jobs_job WHERE status IN ('queued', 'running')""",
}

STORED = """
    SELECT u.username, a.task_number, s.status, s.relevance, c.ordinal, l.support
    FROM annotate_assignment s
    JOIN auth_user u ON u.id = s.reviewer_id
    JOIN annotate_answer a ON a.id = s.answer_id
    JOIN annotate_project p ON p.id = s.project_id
    LEFT JOIN annotate_claimlabel l ON l.assignment_id = s.id
    LEFT JOIN annotate_claim c ON c.id = l.claim_id
    WHERE p.slug = %(slug)s"""


def check(url: str, reviewers: list[Reviewer]) -> dict[str, list]:
    """Each invariant's violations (empty: it holds)."""
    found: dict[str, list] = {}
    with pg_connect(url) as conn:
        for name, sql in INVARIANTS.items():
            found[name] = [list(map(str, row)) for row in conn.execute(sql, {"slug": SLUG})]
        stored: dict[tuple[str, int], dict] = {}
        for username, number, status, relevance, ordinal, support in conn.execute(
            STORED, {"slug": SLUG}
        ):
            row = stored.setdefault(
                (username, number), {"status": status, "relevance": relevance, "claims": {}}
            )
            if ordinal is not None:
                row["claims"][ordinal] = support
    lost = []
    for r in reviewers:
        expected = [(n, "submitted", labels) for n, labels in r.submitted.items()]
        expected += [(n, "in_progress", labels) for n, labels in r.drafts.items()]
        expected += [(n, "released", None) for n in r.released]
        for number, status, labels in expected:
            if number in r.uncertain:
                continue
            row = stored.get((r.username, number))
            if row is None:
                lost.append(f"{r.username} task {number}: no assignment (believed {status})")
                continue
            if row["status"] != status:
                lost.append(f"{r.username} task {number}: {row['status']}, believed {status}")
                continue
            if labels is None:
                continue
            for index, support in labels.claims.items():
                if row["claims"].get(index) != support:
                    lost.append(
                        f"{r.username} task {number} claim {index}: stored "
                        f"{row['claims'].get(index)!r}, answered {support!r}"
                    )
            if labels.relevance is not None and row["relevance"] != labels.relevance:
                lost.append(
                    f"{r.username} task {number} relevance: stored {row['relevance']}, "
                    f"answered {labels.relevance}"
                )
    found = {"no label lost (each 2xx-saved label stored, once, as answered)": lost, **found}
    return found


def job_figures(url: str, phases: list[PhaseResult]) -> dict:
    with pg_connect(url) as conn:
        rows = conn.execute("SELECT id, kind, status, attempt, failure FROM jobs_job").fetchall()
    jobs = {
        str(pk): (kind, status, attempt, failure) for pk, kind, status, attempt, failure in rows
    }
    killed = [(pk, attempt) for p in phases for pk, attempt in p.killed_jobs]
    # Resumed: a later run took the job up (its attempt number grew), with nobody pressing
    # Retry (the soak never does). How each ended: succeeded, or failed (its runs used up, or
    # a later fault); and of those never taken up, whether they still read running.
    resumed = [pk for pk, attempt in killed if jobs[pk][2] > attempt]
    fates = Counter(
        f"{'resumed, then' if pk in resumed else 'not resumed,'} {jobs[pk][1]}" for pk, _ in killed
    )
    status = Counter(s for _, s, _, _ in jobs.values())
    return {
        "started": len(jobs),
        "by kind": dict(Counter(k for k, _, _, _ in jobs.values())),
        "succeeded without a person": status["succeeded"],
        "failed": status["failed"],
        "left queued": status["queued"],
        "left running": status["running"],
        "running at a kill": len(killed),
        "resumed after a kill without a person": len(resumed),
        "killed jobs' ends": dict(fates),
        "failures": sorted({f[:120] for _, s, _, f in jobs.values() if s == "failed"}),
    }


# --- the report -------------------------------------------------------------------------------


def report(record: Record, phases, jobs, violations, reviewers, lead, args) -> dict:
    by_kind: dict[str, Counter] = {}
    five: Counter[tuple] = Counter()
    four: Counter[tuple] = Counter()
    for call in record.calls:
        row = by_kind.setdefault(call.kind, Counter())
        row["requests"] += 1
        fault = record.in_window(call)
        if call.status is None:
            row["no answer"] += 1
            five[("no answer", call.error, call.kind, fault or "outside")] += 1
        elif call.status >= 500:
            row["5xx"] += 1
            five[(str(call.status), "", call.kind, fault or "outside")] += 1
        elif call.status >= 400:
            row["4xx"] += 1
            four[(call.status, call.kind)] += 1
        else:
            row["2xx/3xx"] += 1
    out = []
    line = f"{'endpoint kind':<20} {'requests':>9} {'2xx/3xx':>8} {'4xx':>6} {'5xx':>6} {'none':>6}"
    out += [line, "-" * len(line)]
    total = Counter()
    for kind in sorted(by_kind):
        row = by_kind[kind]
        total.update(row)
        out.append(
            f"{kind:<20} {row['requests']:>9} {row['2xx/3xx']:>8} {row['4xx']:>6} "
            f"{row['5xx']:>6} {row['no answer']:>6}"
        )
    out.append(
        f"{'all':<20} {total['requests']:>9} {total['2xx/3xx']:>8} {total['4xx']:>6} "
        f"{total['5xx']:>6} {total['no answer']:>6}"
    )
    labelling = sum(p.seconds - p.grace_seconds for p in phases)
    out.append(
        f"({total['requests'] / labelling:.0f} requests/s over {labelling:.0f} s of labelling; "
        f"each phase then waited for its jobs)"
    )
    out.append(
        "4xx: "
        + (
            ", ".join(f"{n} x {status} on {kind}" for (status, kind), n in sorted(four.items()))
            or "none"
        )
        + " (409 on adjudication: an undo window still open; 409/400 after a retried "
        "write: its first attempt went through)"
    )
    out.append("")
    out.append(f"5xx and unanswered requests by cause (window: {args.window:.0f} s after a fault)")
    if not five:
        out.append("  none")
    for (status, error, kind, window), n in sorted(five.items()):
        where = "OUTSIDE fault windows" if window == "outside" else f"in a {window} window"
        out.append(f"  {n:>5} x {status} {error} on {kind}, {where}")
    outside = [
        c for c in record.calls if (c.status is None or c.status >= 500) and not record.in_window(c)
    ]
    for c in outside[:20]:
        out.append(
            f"  outside: {c.start:7.1f}-{c.end:.1f} s on :{c.server} {c.kind} "
            f"{c.status or 'no answer'} {c.error}"
        )
    outside_5xx = sum(n for (s, _, _, w), n in five.items() if w == "outside" and s != "no answer")
    inside_not_503 = sum(
        n for (s, _, _, w), n in five.items() if w != "outside" and s not in ("503", "no answer")
    )
    outside_none = sum(n for (s, _, _, w), n in five.items() if w == "outside" and s == "no answer")
    out.append(
        f"  target: 0 outside the windows (here {outside_5xx} x 5xx, {outside_none} unanswered), "
        f"only 503 inside them (here {inside_not_503} other)"
    )
    out.append("")
    out.append("faults")
    for p in phases:
        for f in p.faults:
            out.append(f"  {p.backend:>2} {f.start:7.1f} s  {f.kind} ({f.detail})")
        exits = ", ".join(f"{t:.0f} s: status {code}" for t, code in p.worker_exits) or "none"
        out.append(
            f"  {p.backend:>2} worker started {p.worker_starts} times; exits of its own "
            f"(restarted by the supervisor): {exits}"
        )
        out.append(
            f"  {p.backend:>2} after the phase, waited {p.grace_seconds:.0f} s for jobs: "
            f"{p.jobs_open_after_grace} still queued or running"
        )
    out.append("")
    kinds = ", ".join(f"{k} {v}" for k, v in jobs["by kind"].items())
    out.append(
        f"jobs: {jobs['started']} started ({kinds}); "
        f"{jobs['succeeded without a person']} completed without a person; "
        f"{jobs['failed']} failed; {jobs['left queued']} left queued, "
        f"{jobs['left running']} left running"
    )
    out.append(
        "jobs resumed without a person after a kill: "
        f"{jobs['resumed after a kill without a person']} "
        f"of {jobs['running at a kill']} running at a kill"
        + "".join(f"; {n} {end}" for end, n in sorted(jobs["killed jobs' ends"].items()))
    )
    for failure in jobs["failures"]:
        out.append(f"  failed: {failure}")
    out.append("")
    work = Counter()
    for r in reviewers:
        work.update(r.counts)
    out.append(
        "reviewers: "
        + ", ".join(f"{k} {v}" for k, v in sorted(work.items()))
        + "; tasks of uncertain fate (left out of the checks) "
        + str(sum(len(r.uncertain) for r in reviewers))
    )
    out.append("lead: " + ", ".join(f"{k} {v}" for k, v in sorted(lead.counts.items())))
    anomalies = [a for r in reviewers for a in r.anomalies] + lead.anomalies
    out.append(f"client-side anomalies (unexpected 4xx, client errors): {len(anomalies)}")
    out += [f"  {a}" for a in anomalies[:15]]
    out.append("")
    out.append("invariants (SQL against the database)")
    for name, rows in violations.items():
        verdict = "ok" if not rows else f"VIOLATED ({len(rows)}): {rows[:3]}"
        out.append(f"  {name}: {verdict}")
    print("\n".join(out))
    return {
        "requests": total["requests"],
        "by_kind": {k: dict(v) for k, v in by_kind.items()},
        "five_xx": [
            {"status": s, "error": e, "kind": k, "window": w, "count": n}
            for (s, e, k, w), n in five.items()
        ],
        "outside_5xx": outside_5xx,
        "outside_unanswered": outside_none,
        "inside_not_503": inside_not_503,
        "faults": [
            {"backend": p.backend, "kind": f.kind, "start": f.start, "detail": f.detail}
            for p in phases
            for f in p.faults
        ],
        "worker_exits": [code for p in phases for _, code in p.worker_exits],
        "jobs": jobs,
        "violations": violations,
        "reviewer_counts": dict(work),
        "lead_counts": dict(lead.counts),
        "anomalies": anomalies,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="of labelling, all phases")
    parser.add_argument("--reviewers", type=int, default=40)
    parser.add_argument("--backend", choices=("db", "rq", "both"), default="both")
    parser.add_argument("--fault-every", type=float, default=45.0, help="seconds between faults")
    parser.add_argument("--window", type=float, default=10.0, help="seconds after a fault")
    parser.add_argument("--think", type=float, default=0.3, help="a reviewer's mean pause (s)")
    parser.add_argument("--answers", type=int, default=0, help="default: enough for the run")
    parser.add_argument("--upload-answers", type=int, default=1000)
    parser.add_argument("--side-answers", type=int, default=200)
    parser.add_argument("--upload-every", type=float, default=40.0)
    parser.add_argument("--export-every", type=float, default=30.0)
    parser.add_argument("--stale-seconds", type=int, default=15)
    parser.add_argument("--reopen-minutes", type=float, default=0.5)
    parser.add_argument("--restart-delay", type=float, default=3.0)
    parser.add_argument("--redis-down", type=float, default=5.0)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--logs", type=Path, help="keep the servers', worker's and Redis' logs in this folder"
    )
    parser.add_argument(
        "--keep-alive",
        type=float,
        default=75.0,
        help="gunicorn's --keep-alive: seconds an idle connection is kept. Above the reviewers' "
        "pauses, as a balancer's upstream idle timeout is set below its servers'; at "
        "gunicorn's own 2 s, a server closes a connection as a reviewer reuses it and the "
        "request gets no answer (10 of 42,321 in one run)",
    )
    args = parser.parse_args(argv)
    if args.reviewers < 1 or args.minutes <= 0:
        parser.error("--reviewers and --minutes must be positive")
    url = os.environ["BENCH_DATABASE_URL"]
    answers = args.answers or max(200, int(args.reviewers * args.minutes * 8))
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    people = build(args.reviewers, answers, args.side_answers)
    record = Record(args.window)
    servers = Servers()
    stop_all = threading.Event()  # never set: each phase stops its threads itself
    rng = random.Random(args.seed)
    reviewers = [
        Reviewer(
            name, Api(token, servers, record, stop_all), random.Random(rng.random()), args.think
        )
        for name, token in people.reviewers.items()
    ]
    lead_api = Api(people.lead, servers, record, stop_all)
    lead = Lead(lead_api, record, args, random.Random(rng.random()))
    phases = []
    with (
        contextlib.nullcontext(str(args.logs))
        if args.logs
        else tempfile.TemporaryDirectory(prefix="soak-")
    ) as tmp:
        run_dir = Path(tmp)
        (run_dir / "var").mkdir(parents=True)
        backends = ["db", "rq"] if args.backend == "both" else [args.backend]
        try:
            for backend in backends:
                phases.append(
                    run_phase(
                        backend,
                        args,
                        url,
                        people,
                        run_dir,
                        record,
                        reviewers,
                        lead_api,
                        lead,
                        servers,
                    )
                )
        finally:
            logs = {p.name: p.read_text(errors="replace")[-3000:] for p in run_dir.glob("*.log")}
        violations = check(url, reviewers)
        jobs = job_figures(url, phases)
    print(
        f"\nsoak: {args.reviewers} reviewers and a lead for {args.minutes:g} min ({args.backend}); "
        f"{answers} answers at overlap 2; load average {load_before} before, "
        + " ".join(f"{x:.2f}" for x in os.getloadavg())
        + " after\n"
    )
    figures = report(record, phases, jobs, violations, reviewers, lead, args)
    for note in record.notes:
        print(f"  {note}")
    if args.json:
        figures["logs"] = logs
        args.json.write_text(json.dumps(figures, indent=1, default=str))
    return 1 if any(violations.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
