"""A reviewer's operations: how much, how fast, how often overruled. Pure functions, no Django.

SPEC.md "Quality control", reviewer operations:
- seconds per claim: each timed task's active time (Assignment.seconds_spent, what the labelling
  screen records between touches, idle pauses capped) over its number of claims; the median and
  the 90th percentile over the reviewer's tasks (numpy's default, linear interpolation). A task
  of an answer without claims has no time per claim and is left out (counted);
- submissions per day: timed tasks over the calendar days on which the reviewer submitted one
  (days worked, not days elapsed: a reviewer who labels on Mondays is not slow on Tuesdays);
- overruled share: of the reviewer's fields a lead decided in adjudication, the share where
  the lead's value differed from the reviewer's.

Every rate comes with the counts it is made of, and is None with a reason when it has none.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from datetime import date

import numpy as np

NO_TASK = "no task submitted yet"
NO_TIMED_TASK = "no task submitted in the app (imported label sets carry no time)"
NO_CLAIMS = "no timed task has a claim"
NO_ADJUDICATED_FIELD = "no field of theirs was decided in adjudication"


@dataclass(frozen=True)
class SecondsPerClaim:
    n: int  # timed tasks with at least one claim
    claims: int
    without_claims: int  # timed tasks of answers without claims, left out
    median: float | None
    p90: float | None
    undefined_reason: str | None

    def as_dict(self) -> dict:
        return {
            "median": self.median,
            "p90": self.p90,
            "n": self.n,
            "claims": self.claims,
            "without_claims": self.without_claims,
        }


def seconds_per_claim(seconds: Sequence[float], claims: Sequence[int]) -> SecondsPerClaim:
    """Median and p90 of seconds / claims over tasks (aligned sequences, one entry per timed
    task)."""
    if len(seconds) != len(claims):
        raise ValueError(f"seconds and claims must be aligned: {len(seconds)} != {len(claims)}")
    spent = np.asarray(seconds, dtype=float)
    counts = np.asarray(claims, dtype=float)
    keep = counts > 0
    rates = spent[keep] / counts[keep]
    without = int((~keep).sum())
    if not rates.size:
        reason = NO_CLAIMS if len(seconds) else NO_TIMED_TASK
        return SecondsPerClaim(0, 0, without, None, None, reason)
    median, p90 = np.percentile(rates, [50, 90])
    return SecondsPerClaim(
        n=int(rates.size),
        claims=int(counts[keep].sum()),
        without_claims=without,
        median=float(median),
        p90=float(p90),
        undefined_reason=None,
    )


@dataclass(frozen=True)
class PerDay:
    submissions: int
    days: int
    value: float | None
    undefined_reason: str | None


def per_day(days: Iterable[date]) -> PerDay:
    """Submissions per day worked, from each timed submission's calendar day."""
    days = list(days)
    worked = len(set(days))
    if not worked:
        return PerDay(0, 0, None, NO_TIMED_TASK)
    return PerDay(len(days), worked, len(days) / worked, None)


@dataclass(frozen=True)
class Overruled:
    adjudicated: int  # the reviewer's fields a lead decided
    overruled: int  # of them, decided otherwise than the reviewer had labelled
    share: float | None
    undefined_reason: str | None


def overruled(pairs: Iterable[tuple[Hashable, Hashable]]) -> Overruled:
    """(the reviewer's value, the lead's decision) for each of the reviewer's decided fields."""
    adjudicated = differed = 0
    for given, decided in pairs:
        adjudicated += 1
        differed += given != decided
    if not adjudicated:
        return Overruled(0, 0, None, NO_ADJUDICATED_FIELD)
    return Overruled(adjudicated, differed, differed / adjudicated, None)
