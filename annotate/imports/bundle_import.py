"""Importing bundles: parse, plan (new / changed / unchanged, or refuse), write in bulk."""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count

from annotate.access import may_create_projects
from annotate.common import bulk, collector, safe_json
from annotate.common.errors import NotAllowed, ServiceError
from annotate.imports.bundles import parse_bundle
from annotate.imports.claims import propose_claims
from annotate.imports.lines import BundleError, BundleInvalid
from annotate.imports.records import (
    AnswerRecord,
    Bundle,
    ClaimRecord,
    RetrievedRecord,
    content_hash,
)
from annotate.models import (
    Answer,
    AnswerCorrection,
    Assignment,
    Case,
    Citation,
    Claim,
    Evidence,
    Judgment,
    Passage,
    Project,
    RetrievedPassage,
    Role,
    Variant,
)
from annotate.schema import LabelSchema
from annotate.services.members import add_member
from annotate.services.opening import queue_keys, renumber_for_late_answers


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


def _existing(project: Project | None) -> dict[str, dict]:
    """Id -> (pk, content_hash) for what the project already holds."""
    if project is None:
        return {k: {} for k in ("passage", "variant", "case", "answer", "judgment", "sample")}
    return {
        "passage": {
            pid: (pk, h, text)
            for pk, pid, h, text in project.passages.values_list(
                "pk", "passage_id", "content_hash", "text"
            )
        },
        "variant": {
            n: (pk, h) for pk, n, h in project.variants.values_list("pk", "name", "content_hash")
        },
        "case": {
            c: (pk, h) for pk, c, h in project.cases.values_list("pk", "case_id", "content_hash")
        },
        "answer": {
            a: (pk, h)
            for pk, a, h in project.answers.values_list("pk", "answer_id", "content_hash")
        },
        # The database's unique (case, variant, sample), mirrored so that a new answer id for
        # a generation the project already holds is a line error, not an IntegrityError.
        "sample": {
            (c, v, s): a
            for a, c, v, s in project.answers.values_list(
                "answer_id", "case__case_id", "variant__name", "sample"
            )
        },
        "judgment": {
            (c, p): (pk, g)
            for pk, c, p, g in Judgment.objects.filter(case__project=project).values_list(
                "pk", "case__case_id", "passage__passage_id", "grade"
            )
        },
    }


def _labelled_answer_pks(project: Project | None) -> set[int]:
    if project is None:
        return set()
    return set(
        Assignment.objects.filter(answer__project=project).values_list("answer_id", flat=True)
    )


@collector.paused()  # see annotate.common.collector: 7.04 -> 5.98 s for the bench's big bundle
def import_bundle(
    *,
    lines: Iterable[bytes | str],
    project_slug: str,
    name: str | None = None,
    replace: bool = False,
    confirm_deletions: bool | list[str] = False,
    progress: Callable[[str, int], None] | None = None,
) -> ImportResult:
    """Import a bundle into a project, creating the project if needed. All or nothing:
    raises BundleInvalid with every problem found and writes nothing.

    A `replace` that would delete anything -- the answers it replaces take their claims and
    every judge verdict about them along -- raises DeletionsNotConfirmed listing it all, and
    writes nothing, unless `confirm_deletions`: True, or the very lines a lead was shown
    (Deletions.lines()) -- a confirmation given for those does not cover what the replace
    would delete now if that has changed since (another judge run's verdicts, say)."""
    project = Project.objects.filter(slug=project_slug).first()
    if project is None:
        _check_new_project(project_slug, name)
    existing = _existing(project)
    bundle = parse_bundle(
        lines,
        corpus_version=project.corpus_version if project else None,
        known_passages={pid: v[2] for pid, v in existing["passage"].items()},
        known_cases=existing["case"].keys(),
        progress=(lambda n: progress("parsed", n)) if progress else None,
    )
    labelled = _labelled_answer_pks(project)
    plan = _plan(bundle, existing, project, replace=replace, labelled=labelled)
    if plan.changed["answer"] and confirm_deletions is not True:
        stale = [existing["answer"][a.answer_id][0] for a in plan.changed["answer"]]
        deletions = deletions_of(stale, plan.changed["answer"])
        if confirm_deletions != deletions.lines():
            raise DeletionsNotConfirmed(deletions)
    with transaction.atomic():
        created_project = project is None
        schema_before = LabelSchema()
        if project is None:
            project = Project.objects.create(
                slug=project_slug,
                name=name or bundle.name or project_slug,
                corpus_version=bundle.corpus_version,
                label_schema=(bundle.label_schema or LabelSchema()).as_dict(),
            )
        else:
            state_read = project.state
            project = Project.objects.select_for_update().get(pk=project.pk)
            _still_as_planned(project, state_read, existing, plan)
            schema_before = project.schema
            if bundle.label_schema is not None and bundle.label_schema != project.schema:
                project.label_schema = bundle.label_schema.as_dict()
                project.save(update_fields=["label_schema"])
        result = ImportResult(project=project, created_project=created_project)
        if bundle.label_schema is not None and bundle.label_schema != schema_before:
            result.label_schema_change = (schema_before, bundle.label_schema)
        _write(project, bundle, existing, plan, result, progress)
        result.counts["claim"]["unchanged"] = _claims_kept(bundle, existing, plan)
        _maintain(result)
    return result


def _claims_kept(bundle: Bundle, existing, plan) -> int:
    """The claims of the file's answers that the project held and keeps (unchanged or
    corrected in place), so that a re-import says 'claims: 120 unchanged', not 'none'."""
    replaced = {record.answer_id for record in plan.changed["answer"]}
    pks = sorted(
        existing["answer"][answer_id][0]
        for answer_id in bundle.answers
        if answer_id in existing["answer"] and answer_id not in replaced
    )
    return sum(
        Claim.objects.filter(answer_id__among=pks[start : start + 500]).count()
        for start in range(0, len(pks), 500)  # SQLite caps the parameters of one query
    )


def _still_as_planned(project: Project, state_read: str, existing: dict, plan) -> None:
    """The plan was made from the project as it was read, before the file was parsed (which
    takes a while for a big one), without locks: a lead may have opened labelling meanwhile,
    or a reviewer taken an answer this replace deletes. Under the project's row lock, with
    the replaced answers' rows locked too (next_task creates an assignment only while holding
    its answer's row, and skips rows locked here), refuse if either happened: deleting the
    answer would delete the reviewer's labels, and what the plan allows in set-up differs
    from what it allows once labelling is open."""
    if project.state != state_read:
        raise ServiceError(
            f"The project changed from {state_read} to {project.state} while this file was "
            "being read: nothing was imported; import it again."
        )
    stale = [existing["answer"][a.answer_id][0] for a in plan.changed["answer"]]
    if not stale:
        return
    list(Answer.objects.select_for_update().filter(pk__in=stale).values_list("pk"))
    taken = sorted(
        Answer.objects.filter(pk__in=stale, assignments__isnull=False)
        .values_list("answer_id", flat=True)
        .distinct()
    )
    if taken:
        shown = ", ".join(taken[:5]) + (f" and {len(taken) - 5} more" if len(taken) > 5 else "")
        raise ServiceError(
            f"A reviewer took {shown} while this file was being read: replacing it would "
            "delete their labels. Nothing was imported; import the file again, and it is "
            "checked against the labelled answer."
        )


def _maintain(result: ImportResult) -> None:
    """Statistics for the tables this import filled, and a vacuum of those it rewrote, once
    it commits; nothing when nothing was written (a re-import of the same file)."""
    counts = result.counts
    wrote = {kind: counts.get(kind, Counter()) for kind in counts}
    changed = any(c["created"] or c["replaced"] or c.get("corrected") for c in wrote.values())
    if not changed:
        return
    filled = [Passage, Case, Evidence, Answer, RetrievedPassage, Claim, Citation, Judgment]
    rewritten = []
    if any(c["replaced"] or c.get("corrected") for c in wrote.values()):
        rewritten = [Passage, Case, Evidence, Answer, RetrievedPassage, Claim, Citation]
    if counts.get("answer", Counter())["created"]:
        # Late answers renumber the untaken ones; and new answers' pages are not yet marked
        # all-visible, which only a vacuum does: until then the reviewer's progress count is
        # no index-only scan of the open queue (measured: 8.4 ms instead of 1.2 ms per
        # labelling page on the 10k project after an import with ANALYZE alone).
        rewritten.append(Answer)
    bulk.after_commit(analyze=filled, vacuum=rewritten)


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
    from evaluation.models import Verdict  # the judge app's rows go with the answers

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


def _check_new_project(slug: str, name: str | None) -> None:
    """The new project's slug and name, as their columns and URLs take them (the API's
    serializers check the same; a script calling the command does not pass through them)."""
    problems = []
    slug_field = Project._meta.get_field("slug")
    if not isinstance(slug, str) or not _SLUG.fullmatch(slug):
        problems.append("the project slug may hold only letters, digits, hyphens and underscores")
    elif len(slug) > slug_field.max_length:
        problems.append(f"the project slug is longer than {slug_field.max_length} characters")
    name_limit = Project._meta.get_field("name").max_length
    if name is not None and len(name) > name_limit:
        problems.append(f"the project name is longer than {name_limit} characters")
    elif name is not None and safe_json.text_problem(name):
        problems.append(f"the project name: {safe_json.text_problem(name)}")
    if problems:
        raise BundleInvalid([BundleError(0, p) for p in problems])


_SLUG = re.compile(r"[-a-zA-Z0-9_]+")


# What an answer may change after reviewers labelled it: how the run went, never what they
# saw. Latency and cost are not shown on the labelling screen, nor are retrieval scores (the
# passages are shown in rank order); the text, the claims, the passages retrieved, their
# ranks and in_prompt, `abstained` (it decides whether the abstention label is asked for), the
# case, the variant and the sample all are, or decide what the answer is.
CORRECTABLE = ("elapsed_ms", "request_cost", "retrieved.score")


@dataclass
class _Correction:
    record: AnswerRecord
    pk: int
    changes: dict[str, dict]
    labelled: bool


@dataclass
class _Plan:
    new: dict[str, list] = field(default_factory=dict)
    changed: dict[str, list] = field(default_factory=dict)
    unchanged: Counter = field(default_factory=Counter)
    corrected: list[_Correction] = field(default_factory=list)


def _plan(bundle: Bundle, existing, project, *, replace: bool, labelled: set[int]) -> _Plan:
    """Sort every record into new / changed / unchanged, or refuse the import."""
    plan = _Plan()
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
    plan: _Plan, differing: list[tuple[AnswerRecord, int]], *, replace: bool, labelled: set[int]
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
            plan.corrected.append(_Correction(record, pk, changes, pk in labelled))
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


def _taken_samples(plan: _Plan, existing) -> list[BundleError]:
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


def _write(project, bundle: Bundle, existing, plan: _Plan, result: ImportResult, progress):
    def report(step: str, n: int) -> None:
        if progress:
            progress(step, n)

    counts = result.counts
    for kind in ("variant", "passage", "case", "answer", "judgment"):
        counts[kind] = Counter(unchanged=plan.unchanged[kind])
    counts["claim"] = Counter()

    # Replaced answers are deleted and re-inserted; other kinds are updated in place.
    stale = [existing["answer"][a.answer_id][0] for a in plan.changed["answer"]]
    if stale:
        Answer.objects.filter(pk__in=stale).delete()
        plan.new["answer"].extend(plan.changed["answer"])
        counts["answer"]["replaced"] = len(stale)

    variant_pk = {name: v[0] for name, v in existing["variant"].items()}
    passage_pk = {pid: v[0] for pid, v in existing["passage"].items()}
    case_pk = {cid: v[0] for cid, v in existing["case"].items()}

    # Variants named only by answers are created bare.
    bare = {a.variant for a in plan.new["answer"]} - variant_pk.keys() - bundle.variants.keys()
    from annotate.imports.records import VariantRecord

    new_variants = plan.new["variant"] + [VariantRecord(line=0, name=n) for n in sorted(bare)]
    ids = bulk.allocate_ids(Variant, len(new_variants))
    variant_pk.update({v.name: pk for v, pk in zip(new_variants, ids, strict=True)})
    bulk.insert_rows(
        Variant,
        ["id", "project_id", "name", "description", "model", "settings", "content_hash"],
        (
            (pk, project.pk, v.name, v.description, v.model, v.settings, content_hash(v.row()))
            for v, pk in zip(new_variants, ids, strict=True)
        ),
    )
    counts["variant"]["created"] = len(new_variants)
    for v in plan.changed["variant"]:
        Variant.objects.filter(pk=variant_pk[v.name]).update(
            description=v.description,
            model=v.model,
            settings=v.settings,
            content_hash=content_hash(v.row()),
        )
    counts["variant"]["replaced"] = len(plan.changed["variant"])

    ids = bulk.allocate_ids(Passage, len(plan.new["passage"]))
    passage_pk.update({p.passage_id: pk for p, pk in zip(plan.new["passage"], ids, strict=True)})
    bulk.insert_rows(
        Passage,
        ["id", "project_id", "passage_id", "text", "document", "location", "title", "content_hash"],
        (
            (
                pk,
                project.pk,
                p.passage_id,
                p.text,
                p.document,
                p.location,
                p.title,
                content_hash(p.row()),
            )
            for p, pk in zip(plan.new["passage"], ids, strict=True)
        ),
    )
    counts["passage"]["created"] = len(plan.new["passage"])
    for p in plan.changed["passage"]:
        Passage.objects.filter(pk=passage_pk[p.passage_id]).update(
            text=p.text,
            document=p.document,
            location=p.location,
            title=p.title,
            content_hash=content_hash(p.row()),
        )
    counts["passage"]["replaced"] = len(plan.changed["passage"])
    report("passages", len(plan.new["passage"]))

    ids = bulk.allocate_ids(Case, len(plan.new["case"]))
    case_pk.update({c.case_id: pk for c, pk in zip(plan.new["case"], ids, strict=True)})
    bulk.insert_rows(
        Case,
        [
            "id",
            "project_id",
            "case_id",
            "question",
            "answerable",
            "adversarial",
            "required_facts",
            "forbidden_claims",
            "split",
            "checked_documents",
            "tags",
            "reference",
            "evidence_named",
            "content_hash",
        ],
        (
            (
                pk,
                project.pk,
                c.case_id,
                c.question,
                c.answerable,
                c.adversarial,
                c.required_facts,
                c.forbidden_claims,
                c.split,
                c.checked_documents,
                c.tags,
                c.reference,
                len(c.evidence),
                content_hash(c.row()),
            )
            for c, pk in zip(plan.new["case"], ids, strict=True)
        ),
    )
    for c in plan.changed["case"]:
        Case.objects.filter(pk=case_pk[c.case_id]).update(
            question=c.question,
            answerable=c.answerable,
            adversarial=c.adversarial,
            required_facts=c.required_facts,
            forbidden_claims=c.forbidden_claims,
            split=c.split,
            checked_documents=c.checked_documents,
            tags=c.tags,
            reference=c.reference,
            evidence_named=len(c.evidence),
            content_hash=content_hash(c.row()),
        )
    Evidence.objects.filter(case_id__in=[case_pk[c.case_id] for c in plan.changed["case"]]).delete()
    evidence = [
        (case_pk[c.case_id], i, e)
        for c in plan.new["case"] + plan.changed["case"]
        for i, e in enumerate(c.evidence)
    ]
    ids = bulk.allocate_ids(Evidence, len(evidence))
    bulk.insert_rows(
        Evidence,
        ["id", "case_id", "passage_id", "ordinal", "quote", "location"],
        (
            (pk, case, passage_pk[e.passage_id], i, e.quote, e.location)
            for (case, i, e), pk in zip(evidence, ids, strict=True)
        ),
    )
    counts["case"]["created"] = len(plan.new["case"])
    counts["case"]["replaced"] = len(plan.changed["case"])
    report("cases", len(plan.new["case"]))

    _write_answers(project, plan.new["answer"], variant_pk, passage_pk, case_pk, result, report)
    counts["answer"]["created"] = len(plan.new["answer"]) - counts["answer"]["replaced"]
    _write_corrections(plan.corrected, result)
    counts["answer"]["corrected"] = len(plan.corrected)

    judgments = plan.new["judgment"]
    ids = bulk.allocate_ids(Judgment, len(judgments))
    bulk.insert_rows(
        Judgment,
        ["id", "case_id", "passage_id", "grade"],
        (
            (pk, case_pk[j.case_id], passage_pk[j.passage_id], j.grade)
            for j, pk in zip(judgments, ids, strict=True)
        ),
    )
    for j in plan.changed["judgment"]:
        Judgment.objects.filter(pk=existing["judgment"][(j.case_id, j.passage_id)][0]).update(
            grade=j.grade
        )
    counts["judgment"]["created"] = len(judgments)
    counts["judgment"]["replaced"] = len(plan.changed["judgment"])


def _write_answers(
    project,
    answers: list[AnswerRecord],
    variant_pk,
    passage_pk,
    case_pk,
    result: ImportResult,
    report,
) -> None:
    ids = bulk.allocate_ids(Answer, len(answers))
    task_numbers: list[int | None] = [None] * len(answers)
    keys: list[float | None] = [None] * len(answers)
    if project.state != Project.State.DRAFT:
        task_numbers = renumber_for_late_answers(project, len(answers))
        keys = queue_keys(len(answers))
    bulk.insert_rows(
        Answer,
        [
            "id",
            "project_id",
            "case_id",
            "variant_id",
            "answer_id",
            "sample",
            "text",
            "abstained",
            "elapsed_ms",
            "request_cost",
            "task_number",
            "queue_key",
            "full",
            "content_hash",
        ],
        (
            (
                pk,
                project.pk,
                case_pk[a.case_id],
                variant_pk[a.variant],
                a.answer_id,
                a.sample,
                a.text,
                a.abstained,
                a.elapsed_ms,
                a.request_cost,
                number,
                key,
                False,
                content_hash(a.row()),
            )
            for a, pk, number, key in zip(answers, ids, task_numbers, keys, strict=True)
        ),
    )
    report("answers", len(answers))

    retrieved = [(pk, r) for a, pk in zip(answers, ids, strict=True) for r in a.retrieved]
    # Nothing refers to a retrieved passage or a citation: their ids come from the table.
    bulk.insert_rows(
        RetrievedPassage,
        ["answer_id", "passage_id", "rank", "score", "in_prompt"],
        (
            (answer, passage_pk[r.passage_id], r.rank, r.score, r.in_prompt)
            for answer, r in retrieved
        ),
    )
    report("retrieved passages", len(retrieved))

    claims: list[tuple[int, int, ClaimRecord, bool]] = []
    for answer, pk in zip(answers, ids, strict=True):
        if answer.claims is None:
            proposed = [
                ClaimRecord(text=c.text, start=c.start, end=c.end, citations=tuple(c.citations))
                for c in propose_claims(answer.text)
            ]
            result.proposed_claims += len(proposed)
            claims.extend((pk, i, c, True) for i, c in enumerate(proposed))
        else:
            claims.extend((pk, i, c, False) for i, c in enumerate(answer.claims))
    claim_ids = bulk.allocate_ids(Claim, len(claims))
    bulk.insert_rows(
        Claim,
        ["id", "answer_id", "ordinal", "text", "start", "end", "proposed"],
        (
            (cid, answer, i, c.text, c.start, c.end, proposed)
            for (answer, i, c, proposed), cid in zip(claims, claim_ids, strict=True)
        ),
    )
    result.counts["claim"]["created"] = len(claims)
    report("claims", len(claims))

    citations = [
        (cid, i, cited)
        for (_, _, c, _), cid in zip(claims, claim_ids, strict=True)
        for i, cited in enumerate(c.citations)
    ]
    bulk.insert_rows(
        Citation,
        ["claim_id", "ordinal", "cited_id", "passage_id"],
        ((claim, i, cited, passage_pk.get(cited)) for claim, i, cited in citations),
    )
    report("citations", len(citations))


def _write_corrections(corrections: list[_Correction], result: ImportResult) -> None:
    """Correct answers in place, keeping their claims, task numbers and labels, and record
    what changed."""
    # In bulk (an UPDATE each, pipelined): a query per answer through the ORM was about a
    # quarter of a 10,000-answer correction's 17 s (profiled).
    bulk.update_rows(
        Answer,
        ["elapsed_ms", "request_cost", "content_hash"],
        (
            (c.pk, c.record.elapsed_ms, c.record.request_cost, content_hash(c.record.row()))
            for c in corrections
        ),
    )
    bulk.update_rows(
        RetrievedPassage,
        ["score"],
        (
            (c.pk, r.rank, r.score)
            for c in corrections
            for r in c.record.retrieved
            if f"retrieved[rank {r.rank}].score" in c.changes
        ),
        by=["answer_id", "rank"],
    )
    for c in corrections:
        result.corrections.append((c.record.answer_id, c.changes, c.labelled))
    AnswerCorrection.objects.bulk_create(
        AnswerCorrection(answer_id=c.pk, changes=c.changes, labelled=c.labelled)
        for c in corrections
    )


# --- A new project from the browser -----------------------------------------------------------

# Project slugs are one namespace for the whole site, so creating a project must refuse a slug
# in use, whoever uses it. The refusal is the one a malformed or too long slug gets (the forms
# and serializers give it as their error): it says the slug cannot be used, never that a
# project holds it, nor whose project, its name or state.
SLUG_TAKEN = (
    "This slug is not available: choose another (letters, digits, hyphens and underscores, "
    "at most 80 characters)."
)
SLUG_ERRORS = {"invalid": SLUG_TAKEN, "max_length": SLUG_TAKEN}
NOT_ALLOWED = "You may not create projects: ask an administrator for the permission."


@transaction.atomic
def import_new_project(
    *,
    lines: Iterable[bytes | str],
    slug: str,
    name: str | None,
    user,
    reimport: bool = True,
    progress: Callable[[str, int], None] | None = None,
) -> ImportResult:
    """Import a bundle as a new project whose lead is ``user``. A slug that exists is refused
    unless ``user`` already leads that project and ``reimport`` allows an ordinary re-import
    into it (pipelines do; the new-project page does not, where it would surprise). The
    check and the import share one transaction: if someone else creates the slug in between,
    nothing is written into their project."""
    return import_as_new_project(
        slug=slug,
        user=user,
        reimport=reimport,
        load=lambda: import_bundle(lines=lines, project_slug=slug, name=name, progress=progress),
    )


@transaction.atomic
def import_as_new_project(
    *, slug: str, user, reimport: bool, load: Callable[[], ImportResult]
) -> ImportResult:
    """import_new_project's rules around any importer: `load` imports into `slug` (a bundle,
    a Ragas dataset) and runs only once the slug is known to be free or the user's."""
    check_new_slug(slug=slug, user=user, reimport=reimport)
    result = load()
    if result.created_project:
        add_member(project=result.project, username=user.get_username(), role=Role.LEAD)
    elif not _leads(user, slug):
        raise ServiceError(SLUG_TAKEN)  # raised inside the transaction: the import rolls back
    return result


def check_new_slug(*, slug: str, user, reimport: bool) -> None:
    """Raise ServiceError unless `user` may import a new project under `slug`: it is free, or
    theirs and `reimport` allows adding to it. Checked when an upload is accepted (to say so
    at once) and again when it is imported (the authoritative check). NotAllowed for someone
    who may not create projects (annotate.access), unless it is their own project."""
    if not may_create_projects(user) and not _leads(user, slug):
        raise NotAllowed(NOT_ALLOWED)
    if Project.objects.filter(slug=slug).exists():
        if not _leads(user, slug):
            raise ServiceError(SLUG_TAKEN)
        if not reimport:
            raise ServiceError(
                "You already lead a project with this slug: to add to it, use its Upload "
                f"page (/p/{slug}/upload/), or choose another slug."
            )


def _leads(user, slug: str) -> bool:
    return Project.objects.led_by(user).filter(slug=slug).exists()
