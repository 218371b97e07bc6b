"""Measure the Reviewers report and page at 10,000 answers on PostgreSQL.

Usage: python bench/reviewers.py   (BENCH_DATABASE_URL overrides the default
postgres://postgres@127.0.0.1:5432/claimdesk_bench, which is dropped and re-created;
BENCH_ANSWERS sets the project's size, 10,000 answers by default; BENCH_REUSE=1 keeps a
database an earlier run built and only measures)

Builds the import benchmark's bundle (ten claims an answer), two reviewers who label every
answer (about 12% of claims disagree) at spread times and active times, as the labelling
screen records them; a lead's decisions on 500 disputed claims; and a third reviewer who
labels 400 gold checks (one claim in ten wrong). Then prints how long the report takes to
compute (what the worker does), and the page as the lead sees it once the report is stored:
the first view and the median of five, with the machine's load average.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import DEFAULT_URL, setup_bench_database  # noqa: E402

SLUG = "reviewers"
CHECKS = 400
DECISIONS = 500


def build() -> None:
    import tempfile

    from django.db import connection, transaction
    from django.utils import timezone

    from annotate.common import bulk, computed
    from annotate.imports.bundle_import import import_bundle
    from annotate.members.services import add_member
    from annotate.models import Assignment, ClaimLabel, Decision, GoldCheck
    from annotate.projects.opening import open_labelling
    from bench.agreement_gold import label_everything
    from bench.import_bundle import write_bundle

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        write_bundle(path)
        with path.open("rb") as stream:
            project = import_bundle(lines=stream, project_slug=SLUG).project
    reviewers = [
        add_member(project=project, username=f"rev-{n}", role="reviewer").user for n in "abc"
    ]
    lead = add_member(project=project, username="lead", role="lead", password="bench-lead").user
    open_labelling(project=project)
    rng = random.Random(11)
    with transaction.atomic():
        label_everything(project, reviewers[:2])
        # Label sets made in the app: an undo window, an active time, a day of their own.
        now = timezone.now()
        rows = list(Assignment.objects.filter(project=project).values_list("pk", flat=True))
        updates = [
            Assignment(
                pk=pk,
                seconds_spent=20 + rng.randrange(600),
                submitted_at=now - timedelta(days=rng.randrange(30), minutes=pk % 600),
                undo_until=now,
            )
            for pk in rows
        ]
        Assignment.objects.bulk_update(
            updates, ["seconds_spent", "submitted_at", "undo_until"], batch_size=2000
        )
        # The lead decides disputed claims.
        first, second = (
            dict(
                ClaimLabel.objects.filter(assignment__reviewer=r, assignment__project=project)
                .values_list("claim_id", "support")
                .iterator()
            )
            for r in reviewers[:2]
        )
        disputed = sorted(c for c in first if first[c] != second.get(c))[:DECISIONS]
        answer_of = dict(
            ClaimLabel.objects.filter(claim_id__in=disputed).values_list(
                "claim_id", "claim__answer_id"
            )
        )
        Decision.objects.bulk_create(
            [
                Decision(
                    answer_id=answer_of[c],
                    claim_id=c,
                    field="support",
                    value=first[c],
                    decided_by=lead,
                )
                for c in disputed
            ]
        )
        # Gold checks: the third reviewer labels 400 answers both others agree on, as checks.
        doubted = set(answer_of.values())
        answers = [
            a
            for a in Assignment.objects.filter(project=project, reviewer=reviewers[0])
            .order_by("answer_id")
            .values_list("answer_id", flat=True)
            if a not in doubted
        ][:CHECKS]
        GoldCheck.objects.bulk_create(
            [GoldCheck(project=project, answer_id=a, marked_by=lead) for a in answers]
        )
        ids = bulk.allocate_ids(Assignment, len(answers))
        checks = [
            Assignment(
                pk=pk,
                project=project,
                answer_id=a,
                reviewer=reviewers[2],
                status="submitted",
                submitted_at=now - timedelta(minutes=len(answers) - i),
                undo_until=now,
                seconds_spent=30 + rng.randrange(300),
                relevance=2,
                revision=1,
                is_check=True,
            )
            for i, (pk, a) in enumerate(zip(ids, answers, strict=True))
        ]
        Assignment.objects.bulk_create(checks, batch_size=2000)
        gold = ClaimLabel.objects.filter(
            assignment__reviewer=reviewers[0], assignment__answer_id__in=answers
        ).values_list("assignment__answer_id", "claim_id", "support", "severity")
        check_of = {c.answer_id: c.pk for c in checks}
        labels = []
        for answer_id, claim_id, support, severity in gold:
            if rng.random() < 0.10:
                support = "contradicted" if support != "contradicted" else "supported"
                severity = "none" if support == "supported" else "major"
            labels.append(
                ClaimLabel(
                    assignment_id=check_of[answer_id],
                    claim_id=claim_id,
                    support=support,
                    severity=severity,
                )
            )
        ClaimLabel.objects.bulk_create(labels, batch_size=5000)
        computed.touch(project)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def measure() -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from annotate.common import computed
    from annotate.models import Answer, Project
    from evaluation.report_kinds import REVIEWERS
    from evaluation.reports.reviewers import reviewers_report

    project = Project.objects.get(slug=SLUG)
    print(f"{Answer.objects.filter(project=project).count():,} answers")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        report = reviewers_report(project)
        timings.append(time.perf_counter() - start)
    print(
        f"report computed (the worker's part): median {statistics.median(timings):.2f} s over 3 "
        f"runs, {len(report['reviewers'])} reviewers"
    )
    for row in report["reviewers"]:
        spent = row["seconds_per_claim"]
        print(
            f"  {row['username']}: {row['tasks']:,} tasks, s/claim median {spent['median']}, "
            f"p90 {spent['p90']}, per day {row['per_day']}, overruled {row['overruled']}/"
            f"{row['adjudicated_fields']}, checks {row['checks']['n']}, "
            f"drift {row['drift']['flag']}"
        )
    revision = computed.revisions(project)[0]
    computed.store(project, REVIEWERS, "", revision, lambda: report)
    computed.clear()
    computed.forget_decoded()

    client = Client()
    client.force_login(get_user_model().objects.get(username="lead"))
    url = reverse("reviewers", kwargs={"slug": SLUG})
    views = []
    for _ in range(6):
        start = time.perf_counter()
        response = client.get(url + "?sort=-median", HTTP_HOST="localhost")
        views.append(time.perf_counter() - start)
        assert response.status_code == 200, response.status_code
        assert b'data-report-freshness="current"' in response.content
    print(
        f"page (report stored): first view {views[0] * 1000:.0f} ms (reads and decodes the "
        f"stored report), later views median {statistics.median(views[1:]) * 1000:.0f} ms, "
        f"{len(response.content) / 1024:.0f} KB"
    )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


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
