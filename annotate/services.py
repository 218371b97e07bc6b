"""Writes. Every function here is a verb with keyword-only arguments, atomic, and the one place
its rule is enforced: the pages, the API and the management commands all call these."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotate import bulk
from annotate.bundles import (
    AnswerRecord,
    Bundle,
    BundleError,
    BundleInvalid,
    ClaimRecord,
    content_hash,
    parse_bundle,
)
from annotate.claims import propose_claims
from annotate.models import (
    Answer,
    Case,
    Citation,
    Claim,
    Evidence,
    Judgment,
    Membership,
    Passage,
    Project,
    RetrievedPassage,
    Role,
    Variant,
)


class ServiceError(Exception):
    """A request the domain refuses, with a message a person can act on."""


@dataclass
class ImportResult:
    project: Project
    created_project: bool
    counts: dict[str, Counter] = field(default_factory=dict)
    proposed_claims: int = 0

    def summary(self) -> str:
        parts = []
        for kind in ("variant", "passage", "case", "answer", "claim", "judgment"):
            counter = self.counts.get(kind, Counter())
            detail = ", ".join(f"{n} {state}" for state, n in sorted(counter.items()) if n)
            parts.append(f"{kind}s: {detail or 'none'}")
        return "; ".join(parts)


def _existing(project: Project | None) -> dict[str, dict]:
    """Id -> (pk, content_hash) for what the project already holds."""
    if project is None:
        return {k: {} for k in ("passage", "variant", "case", "answer", "judgment")}
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
    from annotate.models import Assignment  # defined with the labelling models

    return set(
        Assignment.objects.filter(answer__project=project).values_list("answer_id", flat=True)
    )


def import_bundle(
    *,
    lines: Iterable[bytes | str],
    project_slug: str,
    name: str | None = None,
    replace: bool = False,
    progress: Callable[[str, int], None] | None = None,
) -> ImportResult:
    """Import a bundle into a project, creating the project if needed. All or nothing:
    raises BundleInvalid with every problem found and writes nothing."""
    project = Project.objects.filter(slug=project_slug).first()
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
    with transaction.atomic():
        created_project = project is None
        if project is None:
            project = Project.objects.create(
                slug=project_slug,
                name=name or bundle.name or project_slug,
                corpus_version=bundle.corpus_version,
            )
        else:
            project = Project.objects.select_for_update().get(pk=project.pk)
        result = ImportResult(project=project, created_project=created_project)
        _write(project, bundle, existing, plan, result, progress)
    return result


@dataclass
class _Plan:
    new: dict[str, list] = field(default_factory=dict)
    changed: dict[str, list] = field(default_factory=dict)
    unchanged: Counter = field(default_factory=Counter)


def _plan(bundle: Bundle, existing, project, *, replace: bool, labelled: set[int]) -> _Plan:
    """Sort every record into new / changed / unchanged, or refuse the import."""
    plan = _Plan()
    errors: list[BundleError] = []
    has_labels = bool(labelled)
    groups = {
        "variant": bundle.variants.values(),
        "passage": bundle.passages.values(),
        "case": bundle.cases.values(),
        "answer": bundle.answers.values(),
    }
    for kind, records in groups.items():
        plan.new[kind], plan.changed[kind] = [], []
        for record in records:
            key = record.name if kind == "variant" else getattr(record, f"{kind}_id")
            known = existing[kind].get(key)
            if known is None:
                plan.new[kind].append(record)
            elif known[1] == content_hash(record.row()):
                plan.unchanged[kind] += 1
            elif not replace:
                errors.append(
                    BundleError(
                        record.line,
                        f"{kind} '{key}' already exists in this project with different "
                        "content; import with replace to overwrite unlabelled items",
                    )
                )
            elif (kind == "answer" and known[0] in labelled) or (kind != "answer" and has_labels):
                errors.append(
                    BundleError(
                        record.line,
                        f"{kind} '{key}' has changed but labelling has used it; "
                        "labelled items are never replaced",
                    )
                )
            else:
                plan.changed[kind].append(record)
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
    from annotate.bundles import VariantRecord

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
    if project.state != Project.State.DRAFT:
        task_numbers = _next_task_numbers(project, len(answers))
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
                content_hash(a.row()),
            )
            for a, pk, number in zip(answers, ids, task_numbers, strict=True)
        ),
    )
    report("answers", len(answers))

    retrieved = [(pk, r) for a, pk in zip(answers, ids, strict=True) for r in a.retrieved]
    retrieved_ids = bulk.allocate_ids(RetrievedPassage, len(retrieved))
    bulk.insert_rows(
        RetrievedPassage,
        ["id", "answer_id", "passage_id", "rank", "score", "in_prompt"],
        (
            (rid, answer, passage_pk[r.passage_id], r.rank, r.score, r.in_prompt)
            for (answer, r), rid in zip(retrieved, retrieved_ids, strict=True)
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
    citation_ids = bulk.allocate_ids(Citation, len(citations))
    bulk.insert_rows(
        Citation,
        ["id", "claim_id", "ordinal", "cited_id", "passage_id"],
        (
            (pk, claim, i, cited, passage_pk.get(cited))
            for (claim, i, cited), pk in zip(citations, citation_ids, strict=True)
        ),
    )
    report("citations", len(citations))


def _next_task_numbers(project: Project, count: int) -> list[int]:
    last = (
        Answer.objects.filter(project=project)
        .order_by("-task_number")
        .values_list("task_number", flat=True)
        .first()
        or 0
    )
    numbers = list(range(last + 1, last + 1 + count))
    random.Random(f"{project.slug}:{last}").shuffle(numbers)
    return numbers


@transaction.atomic
def open_labelling(*, project: Project) -> Project:
    """Lock the claims and open the queue. Task numbers are assigned in an order shuffled per
    project, spreading each case's answers apart so two variants' answers to one case do not
    arrive back to back (a reviewer comparing them would learn which system is which)."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    if project.state != Project.State.DRAFT:
        raise ServiceError(
            f"Project '{project.slug}' is already {project.get_state_display().lower()}."
        )
    answers = list(project.answers.values_list("pk", "case_id"))
    if not answers:
        raise ServiceError("The project has no answers to label yet: import a bundle first.")
    order = spread_order(answers, seed=project.slug)
    for number, pk in enumerate(order, start=1):
        Answer.objects.filter(pk=pk).update(task_number=number)
    project.state = Project.State.OPEN
    project.opened_at = timezone.now()
    project.save(update_fields=["state", "opened_at"])
    return project


def spread_order(items: list[tuple[int, int]], *, seed: str) -> list[int]:
    """Shuffle (pk, group) pairs so that no two consecutive items share a group when that is
    possible: shuffle the groups, then deal them round-robin."""
    rng = random.Random(seed)
    groups: dict[int, list[int]] = {}
    for pk, group in items:
        groups.setdefault(group, []).append(pk)
    keys = list(groups)
    rng.shuffle(keys)
    for key in keys:
        rng.shuffle(groups[key])
    order: list[int] = []
    round_ = 0
    while len(order) < len(items):
        for key in keys:
            if round_ < len(groups[key]):
                order.append(groups[key][round_])
        round_ += 1
    return order


@transaction.atomic
def add_member(*, project: Project, username: str, role: str, password: str | None = None):
    """Give a person a role in a project, creating the user when needed."""
    if role not in Role.values:
        raise ServiceError(f"Unknown role '{role}': use one of {', '.join(Role.values)}.")
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username)
    if password:
        user.set_password(password)
        user.save(update_fields=["password"])
    elif created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    return membership
