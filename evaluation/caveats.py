"""What a page says in place of a figure that cannot be read as agreement. Pure Python: the
pages that show stored reports import it, and must not load numpy to do so (a worker that
renders the agreement page grew by 31 MB when this lived in evaluation.agreement)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def one_label_reason(
    labels: Sequence[Hashable],
    matrix: Sequence[Sequence[int]],
    *,
    who: tuple[str, str] = ("reviewer A", "reviewer B"),
) -> str | None:
    """Why a kappa cannot be read as agreement because a reviewer used one label, or None.

    ``matrix`` is the confusion matrix (rows ``who[0]``, columns ``who[1]``). When both used
    the same single label kappa is undefined (chance agreement is 1) and reported as None.
    When only one of them did, kappa is exactly 0 by its formula -- chance agreement equals the
    observed agreement whatever the other reviewer did -- and every bootstrap replicate is 0
    too, so its interval collapses to [0, 0]: a number that says nothing about agreement. The
    report keeps the value (SPEC.md defines null only for chance agreement 1); pages show this
    reason in its place."""
    rows = [sum(row) for row in matrix]
    columns = [sum(column) for column in zip(*matrix, strict=True)] if matrix else []
    if not sum(rows):
        return None
    used_a = [labels[i] for i, total in enumerate(rows) if total]
    used_b = [labels[j] for j, total in enumerate(columns) if total]
    if len(used_a) == 1 and len(used_b) == 1:
        if used_a == used_b:
            return f"{who[0]} and {who[1]} used one label only ({_shown(used_a[0])})"
        return (
            f"{who[0]} used only {_shown(used_a[0])} and {who[1]} only {_shown(used_b[0])}: "
            "kappa is 0 by formula and its interval cannot be estimated"
        )
    for name, used in zip(who, (used_a, used_b), strict=True):
        if len(used) == 1:
            return (
                f"{name} used one label only ({_shown(used[0])}): kappa is 0 by formula "
                "whatever the other side did, and its interval cannot be estimated"
            )
    return None


def _shown(label: Hashable) -> str:
    if isinstance(label, bool):
        return "yes" if label else "no"
    return str(label).replace("_", " ")
