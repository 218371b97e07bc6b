"""The Reviewers report: per reviewer, what they did and how well (SPEC.md "Quality control").

One row per reviewer of the project (and anyone who submitted a label set in it since):
- tasks submitted; seconds per claim (median, p90) from each task's active time and
  submissions per day worked, both over the tasks submitted in the app (an imported label set
  carries no time: it counts as a task, not in the timings);
- the share of their fields a lead overruled: every latest Decision of an item they labelled,
  against their own value (support_binary follows support and is not counted twice);
- Cohen's kappa with each co-reviewer, per field, over the items both labelled (every pair of
  reviewers of an answer, not only its first two), with n and the bootstrap over answers;
- on gold checks: accuracy per field with a Wilson interval, kappa against gold, and the drift
  flag naming the checks that raised it (evaluation.quality), the chart run from where a lead
  last cleared the flag (annotate.models.DriftClearance; `drift.cleared` says who, when and
  after how many claims).

The pure statistics live in evaluation.operations, evaluation.agreement and
evaluation.quality; this module reads the project (a fixed number of queries whatever its size) and
assembles the `reviewers --json` shape, which the page, its CSV and the API show as stored.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable
from itertools import combinations
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count
from django.utils import timezone

from annotate.checks.selectors import NOT_COMPARED, check_results
from annotate.gold.pairs import (
    answer_fields,
    claim_fields,
    claim_label_values,
    claim_values,
    comparable,
)
from annotate.models import (
    Assignment,
    Claim,
    ClaimLabel,
    Decision,
    DriftClearance,
    GoldCheck,
    Membership,
    Project,
    Role,
)
from annotate.schema import LabelSchema
from evaluation import operations
from evaluation.agreement import FIELDS, field_agreement
from evaluation.quality import (
    DEFAULT_TARGET_ERROR_RATE,
    CheckLabel,
    cusum_design,
    drift_errors,
    reviewer_checks,
)
from evaluation.reports.agreement import LABELS, answer_report_fields, claim_report_fields

# Fields a lead decides whose value is derived from another one's decision.
_DERIVED = frozenset({"support_binary"})
NOT_LABELLED_TOGETHER = "no item labelled by both"


def kappa_fields(schema: LabelSchema) -> dict[str, tuple[tuple, Any]]:
    """The report's fields under the project's schema, name -> (labels, weighting), in the
    agreement report's order."""
    names = (*claim_report_fields(schema), *answer_report_fields(schema))
    return {
        name: (schema.support_labels if name == "support" else LABELS[name], FIELDS[name].weights)
        for name in names
    }


def reviewers_report(project: Project, *, n_boot: int = 1000, seed: int = 0) -> dict:
    """The `reviewers --json` shape of SPEC.md, each rate with its counts and, where it is
    undefined, the reason."""
    schema = project.schema
    fields = kappa_fields(schema)
    checks = project_checks(project)
    accuracy_fields = check_fields(schema)
    assignments = _submitted(project)
    claims_of = dict(
        Claim.objects.filter(answer__project=project)
        .values("answer_id")
        .annotate(n=Count("pk"))
        .values_list("answer_id", "n")
    )
    claim_labels = _claim_labels(project)
    names = _reviewers(project, {a["reviewer_id"] for a in assignments.all})
    p0 = DEFAULT_TARGET_ERROR_RATE
    per_check = claims_per_check(project, assignments.all, claims_of)
    cleared = latest_clearances(project)
    kappas = _kappa_with(assignments.labelled, claim_labels, fields, n_boot=n_boot, seed=seed)
    overruled = _overruled(project, assignments.labelled, claim_labels)
    rows = []
    for reviewer_id, username in sorted(names.items(), key=lambda item: item[1]):
        mine = [a for a in assignments.all if a["reviewer_id"] == reviewer_id]
        timed = [a for a in mine if a["undo_until"] is not None]
        spent = operations.seconds_per_claim(
            [a["seconds_spent"] for a in timed], [claims_of.get(a["answer_id"], 0) for a in timed]
        )
        daily = operations.per_day(timezone.localtime(a["submitted_at"]).date() for a in timed)
        ruled = operations.overruled(overruled.get(reviewer_id, ()))
        quality = reviewer_checks(
            checks.get(reviewer_id, ()),
            fields=accuracy_fields,
            p0=p0,
            claims_per_check=per_check,
            n_boot=n_boot,
            seed=seed,
            start=cleared[reviewer_id]["trials"] if reviewer_id in cleared else 0,
        )
        others = {
            names[other]: entry
            for other, entry in sorted(
                kappas.get(reviewer_id, {}).items(), key=lambda item: names[item[0]]
            )
            if other in names
        }
        reasons = {
            "seconds_per_claim": spent.undefined_reason,
            "per_day": daily.undefined_reason,
            "overruled_share": ruled.undefined_reason,
        }
        if not mine:  # a reviewer yet to start: nothing is undefined for another reason
            reasons = dict.fromkeys(reasons, operations.NO_TASK)
        rows.append(
            {
                "username": username,
                "tasks": len(mine),
                "timed_tasks": len(timed),
                "seconds_per_claim": spent.as_dict(),
                "per_day": daily.value,
                "days_worked": daily.days,
                "overruled_share": ruled.share,
                "overruled": ruled.overruled,
                "adjudicated_fields": ruled.adjudicated,
                "checks": {"n": quality["n"], "accuracy": quality["accuracy"]},
                "drift": {**quality["drift"], "cleared": cleared.get(reviewer_id)},
                "kappa_with": others,
                "undefined": {key: reason for key, reason in reasons.items() if reason},
            }
        )
    return {
        "project": project.slug,
        "fields": list(fields),
        "check_fields": list(accuracy_fields),
        "target_error_rate": p0,
        "drift_design": cusum_design(p0, per_check).as_dict(),
        "reviewers": rows,
    }


# --- Reading the project ---------------------------------------------------------------------


class Submitted:
    """The project's submitted assignments: all of them (tasks, timings), and those that are
    label sets of the campaign (`labelled`: gold checks left out, they never enter agreement
    or adjudication)."""

    def __init__(self, rows: list[dict]) -> None:
        self.all = rows
        self.labelled = [row for row in rows if not row["is_check"]]


def _submitted(project: Project) -> Submitted:
    rows = list(
        Assignment.objects.filter(project=project, status=Assignment.Status.SUBMITTED)
        .order_by("submitted_at", "pk")
        .values(
            "pk",
            "answer_id",
            "reviewer_id",
            "submitted_at",
            "seconds_spent",
            "undo_until",
            "relevance",
            "abstention",
            "failure_labels",
            "is_check",
        )
    )
    return Submitted(rows)


def _claim_labels(project: Project) -> dict[int, list[tuple[int, int, dict]]]:
    """Submitted claim labels by assignment: (claim, claim's ordinal, values as gold reads
    them). One query; JSON columns as text, decoded through the gold derivation's cache."""
    rows = ClaimLabel.objects.filter(
        assignment__project=project, assignment__status=Assignment.Status.SUBMITTED
    ).values_list(*claim_label_values())
    out: dict[int, list[tuple[int, int, dict]]] = defaultdict(list)
    for row in rows.order_by("assignment_id", "claim__ordinal"):
        out[row[0]].append((row[1], row[2], claim_values(row)))
    return out


def _reviewers(project: Project, submitted: set[int]) -> dict[int, str]:
    """The project's reviewers now, and anyone who submitted a label set in it (a reviewer
    since removed keeps their row: their labels are still in the gold)."""
    members = Membership.objects.filter(project=project, role=Role.REVIEWER).values_list(
        "user_id", flat=True
    )
    ids = set(members) | submitted
    return dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))


# --- Kappa with each co-reviewer ---------------------------------------------------------------


def _answer_values(row: dict) -> dict[str, Any]:
    return {
        "relevance": row["relevance"],
        "abstention": row["abstention"] or None,
        "failure_labels": row["failure_labels"],
    }


def _kappa_with(
    assignments: list[dict],
    claim_labels: dict[int, list],
    fields: dict[str, tuple[tuple, Any]],
    *,
    n_boot: int,
    seed: int,
) -> dict[int, dict[int, dict]]:
    """reviewer -> co-reviewer -> field -> agreement (n, raw agreement, kappa, ci95 ...) over
    the items both labelled: claims for claim fields (each citation both judged for
    citation), answers for answer fields."""
    by_answer: dict[int, list[dict]] = defaultdict(list)
    for row in assignments:
        by_answer[row["answer_id"]].append(row)
    vocab = {name: set(labels) for name, (labels, _) in fields.items()}
    # (low, high) -> field -> ([a], [b], [answer])
    items: dict[tuple[int, int], dict[str, tuple[list, list, list]]] = defaultdict(
        lambda: {name: ([], [], []) for name in fields}
    )

    def add(pair_items, name, a, b, answer_id):
        if name in pair_items and a in vocab[name] and b in vocab[name]:
            column_a, column_b, groups = pair_items[name]
            column_a.append(a)
            column_b.append(b)
            groups.append(answer_id)

    for answer_id, rows in by_answer.items():
        rows = sorted(rows, key=lambda r: r["reviewer_id"])
        for first, second in combinations(rows, 2):
            pair_items = items[(first["reviewer_id"], second["reviewer_id"])]
            a_answer, b_answer = _answer_values(first), _answer_values(second)
            add(pair_items, "relevance", a_answer["relevance"], b_answer["relevance"], answer_id)
            if a_answer["abstention"] and b_answer["abstention"]:
                add(
                    pair_items,
                    "abstention",
                    a_answer["abstention"],
                    b_answer["abstention"],
                    answer_id,
                )
            b_claims = {claim: values for claim, _, values in claim_labels.get(second["pk"], ())}
            for claim, _, a in claim_labels.get(first["pk"], ()):
                b = b_claims.get(claim)
                if b is None:
                    continue
                for name in ("support", "support_binary", "severity", "requires_evidence"):
                    add(pair_items, name, a.get(name), b.get(name), answer_id)
                if "citation" in pair_items:
                    ca, cb = a.get("citations") or {}, b.get("citations") or {}
                    for cited in sorted(ca.keys() & cb.keys()):
                        add(pair_items, "citation", ca[cited], cb[cited], answer_id)
    out: dict[int, dict[int, dict]] = defaultdict(dict)
    for (low, high), by_field in items.items():
        for side, other in ((low, high), (high, low)):
            out[side][other] = {}
        for name, (a, b, groups) in by_field.items():
            labels, weights = fields[name]
            result = field_agreement(
                a, b, labels=labels, weights=weights, groups=groups, n_boot=n_boot, seed=seed
            )
            entry = {
                "n": result.n,
                "raw_agreement": result.raw_agreement,
                "kappa": result.kappa,
                "ci95": list(result.ci95) if result.ci95 is not None else None,
                "weighting": result.weighting,
                "kappa_undefined_reason": result.kappa_undefined_reason,
            }
            out[low][high][name] = out[high][low][name] = entry
    return out


# --- Overruled in adjudication -----------------------------------------------------------------


def _decided(name: str, value: Any) -> Hashable:
    """A lead's decided value as comparable() reads a reviewer's."""
    if name == "evidence":
        return tuple(sorted((value or {}).get("evidence_ids") or ()))
    if name == "failure_labels":
        return tuple(sorted(value or ()))
    if name == "citations":
        return tuple(sorted((value or {}).items()))
    if name == "abstention":
        return value or None
    return value


def _overruled(
    project: Project, assignments: list[dict], claim_labels: dict[int, list]
) -> dict[int, list[tuple[Hashable, Hashable]]]:
    """reviewer -> (their value, the lead's) for each field of theirs a lead decided (the
    latest decision of that item and field). One query."""
    latest: dict[tuple[int, int | None, str], Any] = {}
    decisions = Decision.objects.filter(answer__project=project).order_by("decided_at", "pk")
    for answer_id, claim_id, name, value in decisions.values_list(
        "answer_id", "claim_id", "field", "value"
    ):
        if name not in _DERIVED:
            latest[(answer_id, claim_id, name)] = value
    by_item: dict[tuple[int, int | None], list[tuple[str, Any]]] = defaultdict(list)
    for (answer_id, claim_id, name), value in latest.items():
        by_item[(answer_id, claim_id)].append((name, value))
    out: dict[int, list[tuple[Hashable, Hashable]]] = defaultdict(list)
    if not by_item:
        return out
    for row in assignments:
        answer_id, reviewer = row["answer_id"], row["reviewer_id"]
        for name, value in by_item.get((answer_id, None), ()):
            given = _answer_values(row)
            mine = given["abstention"] if name == "abstention" else comparable(name, given)
            out[reviewer].append((mine, _decided(name, value)))
        for claim, _, values in claim_labels.get(row["pk"], ()):
            for name, value in by_item.get((answer_id, claim), ()):
                out[reviewer].append((comparable(name, values), _decided(name, value)))
    return out


# --- Gold checks ---------------------------------------------------------------------------------

# The check fields whose value is one label from a list (kappa against gold is defined);
# citations and failure labels are compared whole (accuracy only).
_CHECK_LABELS = {"citations": None, "failure_labels": None}


def check_fields(schema: LabelSchema) -> dict[str, tuple[tuple, Any] | None]:
    """The fields a check compares (annotate.checks.selectors), each with its label list and
    weighting, or None when it has none."""
    names = [n for n in (*claim_fields(schema), *answer_fields(schema)) if n not in NOT_COMPARED]
    out: dict[str, tuple[tuple, Any] | None] = {}
    for name in names:
        if name in _CHECK_LABELS:
            out[name] = None
        else:
            labels = schema.support_labels if name == "support" else LABELS[name]
            out[name] = (labels, FIELDS[name].weights)
    return out


def claims_per_check(project: Project, assignments: list[dict], claims_of: dict[int, int]) -> float:
    """The claims a check holds on average (each is one trial of the drift chart): over the
    answers marked as checks or labelled as one; before there is any, over the project's
    answers, the checks it will have. At least 1."""
    answers = set(GoldCheck.objects.filter(project=project).values_list("answer_id", flat=True))
    answers |= {a["answer_id"] for a in assignments if a["is_check"]}
    counts = [claims_of.get(pk, 0) for pk in answers] if answers else list(claims_of.values())
    return max(1.0, sum(counts) / len(counts)) if counts else 1.0


def latest_clearances(project: Project) -> dict[int, dict]:
    """reviewer -> the latest clearance of their drift flag: {by, at, trials}. One query."""
    out: dict[int, dict] = {}
    rows = DriftClearance.objects.filter(project=project).order_by("cleared_at", "pk")
    for reviewer_id, by, at, seen in rows.values_list(
        "reviewer_id", "cleared_by__username", "cleared_at", "trials"
    ):
        out[reviewer_id] = {"by": by, "at": at.isoformat(), "trials": seen}
    return out


def drift_inputs(project: Project, reviewer_id: int) -> tuple[list[bool], float, dict | None]:
    """What one reviewer's drift chart runs on, read as the report reads it: (their check
    errors in the chart's order, the project's claims per check, their latest clearance).
    For the lead's action of clearing the flag (evaluation.clearances)."""
    assignments = list(
        Assignment.objects.filter(
            project=project, status=Assignment.Status.SUBMITTED, is_check=True
        ).values("answer_id", "is_check")
    )
    claims_of = dict(
        Claim.objects.filter(answer__project=project)
        .values("answer_id")
        .annotate(n=Count("pk"))
        .values_list("answer_id", "n")
    )
    errors = drift_errors(project_checks(project).get(reviewer_id, ()))
    per_check = claims_per_check(project, assignments, claims_of)
    return errors, per_check, latest_clearances(project).get(reviewer_id)


def project_checks(project: Project) -> dict[int, list[CheckLabel]]:
    """reviewer -> their labels on gold checks, check by check in the order they submitted
    them (claims in their order), each beside the check's gold: annotate.checks' results.
    A check is named by its task number, what the lead's pages call an answer."""
    out: dict[int, list[CheckLabel]] = {}
    for reviewer_id, reviewer in check_results(project).items():
        labels = out[reviewer_id] = []
        for check in reviewer.checks:
            for name, items in check.fields.items():
                for item in items:
                    labels.append(
                        CheckLabel(
                            check=check.task_number,
                            field=name,
                            given=item.label,
                            gold=item.gold,
                            group=check.assignment_id,
                            correct=item.correct,
                        )
                    )
    return out
