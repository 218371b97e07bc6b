"""Measure the lead's report pages of a large project: HTML size and time.

Usage: python bench/reports.py   (BENCH_DATABASE_URL overrides the default
postgres://postgres@127.0.0.1:5432/claimdesk_bench, which is dropped and re-created;
BENCH_ANSWERS sets the project's size, 10,000 answers by default; BENCH_REUSE=1 keeps a
database an earlier run built and only measures)

Builds the import benchmark's bundle (two variants, ten claims an answer), two reviewers who
label every answer (about 12% of claims disagree, so the adjudication queue is long), and a
judge run with a verdict on every claim; then, with a background worker running beside it
(as a deployment has one), fetches the evaluation page (with a variant comparison), the
agreement page, the adjudication queue and the judge run's page as the lead, and prints for
each: the first view's time, how long until the report is on screen (the evaluation,
agreement and judge reports are computed by the worker while the page says so; the queue in
the request), the median of three later views (which find the report kept) and their size.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import DEFAULT_URL, PENDING, setup_bench_database, start_worker  # noqa: E402

SLUG = "reports"


def build() -> None:
    from django.db import connection, transaction

    from annotate.imports.bundle_import import import_bundle
    from annotate.members.services import add_member
    from annotate.models import Claim
    from annotate.projects.opening import open_labelling
    from bench.agreement_gold import label_everything
    from bench.import_bundle import write_bundle
    from evaluation.judges.runs import import_judge_run

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        write_bundle(path)
        with path.open("rb") as stream:
            project = import_bundle(lines=stream, project_slug=SLUG).project
    reviewers = [
        add_member(project=project, username=f"rev-{n}", role="reviewer").user for n in "ab"
    ]
    add_member(project=project, username="lead", role="lead", password="bench-lead")
    open_labelling(project=project)
    with transaction.atomic():
        label_everything(project, reviewers)
    labels = ("supported", "contradicted", "insufficient_evidence", None)
    lines = [
        json.dumps({"type": "run", "judge": "bench-judge", "model": "bench/judge", "prompt": "p"})
    ]
    claims = Claim.objects.filter(answer__project=project).values_list(
        "answer__answer_id", "ordinal", "pk"
    )
    for answer_id, ordinal, pk in claims.order_by("answer_id", "ordinal"):
        label = labels[pk % 7 % 4] if pk % 7 < 4 else "supported"
        lines.append(
            json.dumps(
                {
                    "type": "verdict",
                    "answer_id": answer_id,
                    "claim_index": ordinal,
                    "raw": json.dumps({"label": label}),
                    "label": label,
                }
            )
        )
    import_judge_run(lines=lines, project=project)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def measure() -> None:
    from django.test import Client
    from django.urls import reverse

    from annotate.models import Answer, Project
    from evaluation.models import JudgeRun

    project = Project.objects.get(slug=SLUG)
    run = JudgeRun.objects.get(project=project)
    from django.contrib.auth import get_user_model

    client = Client()
    client.force_login(get_user_model().objects.get(username="lead"))
    pages = {
        "evaluation": reverse("evaluation:report", kwargs={"slug": SLUG})
        + "?a=baseline&b=verifier",
        "agreement": reverse("agreement", kwargs={"slug": SLUG}),
        "adjudication queue": reverse("adjudication_queue", kwargs={"slug": SLUG}),
        "judge run": reverse("judge_run", kwargs={"slug": SLUG, "run_pk": run.pk}),
    }
    from annotate.common import computed

    print(f"{Answer.objects.filter(project=project).count():,} answers")
    print(f"{'page':<20} {'first view':>10} {'on screen':>10} {'later views':>12} {'HTML':>9}")
    computed.clear()
    worker = start_worker()
    try:
        for name, url in pages.items():

            def view(name=name, url=url):
                response = client.get(url, HTTP_HOST="localhost")
                assert response.status_code == 200, (name, response.status_code)
                return response

            start = time.perf_counter()
            view()
            first = time.perf_counter() - start
            while PENDING in view().content:
                time.sleep(0.2)
            ready = time.perf_counter() - start
            timings = []
            for _ in range(3):
                start = time.perf_counter()
                response = view()
                timings.append(time.perf_counter() - start)
            print(
                f"{name:<20} {first:8.2f} s {ready:8.2f} s {statistics.median(timings):10.2f} s "
                f"{len(response.content) / 1024:6.0f} KB"
            )
    finally:
        worker.terminate()
        worker.wait()


def main() -> None:
    if os.environ.get("BENCH_REUSE") == "1":
        os.environ["DATABASE_URL"] = os.environ.get("BENCH_DATABASE_URL") or DEFAULT_URL
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
    else:
        setup_bench_database()
        build()
    from django.conf import settings

    settings.ALLOWED_HOSTS = ["localhost"]
    measure()


if __name__ == "__main__":
    main()
