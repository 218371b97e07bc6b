"""Measure gold as Parquet and gold releases over 10,000 answers x 10 claims (110,000 rows).

Usage: python bench/releases.py   (BENCH_DATABASE_URL overrides the default
postgres://postgres@127.0.0.1:5432/claimdesk_bench, which is dropped and re-created)

Builds agreement_gold's projects (a tenth and the full 10,000 answers, every claim labelled by
two reviewers), then runs `export_gold --format jsonl` and `--format parquet` and
`release_gold` in child processes, printing each one's time and its own peak memory: Parquet
is written in row groups, so the full project's peak stays close to the tenth's.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.agreement_gold import command_in_child, load_tenth_and_full  # noqa: E402
from bench.common import setup_bench_database  # noqa: E402


def main() -> None:
    setup_bench_database()
    from django.db import connection

    load_tenth_and_full()
    connection.close()

    for slug in ("tenth", "full"):
        with tempfile.TemporaryDirectory() as tmp:
            for fmt in ("jsonl", "parquet"):
                out = Path(tmp) / f"gold.{fmt}"
                seconds, peak = command_in_child(
                    "export_gold", "--project", slug, "--format", fmt, "--output", str(out)
                )
                size = out.stat().st_size / 1e6
                print(
                    f"{slug} export_gold {fmt}: {seconds:.1f} s, peak {peak:.0f} MB, {size:.1f} MB"
                )
            seconds, peak = command_in_child(
                "release_gold",
                "--project",
                slug,
                "--name",
                "v1",
                "--output-dir",
                str(Path(tmp) / "v1"),
            )
            print(f"{slug} release_gold with its folder: {seconds:.1f} s, peak {peak:.0f} MB")


if __name__ == "__main__":
    main()
