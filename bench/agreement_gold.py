"""Measure the agreement report and the gold export over 100,000 doubly-labelled claims.

Usage: python bench/agreement_gold.py   (BENCH_DATABASE_URL overrides the default
postgres://postgres@127.0.0.1:5432/claimdesk_bench, which is dropped and re-created)

Builds a project of 10,000 answers x 10 claims (the import benchmark's bundle), two reviewers
who label every claim (about 12% disagreements), then times `agreement_report` and runs
`export_gold` in a child process for the full project and for a tenth of it, printing each
child's peak memory: a streaming export keeps the two close.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import ROOT, setup_bench_database  # noqa: E402
from bench.import_bundle import write_bundle  # noqa: E402

SUPPORT = ("supported", "contradicted", "insufficient_evidence")
SEVERITY = ("none", "minor", "major", "critical")


def label_everything(project, reviewers, *, answers_limit=None) -> int:
    """Two submitted label sets per answer, inserted in bulk."""
    from django.utils import timezone

    from annotate.common import bulk
    from annotate.models import Answer, Assignment, Claim, ClaimLabel

    rng = random.Random(7)
    now = timezone.now()
    answers = list(
        Answer.objects.filter(project=project).order_by("pk").values_list("pk", flat=True)
    )
    answers = answers[:answers_limit] if answers_limit else answers
    claims = {}
    for answer_id, claim_id in Claim.objects.filter(answer_id__in=answers).values_list(
        "answer_id", "pk"
    ):
        claims.setdefault(answer_id, []).append(claim_id)
    ids = bulk.allocate_ids(Assignment, 2 * len(answers))
    rows, labels = [], []
    for i, answer_id in enumerate(answers):
        mine = claims.get(answer_id, ())  # an answer may have no claim
        first = {c: SUPPORT[0] if rng.random() < 0.7 else rng.choice(SUPPORT) for c in mine}
        for side, reviewer in enumerate(reviewers):
            pk = ids[2 * i + side]
            rows.append(
                (
                    pk,
                    project.pk,
                    answer_id,
                    reviewer.pk,
                    "submitted",
                    now,
                    now,
                    now,
                    "",
                    60,
                    rng.choice((1, 2)),
                    "",
                    [],
                    "",
                    1,
                    0,
                    project.guidelines_version,
                )
            )
            for claim_id in mine:
                support = first[claim_id]
                if side == 1 and rng.random() < 0.12:  # reviewer B departs from A now and then
                    support = rng.choice(SUPPORT)
                severity = "none" if support == "supported" else SEVERITY[1 + claim_id % 3]
                labels.append((pk, claim_id, support, severity, True, [], "", {}, "", 1))
    bulk.insert_rows(
        Assignment,
        [
            "id",
            "project_id",
            "answer_id",
            "reviewer_id",
            "status",
            "taken_at",
            "touched_at",
            "submitted_at",
            "release_reason",
            "seconds_spent",
            "relevance",
            "abstention",
            "failure_labels",
            "note",
            "revision",
            "draft_version",
            "guideline_version",  # labelled under the guidelines as they are
        ],
        rows,
    )
    label_ids = bulk.allocate_ids(ClaimLabel, len(labels))
    bulk.insert_rows(
        ClaimLabel,
        [
            "id",
            "assignment_id",
            "claim_id",
            "support",
            "severity",
            "requires_evidence",
            "evidence_ids",
            "evidence_quote",
            "citations",
            "note",
            "version",
        ],
        ((pk, *row) for pk, row in zip(label_ids, labels, strict=True)),
    )
    return len(labels) // 2


# The export, run as `manage.py export_gold` would run it, then the process's own peak
# resident memory (VmHWM) from /proc. RUSAGE_CHILDREN, used before, kept the high-water mark
# of the forked child before it exec'd Python -- the benchmark's own memory, not the export's.
COMMAND_AND_PEAK = """
import sys
from django.core.management import execute_from_command_line
execute_from_command_line(["manage.py", *sys.argv[1:]])
status = open("/proc/self/status").read()
peak = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
print(peak.split()[1], file=sys.stderr)
"""


def command_in_child(*args: str) -> tuple[float, float]:
    """(seconds, the process's own peak MB) for `manage.py *args`, run in a child process
    that reads its own VmHWM from /proc as it ends (RUSAGE_CHILDREN would report the forked
    child's high-water mark before exec: this process's own)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", COMMAND_AND_PEAK, *args],
        cwd=ROOT,
        check=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"},
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    return elapsed, int(done.stderr.strip().splitlines()[-1]) / 1024


def export_in_child(slug: str, *extra: str) -> tuple[float, float, int, int]:
    """(seconds, the exporting process's own peak MB, bytes written, rows) for export_gold."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as out:
        elapsed, peak_mb = command_in_child(
            "export_gold", "--project", slug, "--output", out.name, *extra
        )
        size = Path(out.name).stat().st_size
        with open(out.name, "rb") as written:
            rows = sum(1 for _ in written)
    return elapsed, peak_mb, size, rows


def load_tenth_and_full() -> None:
    """The bench bundle imported twice: "tenth" with its first 1,000 answers labelled by two
    reviewers, "full" with every answer; then ANALYZE, as autovacuum would after a bulk load."""
    from django.db import connection, transaction

    from annotate.imports.bundle_import import import_bundle
    from annotate.members.services import add_member
    from annotate.projects.opening import open_labelling

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        write_bundle(path)
        for slug in ("tenth", "full"):
            with path.open("rb") as stream:
                project = import_bundle(lines=stream, project_slug=slug).project
            reviewers = [
                add_member(project=project, username=f"{slug}-{n}", role="reviewer").user
                for n in ("a", "b")
            ]
            open_labelling(project=project)
            with transaction.atomic():
                claims = label_everything(
                    project, reviewers, answers_limit=1000 if slug == "tenth" else None
                )
            print(f"{slug}: {claims:,} doubly-labelled claims")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def main() -> None:
    setup_bench_database()
    from annotate.models import Project
    from evaluation.reports.agreement import agreement_report

    load_tenth_and_full()

    full = Project.objects.get(slug="full")
    timings = []
    for _ in range(3):
        start = time.perf_counter()
        report = agreement_report(full)
        timings.append(time.perf_counter() - start)
    support = report["slices"]["all"]["support"]
    print(
        f"agreement report (all fields, 4 slices, pairs, 1,000 bootstrap replicates each): "
        f"median {statistics.median(timings):.2f} s over 3 runs "
        f"(support: n={support['n']:,}, kappa={support['kappa']:.3f})"
    )
    for slug in ("tenth", "full"):
        seconds, peak_mb, size, rows = export_in_child(slug)
        print(
            f"gold export '{slug}': {rows:,} rows in {seconds:.1f} s ({rows / seconds:,.0f} "
            f"rows/s, process start included), {size / 1e6:.0f} MB written, the exporting "
            f"process's peak RSS {peak_mb:.0f} MB (VmHWM)"
        )


if __name__ == "__main__":
    main()
