"""Choosing a variant against limits set in advance (variant_limits): which variants stay
within a latency budget and an unsupported-answer limit.
"""

from __future__ import annotations


def variant_limits(
    report: dict,
    *,
    latency_budget_ms: float | None = None,
    unsupported_limit: float | None = None,
) -> list[dict]:
    """Per variant, whether its mean latency is within the budget and its share of unsupported
    answers (slice all, decided answers) within the limit. A limit not set is not checked
    (None); a variant without the data to check is marked None (unknown), never as meeting."""
    rows = []
    for name, variant in report["variants"].items():
        generation = variant["generation"]["all"]
        latency = generation["latency"]
        unsupported = generation["unsupported_answers"]
        meets_latency = _within(latency["mean"], latency_budget_ms)
        meets_unsupported = _within(unsupported["rate"], unsupported_limit)
        checks = [
            m
            for m, limit in (
                (meets_latency, latency_budget_ms),
                (meets_unsupported, unsupported_limit),
            )
            if limit is not None
        ]
        if not checks:
            meets = None
        elif all(checks):
            meets = True
        elif any(check is False for check in checks):
            meets = False
        else:
            meets = None
        rows.append(
            {
                "variant": name,
                "latency_mean_ms": latency["mean"],
                "latency_n": latency["n"],
                "unsupported_rate": unsupported["rate"],
                "unsupported": unsupported["unsupported"],
                "unsupported_n": unsupported["n"],
                "meets_latency": meets_latency,
                "meets_unsupported": meets_unsupported,
                "meets_both": meets,
            }
        )
    return rows


def _within(value: float | None, limit: float | None) -> bool | None:
    if limit is None or value is None:
        return None
    return value <= limit
