"""Measure bundle import: 10,000 answers with 100,000 claims (10 retrieved passages each).

Usage: python bench/import_bundle.py   (BENCH_DATABASE_URL overrides the default
postgres://postgres@127.0.0.1:5432/claimdesk_bench)
The database is dropped and re-created (refuses names without 'bench').
Prints the figures; asserts nothing about time (that is a benchmark's job, not a test's).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.common import setup_bench_database  # noqa: E402

ANSWERS = int(os.environ.get("BENCH_ANSWERS", "10000"))
CLAIMS_PER_ANSWER = 10
RETRIEVED_PER_ANSWER = 10
PASSAGES = 2000


def write_bundle(path: Path, answers: int | None = None, *, broken_every: int = 0) -> int:
    """The benchmark bundle: `answers` answers (default BENCH_ANSWERS, 10,000), two per case,
    ten claims and ten retrieved passages each. Returns its number of lines. With
    `broken_every`, every n-th answer names a case that does not exist: a bundle an import must
    refuse whole, line by line."""
    answers = ANSWERS if answers is None else answers
    cases = answers // 2
    lines = 0
    with path.open("w") as out:

        def emit(obj):
            nonlocal lines
            out.write(json.dumps(obj) + "\n")
            lines += 1

        emit({"type": "bundle", "corpus_version": "bench-v1", "name": "Bench"})
        for v in ("baseline", "verifier"):
            emit({"type": "variant", "name": v, "settings": {"k": RETRIEVED_PER_ANSWER}})
        for p in range(PASSAGES):
            emit(
                {
                    "type": "passage",
                    "passage_id": f"doc-{p}:p1",
                    "text": f"Passage {p} states fact number {p} about the course. " * 3,
                }
            )
        for c in range(cases):
            emit(
                {
                    "type": "case",
                    "case_id": f"case-{c}",
                    "question": f"What is fact {c}?",
                    "answerable": True,
                    "adversarial": c % 7 == 0,
                    "required_facts": [f"fact number {c}"],
                    "evidence": [
                        {
                            "passage_id": f"doc-{c % PASSAGES}:p1",
                            "quote": f"fact number {c % PASSAGES}",
                        }
                    ],
                }
            )
            emit(
                {
                    "type": "judgment",
                    "case_id": f"case-{c}",
                    "passage_id": f"doc-{c % PASSAGES}:p1",
                    "grade": 3,
                }
            )
        sentence = "The course states fact number {n} clearly [doc-{p}:p1]. "
        for a in range(answers):
            case = a // 2
            parts, claims, pos = [], [], 0
            for n in range(CLAIMS_PER_ANSWER):
                s = sentence.format(n=n, p=(case + n) % PASSAGES)
                claims.append(
                    {
                        "text": s.split(" [")[0] + ".",
                        "start": pos,
                        "end": pos + len(s) - 1,
                        "citations": [f"doc-{(case + n) % PASSAGES}:p1"],
                    }
                )
                parts.append(s)
                pos += len(s)
            emit(
                {
                    "type": "answer",
                    "answer_id": f"case-{case}/{'baseline' if a % 2 else 'verifier'}",
                    "case_id": (
                        f"no-such-case-{case}"
                        if broken_every and a % broken_every == broken_every - 1
                        else f"case-{case}"
                    ),
                    "variant": "baseline" if a % 2 else "verifier",
                    "text": "".join(parts).rstrip(),
                    "elapsed_ms": 1000 + a % 900,
                    "retrieved": [
                        {
                            "passage_id": f"doc-{(case + r) % PASSAGES}:p1",
                            "rank": r + 1,
                            "score": 1 - r / 10,
                            "in_prompt": r < 5,
                        }
                        for r in range(RETRIEVED_PER_ANSWER)
                    ],
                    "claims": claims,
                }
            )
    return lines


def main() -> None:
    setup_bench_database()
    from django.db import connection

    from annotate.imports.bundle_import import import_bundle
    from annotate.models import Answer, Citation, Claim, RetrievedPassage

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.jsonl"
        lines = write_bundle(path)
        size = path.stat().st_size
        start = time.perf_counter()
        with path.open("rb") as stream:
            result = import_bundle(lines=stream, project_slug="bench")
        elapsed = time.perf_counter() - start
        rows = sum(sum(c.values()) for c in result.counts.values())
        rows += Citation.objects.count() + RetrievedPassage.objects.count()
        print(f"database: {connection.vendor}")
        print(
            f"bundle: {lines:,} lines, {size / 1e6:.1f} MB; "
            f"{Answer.objects.count():,} answers, {Claim.objects.count():,} claims, "
            f"{Citation.objects.count():,} citations, "
            f"{RetrievedPassage.objects.count():,} retrieved"
        )
        print(f"import: {elapsed:.2f} s for {rows:,} rows = {rows / elapsed:,.0f} rows/s")

        start = time.perf_counter()
        with path.open("rb") as stream:
            import_bundle(lines=stream, project_slug="bench")
        print(f"idempotent re-import (nothing changes): {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
