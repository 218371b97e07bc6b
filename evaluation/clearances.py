"""A lead clears a reviewer's drift flag: they have dealt with it (talked to the reviewer, who
is back to form), and the flag should speak again only about what happens next.

A clearance records how many of the reviewer's check claims (the drift chart's trials, in its
order) the lead had seen: the Reviewers report runs the chart from 0 after them
(evaluation.quality.drift's ``start``), so the flag is up only for an alarm raised later, and
the row keeps the count of earlier alarms and who cleared it when. Every clearance is kept;
the latest counts. Clearing moves the project's revision: the stored Reviewers report is stale
and computed again."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction

from annotate.common import computed
from annotate.common.errors import ServiceError
from annotate.models import Assignment, DriftClearance, Membership, Project, Role


class NotAReviewer(ServiceError):
    """No reviewer of the project by that name (the report has no row for them)."""


class NothingToClear(ServiceError):
    """The reviewer's drift flag is not up (or not within the claims the lead saw). ``field``:
    what was wrong, "username" (that reviewer's flag) or "trials" (the count given)."""

    def __init__(self, message: str, *, field: str = "username"):
        self.field = field
        super().__init__(message)


@dataclass(frozen=True)
class Cleared:
    clearance: DriftClearance
    earlier_alarms: int  # alarms the chart had raised before the clearance


def _reviewer(project: Project, username: str):
    """The reviewer of the project named ``username``: one now, or one who submitted a label
    set in it (the Reviewers report's rows)."""
    user = get_user_model().objects.filter(username=username).first()
    if user is not None and (
        Membership.objects.filter(project=project, user=user, role=Role.REVIEWER).exists()
        or Assignment.objects.filter(
            project=project, reviewer=user, status=Assignment.Status.SUBMITTED
        ).exists()
    ):
        return user
    raise NotAReviewer(f"No reviewer '{username}' in this project.")


@transaction.atomic
def clear_drift(*, project: Project, lead, username: str, trials: int | None = None) -> Cleared:
    """Clear ``username``'s drift flag after ``trials`` of their check claims, those the lead
    saw: the page posts the count it showed, so that an alarm raised after the page was drawn
    is not cleared unseen; by default all of them now. Refused when no alarm was raised after
    the latest clearance within those claims, or when ``trials`` is not a count of theirs.
    The clearance row is the audit record of the action (who, when, after how many)."""
    # late import: heavy library (memory) -- the drift chart (numpy), which a web worker
    from evaluation.quality import DEFAULT_TARGET_ERROR_RATE, drift

    # late import: heavy library (memory) -- showing stored reports never needs (numpy)
    from evaluation.reports.reviewers import drift_inputs

    computed.lock(project)  # first: this write moves the revision (computed.lock says why)
    reviewer = _reviewer(project, username)
    errors, per_check, before = drift_inputs(project, reviewer.pk)
    total = len(errors)
    seen = total if trials is None else trials
    if not 0 <= seen <= total:
        raise NothingToClear(
            f"{username} has made {total} check claim{'s' if total != 1 else ''}: "
            f"clear after 0 to {total}, not {seen}.",
            field="trials",
        )
    if before is not None and seen <= before["trials"]:
        raise NothingToClear(
            f"{username}'s drift flag was already cleared after {before['trials']} claims "
            f"(by {before['by'] or 'a former account'})."
        )
    # As the report runs it (evaluation.reports.reviewers), over the claims the lead saw.
    chart = drift(
        errors[:seen],
        p0=DEFAULT_TARGET_ERROR_RATE,
        claims_per_check=per_check,
        start=before["trials"] if before else 0,
    )
    if not chart.flag:
        raise NothingToClear(
            f"{username} has no drift flag up: nothing to clear"
            + (f" (cleared after {before['trials']} claims)." if before else ".")
        )
    clearance = DriftClearance.objects.create(
        project=project, reviewer=reviewer, trials=seen, cleared_by=lead
    )
    computed.touch(project)
    return Cleared(clearance=clearance, earlier_alarms=chart.earlier_alarms + chart.alarms)
