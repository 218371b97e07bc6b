"""Measure the labelling screen's server side: the page, next task, and a draft save.

Usage: python bench/labelling.py   (BENCH_DATABASE_URL overrides the default
postgres://postgres@127.0.0.1:5432/claimdesk_bench; BENCH_REPEAT the 200 repetitions;
BENCH_CLIENTS the 4 concurrent clients of the draft-save throughput run)
The database is dropped and re-created (refuses names without 'bench').

Requests go through Django's test Client in-process (full middleware, view, template, ORM;
no network), so "ms" is server time. Queries are counted per request with
CaptureQueriesContext: every statement sent, so a write's BEGIN and COMMIT count too.
Prints the figures; asserts nothing about time (that is a benchmark's job, not a test's) --
only that each request answered as it should.

Targets (the issues): labelling page for 10 claims / 10 passages <= 15 ms median and <= 10
queries, 60 claims <= 25 ms and <= 120 KB of HTML; next task <= 15 ms; draft save <= 8 ms
median and >= 150 saves/s with 4 clients (processes, each its own connection and reviewer).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import setup_bench_database  # noqa: E402

REPEAT = int(os.environ.get("BENCH_REPEAT", "200"))
WARMUP = 10
PASSAGES = 400
ANSWERS = 2 * REPEAT + 50  # enough free slots for 2 tasks per next-task reviewer (overlap 2)
BIG_ANSWERS = 5  # answers with 60 claims, to show the page's cost hardly grows
BIG_CLAIMS = 60
CLIENTS = int(os.environ.get("BENCH_CLIENTS", "4"))
RETRIEVED = 10
WORDS = (
    "The course notes state that assignment {n} is due in week {w} and that late work is "
    "accepted for two days with a penalty of ten percent per day, unless an extension was "
    "agreed with the lecturer in writing before the deadline."
)


def passage_text(p: int) -> str:
    return WORDS.format(n=p, w=p % 12 + 1)


def bundle_lines() -> list[str]:
    lines = [{"type": "bundle", "corpus_version": "bench-labelling-v1", "name": "Bench labelling"}]
    lines += [{"type": "variant", "name": v} for v in ("baseline", "verifier")]
    for p in range(PASSAGES):
        lines.append(
            {
                "type": "passage",
                "passage_id": f"notes-{p}",
                "text": passage_text(p),
                "document": f"notes-{p // 10}.pdf",
                "location": f"p. {p % 10 + 1}",
            }
        )
    total = ANSWERS + BIG_ANSWERS
    for c in range(total):
        lines.append(
            {
                "type": "case",
                "case_id": f"case-{c}",
                "question": f"When is assignment {c} due, and is late work accepted?",
                "answerable": True,
                "adversarial": False,
                "required_facts": [f"assignment {c} is due"],
                "evidence": [
                    {"passage_id": f"notes-{(c * 7) % PASSAGES}", "quote": "late work is accepted"}
                ],
            }
        )
    for a in range(total):
        n_claims = BIG_CLAIMS if a >= ANSWERS else 10
        retrieved = [f"notes-{(a * 7 + r) % PASSAGES}" for r in range(RETRIEVED)]
        parts, claims, pos = [], [], 0
        for n in range(n_claims):
            cited = retrieved[n % RETRIEVED]
            sentence = f"Assignment {a} is due in week {n % 12 + 1} with a late penalty"
            text = f"{sentence} [{cited}]. "
            claims.append(
                {
                    "text": sentence + ".",
                    "start": pos,
                    "end": pos + len(text) - 1,
                    "citations": [cited],
                }
            )
            parts.append(text)
            pos += len(text)
        lines.append(
            {
                "type": "answer",
                "answer_id": f"case-{a}/{'baseline' if a % 2 else 'verifier'}",
                "case_id": f"case-{a}",
                "variant": "baseline" if a % 2 else "verifier",
                "text": "".join(parts).rstrip(),
                "retrieved": [
                    {"passage_id": pid, "rank": r + 1, "score": 1 - r / 20, "in_prompt": r < 5}
                    for r, pid in enumerate(retrieved)
                ],
                "claims": claims,
            }
        )
    return [json.dumps(line) for line in lines]


def load() -> str:
    """Other work on the machine inflates every figure: print it beside them."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def measure(label: str, call, repeat: int = REPEAT, check=None) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times, queries, sizes = [], [], []
    for i in range(repeat + WARMUP):
        connection.queries_log.clear()  # a full log (9,000 queries) would break the count
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            response = call(i)
            elapsed = (time.perf_counter() - start) * 1000
        if check is not None:
            check(response)
        if i >= WARMUP:
            times.append(elapsed)
            queries.append(len(captured.captured_queries))
            sizes.append(len(response.content))
    times.sort()
    return {
        "label": label,
        "n": len(times),
        "min": times[0],
        "median": statistics.median(times),
        "p95": times[min(len(times) - 1, round(0.95 * (len(times) - 1)))],
        "q_min": min(queries),
        "q_max": max(queries),
        "kb": statistics.median(sizes) / 1024,
    }


def expect_status(status: int):
    def check(response) -> None:
        if response.status_code != status:
            raise SystemExit(
                f"unexpected {response.status_code} (wanted {status}): {response.content[:300]!r}"
            )

    return check


def label_half(assignment) -> None:
    """Draft labels on every other claim, so the page renders both states."""
    from annotate.labelling.services import save_claim_label

    for claim in assignment.answer.claims.prefetch_related("citations__passage"):
        if claim.ordinal % 2:
            continue
        citation = claim.citations.all()[0]
        save_claim_label(
            assignment=assignment,
            claim=claim,
            data={
                "support": "supported",
                "evidence_ids": [citation.cited_id],
                "evidence_quote": "late work is accepted for two days",
                "citations": {citation.cited_id: "supports"},
                "note": "checked against the notes",
            },
        )


def label_all(assignment) -> None:
    from annotate.labelling.services import save_answer_label, save_claim_label

    for claim in assignment.answer.claims.prefetch_related("citations__passage"):
        citations = {c.cited_id: "supports" for c in claim.citations.all()}
        save_claim_label(
            assignment=assignment,
            claim=claim,
            data={"support": "insufficient_evidence", "severity": "minor", "citations": citations},
        )
    save_answer_label(assignment=assignment, data={"relevance": 1})


def main() -> None:
    load_start = load()
    setup_bench_database()
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    from annotate.imports.bundle_import import import_bundle
    from annotate.members.services import add_member
    from annotate.models import Answer, Assignment, Role
    from annotate.projects.opening import open_labelling

    started = time.perf_counter()
    project = import_bundle(lines=bundle_lines(), project_slug="bench").project
    project.overlap = 2
    project.save(update_fields=["overlap"])
    project = open_labelling(project=project)
    slug = project.slug

    def reviewer(name: str):
        return add_member(project=project, username=name, role=Role.REVIEWER).user

    def client_for(user) -> Client:
        client = Client()
        client.force_login(user)
        return client

    # The page: one reviewer on a 10-claim task, another on a 30-claim task, half labelled.
    small = (
        Answer.objects.filter(project=project, claims__ordinal=9)
        .exclude(claims__ordinal=10)
        .order_by("-task_number")[0]
    )
    big = Answer.objects.filter(project=project, claims__ordinal=BIG_CLAIMS - 1).order_by(
        "task_number"
    )[0]
    pages = {}
    for name, answer in (("page-10", small), (f"page-{BIG_CLAIMS}", big)):
        user = reviewer(name)
        assignment = Assignment.objects.create(project=project, answer=answer, reviewer=user)
        label_half(assignment)
        pages[name] = (client_for(user), assignment)
    print(f"database: {connection.vendor}; setup {time.perf_counter() - started:.1f} s")
    print(
        f"project: {Answer.objects.filter(project=project).count()} answers, "
        f"{RETRIEVED} passages each; repetitions: {REPEAT} (+{WARMUP} warm-up)"
    )

    results = []
    for name, claims in (("page-10", 10), (f"page-{BIG_CLAIMS}", BIG_CLAIMS)):
        client, assignment = pages[name]
        url = reverse("task", kwargs={"slug": slug, "number": assignment.answer.task_number})
        results.append(
            measure(
                f"GET labelling page, {claims} claims / {RETRIEVED} passages",
                lambda i, client=client, url=url: client.get(url),
                check=expect_status(200),
            )
        )

    # Draft save: the htmx POST the page sends on every change, alternating values so that
    # every save really writes.
    client, assignment = pages["page-10"]
    claims = list(assignment.answer.claims.prefetch_related("citations"))

    versions: dict[int, int] = {}

    def save(i: int, client=client, assignment=assignment, claims=claims):
        claim = claims[i % len(claims)]
        cited = claim.citations.all()[0].cited_id
        url = reverse(
            "save_claim",
            kwargs={"slug": slug, "number": assignment.answer.task_number, "index": claim.ordinal},
        )
        support = ("supported", "contradicted", "insufficient_evidence")[i % 3]
        data = {
            "support": support,
            "severity": "none" if support == "supported" else "major",
            "requires_evidence": "on",
            "evidence_ids": [cited],
            "evidence_quote": "late work is accepted for two days",
            f"citation:{cited}": "supports" if i % 2 else "does_not_support",
            "note": f"draft {i}",
            "version": versions.get(claim.pk, claim_version(assignment, claim)),
        }
        response = client.post(url, data, headers={"HX-Request": "true"})
        versions[claim.pk] = data["version"] + 1
        return response

    results.append(measure("POST draft save (htmx, one claim)", save, check=expect_status(200)))

    # Throughput: CLIENTS processes save drafts at once, each as its own reviewer on its own
    # task (the assignment's row lock serialises one reviewer's saves, not different ones').
    throughput_users = []
    for c in range(CLIENTS):
        user = reviewer(f"tput-{c}")
        answer = Answer.objects.filter(project=project, assignments__isnull=True).order_by(
            "-task_number"
        )[0]
        Assignment.objects.create(project=project, answer=answer, reviewer=user)
        throughput_users.append(user.pk)
    connection.close()  # each process opens its own
    per_client = REPEAT
    with multiprocessing.get_context("fork").Pool(CLIENTS) as pool:
        started_at = time.perf_counter()
        done = pool.map(_save_loop, [(pk, slug, per_client) for pk in throughput_users])
        wall = time.perf_counter() - started_at
    throughput = sum(done) / wall

    # Next task: a fresh reviewer each time, so every request really allocates an answer.
    next_url = reverse("take_next", kwargs={"slug": slug})
    takers = []
    for i in range(REPEAT + WARMUP):
        user = reviewer(f"next-{i}")
        takers.append((user, client_for(user)))

    def take(i: int):
        return takers[i][1].post(next_url)

    def allocated(response) -> None:
        expect_status(302)(response)
        if "/tasks/" not in response["Location"]:
            raise SystemExit(f"next task did not allocate: redirected to {response['Location']}")

    results.append(measure("POST next task (allocates)", take, check=allocated))

    # Submit, which validates, records a revision and allocates the next task in one request.
    for user, _ in takers:
        label_all(
            Assignment.objects.select_related("answer").get(
                project=project, reviewer=user, status=Assignment.Status.IN_PROGRESS
            )
        )
    submitted = {
        user.pk: Assignment.objects.get(
            project=project, reviewer=user, status=Assignment.Status.IN_PROGRESS
        ).answer.task_number
        for user, _ in takers
    }

    def submit(i: int):
        user, client = takers[i]
        return client.post(reverse("submit", kwargs={"slug": slug, "number": submitted[user.pk]}))

    results.append(measure("POST submit (+ next task)", submit, check=allocated))

    print()
    header = f"{'request':<46} {'n':>4} {'min ms':>7} {'median ms':>10} {'p95 ms':>8}"
    print(f"{header} {'queries':>8} {'KB':>7}")
    for r in results:
        q = str(r["q_max"]) if r["q_min"] == r["q_max"] else f"{r['q_min']}-{r['q_max']}"
        print(
            f"{r['label']:<46} {r['n']:>4} {r['min']:>7.2f} {r['median']:>10.2f} "
            f"{r['p95']:>8.2f} {q:>8} {r['kb']:>7.1f}"
        )
    print()
    print(
        f"draft saves with {CLIENTS} concurrent clients: {sum(done)} saves in {wall:.2f} s = "
        f"{throughput:.0f} saves/s"
    )
    print(f"load average at start {load_start}, at end {load()} on {os.cpu_count()} CPUs")
    print(
        "targets: page <= 15 ms median and <= 10 queries at 10 claims, <= 25 ms and <= 120 KB "
        "at 60; next task <= 15 ms; draft save <= 8 ms median, >= 150 saves/s with 4 clients"
    )


def claim_version(assignment, claim) -> int:
    from annotate.models import ClaimLabel

    label = ClaimLabel.objects.filter(assignment=assignment, claim=claim).first()
    return label.version if label else 0


def _save_loop(args) -> int:
    """One throughput client: `count` draft saves of its own task's claims, in turn."""
    user_pk, slug, count = args
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from annotate.models import Assignment

    user = get_user_model().objects.get(pk=user_pk)
    client = Client()
    client.force_login(user)
    assignment = Assignment.objects.select_related("answer").get(reviewer=user)
    claims = list(assignment.answer.claims.order_by("ordinal"))
    versions = [0] * len(claims)
    for i in range(count):
        k = i % len(claims)
        url = reverse(
            "save_claim",
            kwargs={"slug": slug, "number": assignment.answer.task_number, "index": k},
        )
        data = {"support": ("supported", "contradicted")[i % 2], "version": versions[k]}
        response = client.post(url, data, headers={"HX-Request": "true"})
        if response.status_code != 200:
            raise SystemExit(f"throughput save answered {response.status_code}")
        versions[k] += 1
    return count


if __name__ == "__main__":
    main()
