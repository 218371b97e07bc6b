"""The calibration's strata (SPEC.md "Calibration, second step", `calibration --by
slice|variant`): which stratum a claim is in, and a stored report seen through one grouping.

No statistics library here: the run's page, the API and the command read stored reports
through it. The estimates themselves are computed by evaluation.reports.corrections.
"""

from __future__ import annotations

from typing import Any

BY = ("slice", "variant")
# Strata must not overlap (each target claim is weighted once), and the agreement report's
# slices do: an adversarial case is answerable or not as well. Adversarial cases form their own
# stratum, whatever their answerability.
SLICE_STRATA = ("answerable", "unanswerable", "adversarial")


def slice_stratum(*, answerable: bool, adversarial: bool) -> str:
    """The stratum by slice of a claim whose case has these flags."""
    if adversarial:
        return "adversarial"
    return "answerable" if answerable else "unanswerable"


def with_strata(report: dict[str, Any], by: str | None) -> dict[str, Any]:
    """The report as `calibration --by BY --json` prints it: the strata of one grouping
    lifted to the top (`by`, `strata`, `stratified`) beside what it held; the report itself
    when `by` is None. Every grouping is stored in the report, under `strata_by`."""
    if by is None:
        return report
    if by not in BY:
        raise ValueError(f"by must be one of {', '.join(BY)}, got {by!r}")
    return {**report, "by": by, **report["strata_by"][by]}
