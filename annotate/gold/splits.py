"""The judge split of a case: judge_dev (for writing judge prompts) or judge_test (for
measuring judges), decided by the case id alone."""

from __future__ import annotations

import hashlib

JUDGE_DEV_SHARE = 0.3
# What a judge's calibration is measured on: the measuring split by default.
SPLITS = ("judge_test", "judge_dev", "all")
DEFAULT_SPLIT = "judge_test"


def judge_split(case_id: str) -> str:
    """Deterministic judge split of a case: about 30% `judge_dev` (for writing judge prompts),
    the rest `judge_test` (for measuring judges). Decided by the case id alone, so every
    answer of a case -- every variant and sample -- lands on the same side, and re-exports
    never move an item across."""
    digest = hashlib.sha256(f"claimdesk-judge-split:{case_id}".encode()).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2**64
    return "judge_dev" if fraction < JUDGE_DEV_SHARE else "judge_test"
