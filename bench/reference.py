"""The reference benchmark: a real server over real HTTP, on a database that also holds a big
project.

Usage: python bench/reference.py   (BENCH_DATABASE_URL overrides the default
postgres://postgres@127.0.0.1:5432/claimdesk_bench_http, which is dropped and re-created;
BENCH_TRAFFIC_SECONDS, default 120, is how long the labelling traffic runs before the
workers' memory is read; BENCH_PORT, default 8765)

What it builds, in one PostgreSQL database: the demo project, a 1,000-answer project
("mid": 10,000 claims, every answer labelled by two reviewers) and a 10,000-answer project
("big": 100,000 claims, half of the answers labelled by two reviewers, the other half open
for the traffic, plus one answer of 10 claims and one of 60 claims held by the measuring
reviewer). Then gunicorn (2 workers x 4 threads, DEBUG off, as issue #12 sets it; the
Dockerfile's default is 3 sync workers) serves it, with a background worker beside it as
docker-compose runs one. Once those processes are idle (they import Django on the same
cores), the script logs in like a browser (CSRF cookie, form post, htmx headers) and
measures: a reviewer's labelling, then a lead's pages (statistics, set-up, gold,
boundaries, the adjudication queue), ten decisions in turn, the queue and the gold page
again, then the gold export, a label import and the bundle import. Query counts come from
the X-Query-Count header that CLAIMDESK_QUERY_COUNT_HEADER adds to every response (only
here).

It prints one table, the machine's speed (a fixed Python loop, timed before and after) and
the load average; it asserts nothing about time (benchmarks measure; tests assert
behaviour).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/claimdesk_bench_http"
)
from bench.agreement_gold import (  # noqa: E402
    command_in_child,
    export_in_child,
    label_everything,
)
from bench.common import PENDING, ROOT, setup_bench_database, start_worker  # noqa: E402
from bench.import_bundle import write_bundle  # noqa: E402

PORT = int(os.environ.get("BENCH_PORT", "8765"))
BASE = f"http://127.0.0.1:{PORT}"
PASSWORD = "bench-password-1"
TRAFFIC_SECONDS = float(os.environ.get("BENCH_TRAFFIC_SECONDS", "120"))
SAMPLES = int(os.environ.get("BENCH_SAMPLES", "100"))
# The sizes; smaller ones make a quick trial run of the script itself.
BIG_ANSWERS = int(os.environ.get("BENCH_BIG_ANSWERS", "10000"))
MID_ANSWERS = int(os.environ.get("BENCH_MID_ANSWERS", "1000"))
# Answers of the big project nobody holds at the end, given two label sets by a label file.
LABEL_ANSWERS = min(2000, BIG_ANSWERS // 5)
FIVE_XX: list[tuple[str, int]] = []


# --- the data ---------------------------------------------------------------------------------


def build() -> dict:
    """Everything the measurements need, in the bench database. Returns the import figures."""
    setup_bench_database()
    from django.core.management import call_command
    from django.db import connection, transaction

    from annotate.imports.bundle_import import import_bundle
    from annotate.members.services import add_member
    from annotate.models import Answer, Assignment, Project
    from annotate.projects.opening import open_labelling

    call_command("load_demo", stdout=open(os.devnull, "w"))  # noqa: SIM115
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for slug, answers in (("mid", MID_ANSWERS), ("big", BIG_ANSWERS)):
            path = Path(tmp) / f"{slug}.jsonl"
            lines = write_bundle(path, answers)
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "manage.py", "import_bundle", str(path), "--project", slug],
                cwd=ROOT,
                env=os.environ.copy(),
                capture_output=True,
                text=True,
            )
            elapsed = time.perf_counter() - start
            if done.returncode:
                sys.exit(done.stderr)
            if slug == "big":
                figures["import"] = (lines, elapsed, path.stat().st_size)
        extra = Path(tmp) / "extra.jsonl"
        extra.write_text("\n".join(_answers_with_claims(("page-10", 10), ("page-60", 60))))
        with extra.open("rb") as stream:
            import_bundle(lines=stream, project_slug="big")
    from django.contrib.auth import get_user_model

    User = get_user_model()
    for slug in ("mid", "big"):
        project = Project.objects.get(slug=slug)
        add_member(project=project, username="bench-lead", role="lead", password=PASSWORD)
        labellers = [
            add_member(project=project, username=f"{slug}-{n}", role="reviewer").user
            for n in ("a", "b")
        ]
        for i in range(9):
            add_member(project=project, username=f"r{i}", role="reviewer", password=PASSWORD)
        project = open_labelling(project=project)
        with transaction.atomic():
            half = None if slug == "mid" else BIG_ANSWERS // 2
            label_everything(project, labellers, answers_limit=half)
        Answer.objects.filter(project=project, assignments__isnull=False).update(full=True)
    big = Project.objects.get(slug="big")
    measurer = User.objects.get(username="r0")
    for answer_id in ("page-10/baseline", "page-60/baseline"):
        answer = Answer.objects.get(project=big, answer_id=answer_id)
        Assignment.objects.create(project=big, answer=answer, reviewer=measurer)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
        # The build's writes are flushed now, not by a checkpoint during the measurements.
        cursor.execute("CHECKPOINT")
    return figures


def write_label_file(path: Path, slug: str, reviewers: tuple[str, ...], answers: int) -> int:
    """A label file (SPEC.md's format) for `answers` of the project's answers that nobody
    holds, one complete label set per reviewer: each claim not found in the passages, each
    resolvable citation judged. Returns the number of claims labelled per reviewer."""
    import json

    from annotate.models import Answer, Claim

    free = list(
        Answer.objects.filter(project__slug=slug, assignments__isnull=True)
        .order_by("pk")
        .values_list("pk", "answer_id")[:answers]
    )
    cited: dict[int, dict[int, dict[str, str]]] = {}
    rows = Claim.objects.filter(answer_id__in=[pk for pk, _ in free]).values_list(
        "answer_id", "ordinal", "citations__cited_id", "citations__passage_id"
    )
    for answer_pk, ordinal, cited_id, passage_pk in rows:
        verdicts = cited.setdefault(answer_pk, {}).setdefault(ordinal, {})
        if passage_pk is not None:
            verdicts[cited_id] = "does_not_support"
    with path.open("w") as out:
        for pk, answer_id in free:
            claims = [
                {"index": i, "support": "insufficient_evidence", "severity": "minor"}
                | {"citations": verdicts}
                for i, verdicts in sorted(cited.get(pk, {}).items())
            ]
            for reviewer in reviewers:
                line = {"answer_id": answer_id, "reviewer": reviewer, "relevance": 1}
                out.write(json.dumps({**line, "claims": claims}) + "\n")
    return sum(len(c) for c in cited.values())


def _answers_with_claims(*specs: tuple[str, int]) -> list[str]:
    import json

    lines = [
        json.dumps(
            {
                "type": "case",
                "case_id": case,
                "question": f"Question {case}?",
                "answerable": True,
                "adversarial": False,
            }
        )
        for case, _ in specs
    ]
    for case, claims in specs:
        sentences = [
            f"The course states fact {n} of {case} [doc-{n % 50}:p1]." for n in range(claims)
        ]
        text, spans, pos = " ".join(sentences), [], 0
        for n, sentence in enumerate(sentences):
            spans.append(
                {
                    "text": sentence,
                    "start": pos,
                    "end": pos + len(sentence),
                    "citations": [f"doc-{n % 50}:p1"],
                }
            )
            pos += len(sentence) + 1
        lines.append(
            json.dumps(
                {
                    "type": "answer",
                    "answer_id": f"{case}/baseline",
                    "case_id": case,
                    "variant": "baseline",
                    "text": text,
                    "claims": spans,
                    "retrieved": [
                        {"passage_id": f"doc-{r}:p1", "rank": r + 1, "in_prompt": r < 5}
                        for r in range(10)
                    ],
                }
            )
        )
    return lines


# --- the server -------------------------------------------------------------------------------


SERVER_ENV = {
    "DEBUG": "false",
    "SECRET_KEY": "bench-" + "x" * 50,
    "ALLOWED_HOSTS": "127.0.0.1,localhost",
    "CLAIMDESK_QUERY_COUNT_HEADER": "1",
    "CLAIMDESK_LOGIN_FAILURE_LIMIT": "1000",
}


def start_server() -> subprocess.Popen:
    env = {**os.environ, **SERVER_ENV}
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi",
            "--bind",
            f"127.0.0.1:{PORT}",
            "--workers",
            "2",
            "--threads",
            "4",
            "--timeout",
            "300",
        ],
        cwd=ROOT,
        env=env,
    )
    import requests

    for _ in range(100):
        try:
            requests.get(f"{BASE}/login/", timeout=30)  # a worker's first request is slow
            return server
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.2)
    server.kill()
    sys.exit("gunicorn did not start")


def worker_pids(server: subprocess.Popen) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True)
    return [int(pid) for pid in out.stdout.split()]


def restart_workers(server: subprocess.Popen) -> None:
    """Have gunicorn replace its workers (SIGHUP, as a deploy does), wait for the new ones
    and send each a first request: processes that hold nothing in memory yet."""
    import requests

    old = set(worker_pids(server))
    server.send_signal(signal.SIGHUP)
    for _ in range(300):
        pids = set(worker_pids(server))
        if len(pids) == 2 and not pids & old:
            break
        time.sleep(0.1)
    else:
        sys.exit("gunicorn did not replace its workers")
    for _ in range(4):
        requests.get(f"{BASE}/login/", timeout=30)


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user and system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def settle(pids: list[int], *, quiet_ms: float = 20.0, timeout: float = 60.0) -> float:
    """Wait until the server's processes are idle: no more than `quiet_ms` of CPU among them
    over half a second. gunicorn answers as soon as one worker is up, while the other and the
    task worker are still importing Django on the same two cores; measured then, the first
    figures (10-claim page, draft save) came out 1.5-2x what a quiet server gives. Returns
    the seconds waited."""

    def cpu_ms() -> float:
        return sum(cpu_seconds(pid) for pid in pids) * 1000

    start = time.perf_counter()
    before = cpu_ms()
    while time.perf_counter() - start < timeout:
        time.sleep(0.5)
        now = cpu_ms()
        if now - before <= quiet_ms:
            break
        before = now
    return time.perf_counter() - start


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# --- a browser's session ----------------------------------------------------------------------


class Browser:
    def __init__(self, username: str):
        import requests

        self.http = requests.Session()
        self.http.get(f"{BASE}/login/")
        response = self.http.post(
            f"{BASE}/login/",
            data={
                "username": username,
                "password": PASSWORD,
                "csrfmiddlewaretoken": self.http.cookies["csrftoken"],
            },
            headers={"Referer": f"{BASE}/login/"},
            allow_redirects=False,
        )
        if response.status_code != 302:
            sys.exit(f"login of {username} failed: {response.status_code}")

    def _check(self, response, url):
        if response.status_code >= 500:
            FIVE_XX.append((url, response.status_code))
        return response

    def get(self, path: str, **headers):
        url = BASE + path
        return self._check(self.http.get(url, headers=headers), url)

    def post(self, path: str, data: dict | None = None, *, htmx: bool = False, headers=None):
        url = BASE + path
        headers = {"X-CSRFToken": self.http.cookies["csrftoken"], "Referer": url, **(headers or {})}
        if htmx:
            headers.update({"HX-Request": "true", "HX-Current-URL": url})
        return self._check(
            self.http.post(url, data=data or {}, headers=headers, allow_redirects=False), url
        )


def timed(call, n: int = SAMPLES, *, warm: int = 0) -> tuple[list[float], object]:
    """`n` timed calls after `warm` untimed ones."""
    for _ in range(warm):
        call()
    times, last = [], None
    for _ in range(n):
        start = time.perf_counter()
        last = call()
        times.append((time.perf_counter() - start) * 1000)
    return times, last


def p(times: list[float], q: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --- the measurements -------------------------------------------------------------------------


def task_numbers(project_slug: str, username: str) -> dict[str, int]:
    from annotate.models import Assignment

    return {
        a.answer.answer_id: a.answer.task_number
        for a in Assignment.objects.filter(
            project__slug=project_slug, reviewer__username=username
        ).select_related("answer")
    }


def claim_data(support: str = "supported") -> dict:
    return {"support": support, "severity": "none" if support == "supported" else "minor"}


def cited(number: int) -> list[list[str]]:
    """Each claim's cited passage ids, in claim order (read from the database, as the page
    shows them)."""
    from annotate.models import Claim

    claims = (
        Claim.objects.filter(answer__project__slug="big", answer__task_number=number)
        .order_by("ordinal")
        .prefetch_related("citations")
    )
    return [[c.cited_id for c in claim.citations.all()] for claim in claims]


QUEUE_AND_GOLD = ("/p/big/adjudicate/", "/p/big/gold/")


def adjudicate_in_turn(lead: Browser, queue_page: str, *, decisions: int) -> list[float]:
    """Decide `decisions` items one after the other, as a lead does: open the screen, choose
    reviewer A on every field, save, and follow the redirect to the next item. Returns each
    save's time in ms (the save and the choice of the next item)."""
    found = re.search(r"/p/big/adjudicate/(\d+)/", queue_page)
    url = found.group(0) if found else None
    times = []
    for _ in range(decisions):
        if url is None or "/adjudicate/" not in url or url.endswith("/adjudicate/"):
            break
        screen = lead.get(url).text
        data = {name: "a" for name in set(re.findall(r'name="(f-[^"]+)"', screen))}
        data["version"] = re.search(r'name="version" value="(\d+)"', screen).group(1)
        data["rationale"] = "Reviewer A read the passage right."
        start = time.perf_counter()
        saved = lead.post(url, data)
        times.append((time.perf_counter() - start) * 1000)
        url = saved.headers.get("Location")
    return times


def label_task(browser: Browser, number: int) -> None:
    """Complete labels, as a reviewer drafts them: not found in the passages (no quote
    needed), each citation judged, relevance rated."""
    for index, ids in enumerate(cited(number)):
        data = claim_data("insufficient_evidence")
        data.update({f"citation:{pid}": "does_not_support" for pid in ids})
        browser.post(f"/p/big/tasks/{number}/claims/{index}/", data, htmx=True)
    browser.post(f"/p/big/tasks/{number}/answer/", {"relevance": "1"}, htmx=True)


def take(browser: Browser) -> int | None:
    response = browser.post("/p/big/next/")
    match = re.search(r"/tasks/(\d+)/", response.headers.get("Location", ""))
    return int(match.group(1)) if match else None


def saves_per_second(
    clients: list[Browser], pids: list[int], *, kept_alive: bool, seconds: float = 10.0
) -> tuple[float, int, list[float]]:
    """Draft saves from several reviewers at once, each on their own task, back to back.
    Returns saves/s, the errors, and each gunicorn worker's share of the CPU they used.

    A reviewer saves seconds apart, so each save arrives on a new connection (gunicorn
    closes one idle for 2 s) and the kernel hands it to whichever worker accepts first.
    Saves sent back to back on kept-alive connections instead stay on the worker that
    accepted each connection, and gthread workers often accept them all in one process
    (one core, under the GIL): measured both ways, that is 110 against 190 saves/s with
    4 clients. Both figures are printed; `kept_alive=False` closes the connection after
    each save, as the reviewer's pace does."""
    numbers = [take(b) for b in clients]
    counts = [0] * len(clients)
    errors = []
    close = {} if kept_alive else {"Connection": "close"}
    before = [cpu_seconds(pid) for pid in pids]
    stop = time.perf_counter() + seconds

    def loop(i: int) -> None:
        browser, number = clients[i], numbers[i]
        support = ("supported", "insufficient_evidence")
        while time.perf_counter() < stop:
            r = browser.post(
                f"/p/big/tasks/{number}/claims/0/",
                claim_data(support[counts[i] % 2]),
                htmx=True,
                headers=close,
            )
            if r.status_code == 200:
                counts[i] += 1
            else:
                errors.append(r.status_code)

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(len(clients))]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rate = sum(counts) / (time.perf_counter() - start)
    used = [cpu_seconds(pid) - b for pid, b in zip(pids, before, strict=True)]
    return rate, len(errors), [u / (sum(used) or 1) for u in used]


def traffic(clients: list[Browser], seconds: float) -> int:
    """Hour-like labelling traffic, compressed: each reviewer takes a task, loads it, drafts
    every claim, submits, and takes the next."""
    stop = time.perf_counter() + seconds
    done = [0]

    def loop(browser: Browser) -> None:
        while time.perf_counter() < stop:
            number = take(browser)
            if number is None:
                return
            browser.get(f"/p/big/tasks/{number}/")
            label_task(browser, number)
            browser.post(f"/p/big/tasks/{number}/submit/")
            done[0] += 1

    threads = [threading.Thread(target=loop, args=(b,)) for b in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done[0]


LOOP = (
    "import time; t = time.perf_counter(); [0 for _ in range(10_000_000)]; "
    "print(time.perf_counter() - t)"
)


def machine_speed() -> str:
    """How fast this machine runs Python now: the same 10-million-step loop, three times, in
    fresh interpreters. The figures of two runs (two machines, or one machine on a busy day:
    these shared machines' speed moves by half from day to day) compare only in its
    proportion."""
    runs = [
        float(subprocess.run([sys.executable, "-c", LOOP], capture_output=True, check=True).stdout)
        for _ in range(3)
    ]
    return f"{min(runs):.2f}-{max(runs):.2f} s"


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    speed_before, load_before = machine_speed(), load_average()
    figures = build()
    lines, import_seconds, import_bytes = figures["import"]
    server = start_server()
    worker = start_worker(SERVER_ENV)
    rows: list[tuple[str, str]] = []
    try:
        measurer = Browser("r0")
        waited = settle([*worker_pids(server), worker.pid])
        numbers = task_numbers("big", "r0")
        for name, claims in (("page-10/baseline", 10), ("page-60/baseline", 60)):
            url = f"/p/big/tasks/{numbers[name]}/"
            times, last = timed(lambda url=url: measurer.get(url), warm=10)
            rows.append(
                (
                    f"labelling page, {claims} claims (big project)",
                    f"p50 {p(times, 0.5):.1f} ms · p95 {p(times, 0.95):.1f} ms · "
                    f"{last.headers.get('X-Query-Count')} queries · "
                    f"{len(last.content):,} bytes ({len(last.content) / 1024:.1f} KiB)",
                )
            )
        number = numbers["page-10/baseline"]
        times, last = timed(
            lambda: measurer.post(f"/p/big/tasks/{number}/claims/0/", claim_data(), htmx=True),
            warm=10,
        )
        rows.append(
            (
                "draft save, 1 client",
                f"p50 {p(times, 0.5):.1f} ms · p95 {p(times, 0.95):.1f} ms · "
                f"{last.headers.get('X-Query-Count')} queries · {len(last.content)} bytes",
            )
        )
        taker = Browser("r1")
        next_times, submit_times = [], []
        for _ in range(min(SAMPLES, 30)):
            start = time.perf_counter()
            number = take(taker)
            next_times.append((time.perf_counter() - start) * 1000)
            label_task(taker, number)
            start = time.perf_counter()
            taker.post(f"/p/big/tasks/{number}/submit/")
            submit_times.append((time.perf_counter() - start) * 1000)
        rows.append(
            (
                "next task (a new one)",
                f"p50 {p(next_times, 0.5):.1f} ms · p95 {p(next_times, 0.95):.1f} ms",
            )
        )
        rows.append(
            ("submit", f"p50 {p(submit_times, 0.5):.1f} ms · p95 {p(submit_times, 0.95):.1f} ms")
        )
        for clients in (4, 8):
            browsers = [Browser(f"r{i + 1}") for i in range(clients)]
            figures = []
            for kept_alive in (False, True):
                rate, errors, shares = saves_per_second(
                    browsers, worker_pids(server), kept_alive=kept_alive
                )
                split = " / ".join(f"{share:.0%}" for share in shares)
                figures.append(f"{rate:.0f} saves/s · {errors} errors · workers' CPU {split}")
            rows.append(
                (
                    f"draft saves, {clients} clients",
                    f"a connection per save: {figures[0]} | kept alive: {figures[1]}",
                )
            )
        clients = [Browser(f"r{i + 1}") for i in range(4)]
        tasks = traffic(clients, TRAFFIC_SECONDS)
        workers = worker_pids(server)
        rows.append(
            (
                f"workers after {TRAFFIC_SECONDS:.0f} s of labelling traffic only ({tasks} tasks)",
                " · ".join(f"pid {pid}: {rss_mb(pid):.0f} MB RSS" for pid in workers),
            )
        )
        lead = Browser("bench-lead")
        for name, url in (
            ("agreement page", "/p/big/agreement/"),
            ("evaluation page", "/p/big/evaluation/"),
        ):
            # The first view computes (evaluation: in the request, kept in that gunicorn
            # worker's memory) or asks the worker and shows the page that waits (agreement);
            # the figure that matters to a lead is how long until the report is on screen.
            start = time.perf_counter()
            first = lead.get(url)
            first_ms = (time.perf_counter() - start) * 1000
            while PENDING in lead.get(url).content:
                time.sleep(0.2)
            ready_s = time.perf_counter() - start
            times, last = timed(lambda url=url: lead.get(url), n=6)
            rows.append(
                (
                    f"{name} (big project)",
                    f"first view {first_ms:.0f} ms ({len(first.content) / 1024:.0f} KB) · "
                    f"report on screen after {ready_s:.1f} s · later views p50 "
                    f"{p(times, 0.5):.0f} ms · max {max(times):.0f} ms · "
                    f"{len(last.content) / 1024:.0f} KB · "
                    f"{last.headers.get('X-Query-Count')} queries",
                )
            )
        for name, url in (
            ("set-up page", "/p/big/setup/"),
            ("gold page", "/p/big/gold/"),
            ("boundary list", "/p/big/claims/"),
            ("adjudication queue", "/p/big/adjudicate/"),
        ):
            # Kept per data version: the first view computes, the later ones read.
            start = time.perf_counter()
            first = lead.get(url)
            first_ms = (time.perf_counter() - start) * 1000
            times, last = timed(lambda url=url: lead.get(url), n=6)
            rows.append(
                (
                    f"{name} (big project)",
                    f"first view {first_ms:.0f} ms · later views p50 {p(times, 0.5):.0f} ms · "
                    f"{len(last.content) / 1024:.0f} KB · {last.headers.get('X-Query-Count')} "
                    "queries",
                )
            )
        queue_page = lead.get("/p/big/adjudicate/").text
        decision_times = adjudicate_in_turn(lead, queue_page, decisions=10)
        rows.append(
            (
                f"adjudication decisions in turn ({len(decision_times)})",
                f"p50 {p(decision_times, 0.5):.0f} ms · max {max(decision_times):.0f} ms "
                "(each saves and finds the next item)",
            )
        )
        # Each decision is a new data version: the pairs of the decided answers are derived
        # again, the others' are kept (selectors.PairShares, per worker process).
        after = [timed(lambda url=url: lead.get(url), n=1)[0][0] for url in QUEUE_AND_GOLD]
        rows.append(
            (
                "adjudication queue, then gold page, after those decisions",
                " · ".join(f"{ms:.0f} ms" for ms in after),
            )
        )
        rows.append(
            (
                "workers after the lead's statistics pages too",
                " · ".join(f"pid {pid}: {rss_mb(pid):.0f} MB RSS" for pid in worker_pids(server)),
            )
        )
        # Workers that never derived the pairs (restarted, as after a deploy; or the other
        # worker): the queue and the gold page read the shares stored by the first one
        # (annotate.gold.selectors, annotate.common.computed) instead of deriving every pair.
        restart_workers(server)
        restarted = [timed(lambda url=url: lead.get(url), n=1)[0][0] for url in QUEUE_AND_GOLD]
        rows.append(
            (
                "adjudication queue, then gold page, first views in restarted workers",
                " · ".join(f"{ms:.0f} ms" for ms in restarted),
            )
        )
        rows.append(
            (
                "background worker after computing those reports",
                # A job that leaves it above CLAIMDESK_WORKER_MAX_MEMORY_MB (200) restarts it
                # in place (same pid), so this is what it holds while it waits for work.
                f"pid {worker.pid}: {rss_mb(worker.pid):.0f} MB RSS",
            )
        )
        for slug in ("mid", "big"):
            seconds, peak_mb, _, exported = export_in_child(slug)
            rows.append(
                (
                    f"gold export, {slug} ({exported:,} rows)",
                    f"{seconds:.1f} s · {exported / seconds:,.0f} rows/s · exporting process "
                    f"peak RSS {peak_mb:.0f} MB (VmHWM)",
                )
            )
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "labels.jsonl"
            claims = write_label_file(path, "big", ("big-a", "big-b"), LABEL_ANSWERS)
            seconds, peak_mb = command_in_child("import_labels", str(path), "--project", "big")
            rows.append(
                (
                    f"label import into big ({2 * LABEL_ANSWERS:,} label sets, "
                    f"{2 * claims:,} claim labels; manage.py, process start included)",
                    f"{seconds:.1f} s · {2 * LABEL_ANSWERS / seconds:,.0f} sets/s · "
                    f"importing process peak RSS {peak_mb:.0f} MB (VmHWM)",
                )
            )
        rows.append(
            (
                "import of the big bundle (manage.py, process start included)",
                f"{import_seconds:.1f} s · {lines:,} lines · {import_bytes / 1e6:.0f} MB",
            )
        )
        rows.append(("server errors (5xx)", str(len(FIVE_XX))))
        rows.append(("waited for the server to go idle before measuring", f"{waited:.1f} s"))
    finally:
        server.terminate()
        worker.terminate()
        server.wait(timeout=30)
        worker.wait(timeout=30)
    width = max(len(name) for name, _ in rows)
    print()
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print(
        f"\nmachine: a 10M-step Python loop took {speed_before} before the run, "
        f"{machine_speed()} after it\nload average: {load_before} before the run, "
        f"{load_average()} after it"
    )


if __name__ == "__main__":
    main()
