"""What a bundle import will do, before it writes anything: every record sorted into new,
changed or unchanged (plan_import), or the import refused with every reason; what a replace
would delete (Deletions); and what the import did (ImportResult)."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from django.db.models import Count

from annotate.common.errors import ServiceError
from annotate.imports.lines import BundleError, BundleInvalid
from annotate.imports.records import (
    AnswerRecord,
    Bundle,
    ClaimRecord,
    RetrievedRecord,
    content_hash,
)
from annotate.models import Answer, Citation, Claim, Project, RetrievedPassage
from annotate.schema import LabelSchema
from evaluation.models import Verdict  # the judge app's rows go with the answers


@dataclass
class ImportResult:
    project: Project
    created_project: bool
    counts: dict[str, Counter] = field(default_factory=dict)
    proposed_claims: int = 0
    # (answer_id, {field: {"old", "new"}}, whether it was labelled) of each correction
    corrections: list[tuple[str, dict, bool]] = field(default_factory=list)
    # (before, after) when the import set the project's label schema to another one (a new
    # project's "before" is the default): which labels are accepted changed with it.
    label_schema_change: tuple[LabelSchema, LabelSchema] | None = None

    def summary(self) -> str:
        parts = []
        for kind in ("variant", "passage", "case", "answer", "claim", "judgment"):
            counter = self.counts.get(kind, Counter())
            detail = ", ".join(f"{n} {state}" for state, n in sorted(counter.items()) if n)
            parts.append(f"{kind}s: {detail or 'none'}")
        if self.label_schema_change:
            before, after = self.label_schema_change
            parts.append(
                f"label schema: {after.describe()}"
                if self.created_project
                else f"label schema changed: {after.changes_from(before)}"
            )
        return "; ".join(parts)


@dataclass
class Deletions:
    """What a `replace` re-import would delete: the answers it replaces (re-created from the
    file, with their claims) and, for good, every judge verdict about them."""

    answers: list[tuple[int, str]]  # (line, answer_id)
    claims: int
    verdicts: dict[str, int]  # judge run -> verdicts deleted

    def lines(self) -> list[str]:
        shown = ", ".join(f"'{aid}' (line {line})" for line, aid in self.answers[:10])
        more = f" and {len(self.answers) - 10} more" if len(self.answers) > 10 else ""
        out = [
            f"{len(self.answers)} answer(s) would be deleted and imported again from the file: "
            f"{shown}{more}",
            f"their {self.claims} claim(s) would be replaced by the file's (or proposed again)",
        ]
        for run, n in sorted(self.verdicts.items()):
            out.append(f"{n} verdict(s) of judge run '{run}' about them would be deleted for good")
        return out


class DeletionsNotConfirmed(ServiceError):
    """A replace that deletes data needs the caller to confirm it; nothing was written."""

    def __init__(self, deletions: Deletions):
        self.deletions = deletions
        super().__init__(
            "This replace deletes data: " + "; ".join(deletions.lines()) + ". Confirm to go on."
        )


def deletions_of(answer_pks: list[int], records) -> Deletions:
    verdicts: Counter = Counter()
    for start in range(0, len(answer_pks), 500):
        chunk = answer_pks[start : start + 500]
        verdicts.update(
            dict(
                Verdict.objects.filter(answer_id__in=chunk)
                .values("run__name")
                .annotate(n=Count("pk"))
                .order_by()
                .values_list("run__name", "n")
            )
        )
    claims = sum(
        Claim.objects.filter(answer_id__in=answer_pks[start : start + 500]).count()
        for start in range(0, len(answer_pks), 500)
    )
    return Deletions(
        answers=[(r.line, r.answer_id) for r in records], claims=claims, verdicts=dict(verdicts)
    )


# What an answer may change after reviewers labelled it: how the run went, never what they
# saw. Latency and cost are not shown on the labelling screen, nor are retrieval scores (the
# passages are shown in rank order); the text, the claims, the passages retrieved, their
# ranks and in_prompt, `abstained` (it decides whether the abstention label is asked for), the
# case, the variant and the sample all are, or decide what the answer is.
CORRECTABLE = ("elapsed_ms", "request_cost", "retrieved.score")


@dataclass
class Correction:
    record: AnswerRecord
    pk: int
    changes: dict[str, dict]
    labelled: bool


@dataclass
class ImportPlan:
    new: dict[str, list] = field(default_factory=dict)
    changed: dict[str, list] = field(default_factory=dict)
    unchanged: Counter = field(default_factory=Counter)
    corrected: list[Correction] = field(default_factory=list)


def plan_import(
    bundle: Bundle, existing, project, *, replace: bool, labelled: set[int]
) -> ImportPlan:
    """Sort every record into new / changed / unchanged, or refuse the import."""
    plan = ImportPlan()
    errors: list[BundleError] = []
    has_labels = bool(labelled)
    if (
        project is not None
        and bundle.label_schema is not None
        and bundle.label_schema != project.schema
        and not project.is_draft
    ):
        errors.append(
            BundleError(
                1,
                f"label_schema differs from the project's ({project.schema.describe()}); "
                "the schema is locked once labelling opens: drop it from the header or "
                "make it match",
            )
        )
    groups = {
        "variant": bundle.variants.values(),
        "passage": bundle.passages.values(),
        "case": bundle.cases.values(),
        "answer": bundle.answers.values(),
    }
    differing: list[tuple[AnswerRecord, int]] = []
    for kind, records in groups.items():
        plan.new[kind], plan.changed[kind] = [], []
        for record in records:
            key = record.name if kind == "variant" else getattr(record, f"{kind}_id")
            known = existing[kind].get(key)
            if known is None:
                plan.new[kind].append(record)
            elif known[1] == content_hash(record.row()):
                plan.unchanged[kind] += 1
            elif kind == "answer":
                differing.append((record, known[0]))
            elif not replace:
                errors.append(
                    BundleError(
                        record.line,
                        f"{kind} '{key}' already exists in this project with different "
                        "content; import with replace to overwrite unlabelled items",
                    )
                )
            elif has_labels:
                errors.append(
                    BundleError(
                        record.line,
                        f"{kind} '{key}' has changed but labelling has used it; "
                        "labelled items are never replaced",
                    )
                )
            else:
                plan.changed[kind].append(record)
    errors += _plan_answers(plan, differing, replace=replace, labelled=labelled)
    errors += _taken_samples(plan, existing)
    plan.new["judgment"], plan.changed["judgment"] = [], []
    for key, record in bundle.judgments.items():
        known = existing["judgment"].get(key)
        if known is None:
            plan.new["judgment"].append(record)
        elif known[1] == record.grade:
            plan.unchanged["judgment"] += 1
        elif replace and not has_labels:
            plan.changed["judgment"].append(record)
        else:
            errors.append(
                BundleError(
                    record.line,
                    f"judgment for case '{key[0]}' and passage '{key[1]}' already exists with "
                    f"grade {known[1]}; import with replace to overwrite it",
                )
            )
    if project is not None and project.state != Project.State.DRAFT:
        for record in plan.new["answer"] + plan.changed["answer"]:
            if record.claims is None:
                errors.append(
                    BundleError(
                        record.line,
                        "labelling is open, so claims can no longer be proposed and reviewed: "
                        "give this answer its 'claims'",
                    )
                )
    if errors:
        raise BundleInvalid(errors)
    return plan


def _plan_answers(
    plan: ImportPlan,
    differing: list[tuple[AnswerRecord, int]],
    *,
    replace: bool,
    labelled: set[int],
) -> list[BundleError]:
    """Answers whose content hash differs from the one stored. The hash is of the line as it
    was imported, so an answer exported (claims proposed by the app now written out) or
    imported before a default changed differs without anything having changed: each is
    compared with what the database holds. Equal: unchanged. Only CORRECTABLE fields differ:
    corrected in place with `replace`, labels kept. Anything else: replaced with `replace` if
    nobody labelled it, refused otherwise."""
    errors = []
    stored = _stored_answers([pk for _, pk in differing])
    for record, pk in differing:
        changes, others = _differences(record, stored[pk])
        if not changes and not others:
            plan.unchanged["answer"] += 1
        elif not replace:
            errors.append(
                BundleError(
                    record.line,
                    f"answer '{record.answer_id}' already exists in this project with different "
                    f"content ({', '.join([*changes, *others])}); import with replace to "
                    "overwrite unlabelled items",
                )
            )
        elif not others:
            plan.corrected.append(Correction(record, pk, changes, pk in labelled))
        elif pk in labelled:
            errors.append(
                BundleError(
                    record.line,
                    f"answer '{record.answer_id}' has changed ({', '.join(others)}) but "
                    "labelling has used it; labelled items are never replaced (only "
                    "elapsed_ms, request_cost and retrieval scores can be corrected)",
                )
            )
        else:
            plan.changed["answer"].append(record)
    return errors


def _stored_answers(pks: list[int]) -> dict[int, AnswerRecord]:
    """Answers as the database holds them, as records (so that `row()` compares them): four
    flat queries a chunk of 500. Model instances with their prefetched rows were about half of
    a 10,000-answer correction import's 17 s (profiled), and its memory (823 MB)."""
    out: dict[int, AnswerRecord] = {}
    pks = sorted(pks)
    for start in range(0, len(pks), 500):  # SQLite caps the parameters of one query
        chunk = pks[start : start + 500]
        retrieved: dict[int, list[RetrievedRecord]] = defaultdict(list)
        for answer_pk, *passage in (
            RetrievedPassage.objects.filter(answer_id__among=chunk)
            .order_by("answer_id", "rank")
            .values_list("answer_id", "passage__passage_id", "rank", "score", "in_prompt")
        ):
            retrieved[answer_pk].append(RetrievedRecord(*passage))
        cited: dict[int, list[str]] = defaultdict(list)
        for claim_pk, cited_id in (
            Citation.objects.filter(claim__answer_id__among=chunk)
            .order_by("claim_id", "ordinal")
            .values_list("claim_id", "cited_id")
        ):
            cited[claim_pk].append(cited_id)
        claims: dict[int, list[ClaimRecord]] = defaultdict(list)
        for claim_pk, answer_pk, *span in (
            Claim.objects.filter(answer_id__among=chunk)
            .order_by("answer_id", "ordinal")
            .values_list("pk", "answer_id", "text", "start", "end")
        ):
            claims[answer_pk].append(ClaimRecord(*span, tuple(cited[claim_pk])))
        for pk, *fields in Answer.objects.filter(pk__among=chunk).values_list(
            "pk",
            "answer_id",
            "case__case_id",
            "variant__name",
            "text",
            "sample",
            "abstained",
            "elapsed_ms",
            "request_cost",
        ):
            out[pk] = AnswerRecord(0, *fields, retrieved=retrieved[pk], claims=claims[pk])
    return out


def _differences(record: AnswerRecord, stored: AnswerRecord) -> tuple[dict[str, dict], list[str]]:
    """(changes of CORRECTABLE fields as {field: {"old", "new"}}, names of the other fields
    that differ). Claims count only when the line gives them: without, the app proposed them,
    and a lead may have edited them since."""
    new, old = record.row(), stored.row()
    if record.claims is None:
        old.pop("claims", None)
    changes = {}
    for key in ("elapsed_ms", "request_cost"):
        if not _same(new[key], old[key]):
            changes[key] = {"old": _json_number(old[key]), "new": new[key]}
    ranking = [{k: v for k, v in r.items() if k != "score"} for r in new["retrieved"]]
    if ranking == [{k: v for k, v in r.items() if k != "score"} for r in old["retrieved"]]:
        for a, b in zip(new["retrieved"], old["retrieved"], strict=True):
            if not _same(a["score"], b["score"]):
                changes[f"retrieved[rank {a['rank']}].score"] = {
                    "old": _json_number(b["score"]),
                    "new": a["score"],
                }
    others = [
        key
        for key in new
        if key not in ("elapsed_ms", "request_cost", "retrieved") and new[key] != old.get(key)
    ]
    if ranking != [{k: v for k, v in r.items() if k != "score"} for r in old["retrieved"]]:
        others.append("retrieved")
    return changes, others


def _same(a, b) -> bool:
    return a == b  # both canonical (1200.0 is 1200); NaN, stored before, differs from all


def _json_number(value):
    """A stored figure as JSON can hold it: NaN and infinities (from before imports refused
    them) as their text."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _taken_samples(plan: ImportPlan, existing) -> list[BundleError]:
    """A (case, variant, sample) is one generation and has one answer id. The bundle's own
    duplicates were found by the parser; here, those held by answers already in the project
    (less the ones this import replaces, whose old key is freed)."""
    replaced = {record.answer_id for record in plan.changed["answer"]}
    held = {key: aid for key, aid in existing["sample"].items() if aid not in replaced}
    errors = []
    for record in plan.new["answer"] + plan.changed["answer"]:
        other = held.get((record.case_id, record.variant, record.sample))
        if other is not None and other != record.answer_id:
            errors.append(
                BundleError(
                    record.line,
                    f"case '{record.case_id}', variant '{record.variant}', sample "
                    f"{record.sample} is already answered by '{other}' in this project (one "
                    f"generation, one answer_id): give this answer another sample number, or "
                    f"the answer_id '{other}'",
                )
            )
    return errors
