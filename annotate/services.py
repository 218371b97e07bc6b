"""Writes. Every function here is a verb with keyword-only arguments, atomic, and the one place
its rule is enforced: the pages, the API and the management commands all call these."""

from __future__ import annotations

import heapq
import random
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotate import bulk
from annotate.bundles import (
    AnswerRecord,
    Bundle,
    BundleError,
    BundleInvalid,
    ClaimRecord,
    JsonLines,
    content_hash,
    parse_bundle,
    quote_occurs,
)
from annotate.claims import propose_claims
from annotate.models import (
    FAILURE_LABELS,
    RELEVANCE_RUBRIC,
    Abstention,
    AdjudicationLock,
    Answer,
    Assignment,
    Case,
    Citation,
    CitationVerdict,
    Claim,
    ClaimLabel,
    Decision,
    Evidence,
    Judgment,
    LabelRevision,
    Membership,
    Passage,
    Project,
    RetrievedPassage,
    Role,
    Severity,
    Support,
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
    bulk.analyze([Passage, Case, Evidence, Answer, RetrievedPassage, Claim, Citation])
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


# Task order is a blinding matter: a shuffle anyone can replay (one seeded with the project's
# slug, say) tells a reviewer which variant wrote each task number. Draw from the OS.
_SECRET_RANDOM = random.SystemRandom()


def _next_task_numbers(project: Project, count: int) -> list[int]:
    last = (
        Answer.objects.filter(project=project)
        .order_by("-task_number")
        .values_list("task_number", flat=True)
        .first()
        or 0
    )
    numbers = list(range(last + 1, last + 1 + count))
    _SECRET_RANDOM.shuffle(numbers)
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
    numbered = [
        Answer(pk=pk, task_number=number)
        for number, pk in enumerate(spread_order(answers), start=1)
    ]
    Answer.objects.bulk_update(numbered, ["task_number"], batch_size=1000)
    project.state = Project.State.OPEN
    project.opened_at = timezone.now()
    project.save(update_fields=["state", "opened_at"])
    return project


def spread_order(items: list[tuple[int, int]], *, rng: random.Random = _SECRET_RANDOM) -> list[int]:
    """Shuffle (pk, group) pairs so that no two consecutive items share a group whenever that
    is possible: always deal from the group with the most items left, other than the one just
    dealt (ties in an order drawn once per group). Dealing the groups round-robin instead put
    a two-answer case back to back whenever it ended one round and began the next alone."""
    groups: dict[int, list[int]] = {}
    for pk, group in items:
        groups.setdefault(group, []).append(pk)
    for members in groups.values():
        rng.shuffle(members)
    heap = [(-len(members), rng.random(), group) for group, members in groups.items()]
    heapq.heapify(heap)
    order: list[int] = []
    held = None  # the group just dealt from, out of the heap for one turn
    while heap:
        left, tie, group = heapq.heappop(heap)
        order.append(groups[group].pop())
        if held is not None:
            heapq.heappush(heap, held)
        held = (left + 1, tie, group) if left + 1 < 0 else None
    if held is not None:  # one group outnumbers all the others: its rest must touch
        order.extend(reversed(groups[held[2]]))
    return order


@transaction.atomic
def add_member(
    *,
    project: Project,
    username: str,
    role: str,
    password: str | None = None,
    reset_password: bool = False,
):
    """Give a person a role in a project, creating the user when needed. A password is set
    for a new account; an existing account keeps its password unless reset_password, so
    adding someone to a second project never replaces the login they use."""
    if role not in Role.values:
        raise ServiceError(f"Unknown role '{role}': use one of {', '.join(Role.values)}.")
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username)
    if password and (created or reset_password):
        user.set_password(password)
        user.save(update_fields=["password"])
    elif created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    return membership


# --- The queue ------------------------------------------------------------------------------


def release_abandoned(*, project: Project, now=None) -> int:
    """Return tasks nobody has touched for CLAIMDESK_ABANDON_AFTER_MINUTES to the pool."""
    now = now or timezone.now()
    cutoff = now - timedelta(minutes=settings.CLAIMDESK_ABANDON_AFTER_MINUTES)
    return Assignment.objects.filter(
        project=project, status=Assignment.Status.IN_PROGRESS, touched_at__lt=cutoff
    ).update(status=Assignment.Status.RELEASED, release_reason="abandoned (no activity)")


def next_task(*, project: Project, reviewer) -> Assignment | None:
    """The reviewer's current task, or a new one: an answer with fewer than `overlap` holders
    that this reviewer has never taken, in the project's shuffled order.

    Safe under concurrency: the reviewer's membership row is locked first (one request per
    reviewer at a time, so nobody holds two new tasks from a double click), then the candidate
    answer is locked with SKIP LOCKED, so two reviewers pressing at once take different
    answers, or the same one only while the count taken under the lock stays below overlap.
    """
    if project.state != Project.State.OPEN:
        raise ServiceError("Labelling is not open in this project yet.")
    release_abandoned(project=project)
    with transaction.atomic():
        Membership.objects.select_for_update().get(
            project=project, user=reviewer, role=Role.REVIEWER
        )
        current = (
            Assignment.objects.for_reviewer(reviewer)
            .filter(project=project, status=Assignment.Status.IN_PROGRESS)
            .order_by("taken_at")
            .first()
        )
        if current is not None:
            return current
        mine = Assignment.objects.filter(answer=OuterRef("pk"), reviewer=reviewer)
        holders = (
            Assignment.objects.holding()
            .filter(answer=OuterRef("pk"))
            .order_by()
            .values("answer")
            .annotate(n=Count("pk"))
            .values("n")
        )
        candidates = (
            Answer.objects.filter(project=project, task_number__isnull=False)
            .exclude(Exists(mine))
            .annotate(holders=Coalesce(Subquery(holders), 0))
            .filter(holders__lt=project.overlap)
            .order_by("task_number")
            .select_for_update(skip_locked=True, of=("self",))
        )
        for answer in candidates[:5]:
            # Re-count under the row lock: a concurrent transaction that took this answer
            # has committed by the time we hold the lock.
            if answer.assignments.holding().count() < project.overlap:
                return Assignment.objects.create(project=project, answer=answer, reviewer=reviewer)
    return None


@transaction.atomic
def release_task(*, assignment: Assignment, reason: str) -> Assignment:
    """Skip: the reviewer gives the task back with a reason; it returns to the pool."""
    assignment = Assignment.objects.select_for_update().get(pk=assignment.pk)
    if assignment.status != Assignment.Status.IN_PROGRESS:
        raise ServiceError("Only a task in progress can be skipped.")
    if not reason.strip():
        raise ServiceError("Say why you skip this task (a lead reads it).")
    assignment.status = Assignment.Status.RELEASED
    assignment.release_reason = reason.strip()
    assignment.save(update_fields=["status", "release_reason"])
    return assignment


# --- Labels ----------------------------------------------------------------------------------

IDLE_CAP_SECONDS = 300  # a pause longer than this is not counted as time spent labelling


@dataclass
class LabelErrors:
    """Field errors keyed like the form: 'claim.<index>.<field>' or 'answer.<field>'."""

    fields: dict[str, str] = field(default_factory=dict)

    def add(self, key: str, message: str) -> None:
        self.fields.setdefault(key, message)

    def __bool__(self) -> bool:
        return bool(self.fields)


def _touch(assignment: Assignment, now) -> None:
    gap = (now - assignment.touched_at).total_seconds()
    assignment.seconds_spent += int(max(0, min(gap, IDLE_CAP_SECONDS)))
    assignment.touched_at = now


def _editable(assignment: Assignment) -> None:
    if assignment.status != Assignment.Status.IN_PROGRESS:
        raise ServiceError(
            "This task is submitted: reopen it to change your labels."
            if assignment.status == Assignment.Status.SUBMITTED
            else "This task was released and can no longer be edited."
        )


def shown_passages(answer: Answer) -> dict[str, Passage]:
    """The passages a reviewer sees for an answer: what the system retrieved, plus any passage
    a claim cites that was not retrieved. Evidence must come from these."""
    retrieved = RetrievedPassage.objects.filter(answer=answer).select_related("passage")
    shown = {r.passage.passage_id: r.passage for r in retrieved.order_by("rank")}
    cited = Citation.objects.filter(claim__answer=answer, passage__isnull=False)
    for citation in cited.select_related("passage"):
        shown.setdefault(citation.passage.passage_id, citation.passage)
    return shown


def check_claim_label(
    label: ClaimLabel,
    claim: Claim,
    shown: dict[str, Passage],
    *,
    complete: bool,
    errors: LabelErrors,
) -> None:
    """Validate one claim label. `complete` adds the checks a submission needs."""
    key = f"claim.{claim.ordinal}"
    if label.support and label.support not in Support.values:
        errors.add(f"{key}.support", "Choose supported, contradicted or insufficient evidence.")
    if label.severity and label.severity not in Severity.values:
        errors.add(f"{key}.severity", "Choose none, minor, major or critical.")
    if label.support == Support.SUPPORTED and label.severity not in ("", Severity.NONE):
        errors.add(f"{key}.severity", "A supported claim has severity none.")
    unknown = [pid for pid in label.evidence_ids if pid not in shown]
    if unknown:
        errors.add(f"{key}.evidence_ids", f"Not a passage of this task: {', '.join(unknown)}.")
    if label.evidence_quote.strip():
        chosen = [shown[pid] for pid in label.evidence_ids if pid in shown]
        if not chosen:
            errors.add(f"{key}.evidence_quote", "Choose the passage the quote comes from.")
        elif not any(quote_occurs(label.evidence_quote, p.text) for p in chosen):
            errors.add(
                f"{key}.evidence_quote",
                "This quote does not occur in "
                + ("the chosen passage." if len(chosen) == 1 else "any of the chosen passages.")
                + " Select the text in the passage to copy it exactly.",
            )
    cited = {c.cited_id: c for c in claim.citations.all()}
    for cited_id, verdict in label.citations.items():
        if cited_id not in cited:
            errors.add(f"{key}.citations", f"The claim does not cite {cited_id}.")
        elif cited[cited_id].passage is None and verdict != CitationVerdict.NOT_FOUND:
            errors.add(
                f"{key}.citations", f"{cited_id} resolves to no passage: citation_not_found."
            )
        elif verdict not in CitationVerdict.values:
            errors.add(f"{key}.citations", f"Unknown verdict for {cited_id}.")
    if not complete:
        return
    if not label.support:
        errors.add(f"{key}.support", "Choose a support label.")
    if label.support and label.support != Support.SUPPORTED and not label.severity:
        errors.add(f"{key}.severity", "Choose a severity.")
    needs_evidence = label.requires_evidence and label.support in (
        Support.SUPPORTED,
        Support.CONTRADICTED,
    )
    if needs_evidence and not label.evidence_ids:
        errors.add(f"{key}.evidence_ids", "Choose the passage that decides this label.")
    if needs_evidence and not label.evidence_quote.strip():
        errors.add(f"{key}.evidence_quote", "Quote the words that decide this label.")
    for cited_id, citation in cited.items():
        if citation.passage is not None and not label.citations.get(cited_id):
            errors.add(f"{key}.citations", f"Say whether {cited_id} supports the claim.")


def check_answer_label(assignment: Assignment, *, complete: bool, errors: LabelErrors) -> None:
    if assignment.relevance is not None and assignment.relevance not in RELEVANCE_RUBRIC:
        errors.add("answer.relevance", "Relevance is 0, 1 or 2.")
    if assignment.abstention and assignment.abstention not in Abstention.values:
        errors.add("answer.abstention", "Choose appropriate or unnecessary.")
    unknown = [f for f in assignment.failure_labels if f not in FAILURE_LABELS]
    if unknown:
        errors.add("answer.failure_labels", f"Unknown failure label: {', '.join(unknown)}.")
    if not complete:
        return
    if assignment.relevance is None:
        errors.add("answer.relevance", "Rate the answer's relevance.")
    if assignment.answer.abstained and not assignment.abstention:
        errors.add("answer.abstention", "The answer declines: was that appropriate?")


def _claim_label_for(assignment: Assignment, claim: Claim) -> ClaimLabel:
    label, _ = ClaimLabel.objects.get_or_create(assignment=assignment, claim=claim)
    return label


def default_citation_verdicts(claim: Claim) -> dict[str, str]:
    """Unresolvable citations are labelled citation_not_found automatically, and locked."""
    return {
        c.cited_id: CitationVerdict.NOT_FOUND for c in claim.citations.all() if c.passage is None
    }


@transaction.atomic
def save_claim_label(
    *, assignment: Assignment, claim: Claim, data: dict, shown: dict[str, Passage] | None = None
) -> tuple[ClaimLabel, LabelErrors]:
    """Save a draft of one claim's label. Invalid values are kept (nothing a reviewer typed is
    lost) and reported; submission refuses until they are fixed. `shown` is the answer's
    shown_passages() when the caller has already read them (the labelling screen has).

    The label returned holds the assignment as locked and written (its save time)."""
    assignment = (
        Assignment.objects.select_for_update().select_related("answer").get(pk=assignment.pk)
    )
    _editable(assignment)
    if claim.answer_id != assignment.answer_id:
        raise ServiceError("That claim is not part of this task.")
    label = _claim_label_for(assignment, claim)
    for name in ("support", "severity", "evidence_quote", "note"):
        if name in data:
            setattr(label, name, (data[name] or "").strip() if name != "note" else data[name] or "")
    if "requires_evidence" in data:
        label.requires_evidence = bool(data["requires_evidence"])
    if "evidence_ids" in data:
        label.evidence_ids = list(dict.fromkeys(data["evidence_ids"] or []))
    if label.support == Support.SUPPORTED and not label.severity:
        label.severity = Severity.NONE
    citations = dict(label.citations)
    citations.update(data.get("citations") or {})
    citations.update(default_citation_verdicts(claim))
    label.citations = {k: v for k, v in citations.items() if v}
    label.save()
    _touch(assignment, timezone.now())
    assignment.save(update_fields=["seconds_spent", "touched_at"])
    label.assignment = assignment  # not re-read by the caller
    errors = LabelErrors()
    if shown is None:
        shown = shown_passages(assignment.answer)
    check_claim_label(label, claim, shown, complete=False, errors=errors)
    return label, errors


@transaction.atomic
def save_answer_label(*, assignment: Assignment, data: dict) -> tuple[Assignment, LabelErrors]:
    assignment = (
        Assignment.objects.select_for_update().select_related("answer").get(pk=assignment.pk)
    )
    _editable(assignment)
    if "relevance" in data:
        value = data["relevance"]
        assignment.relevance = None if value in (None, "") else int(value)
    if "abstention" in data:
        assignment.abstention = data["abstention"] or ""
    if "failure_labels" in data:
        assignment.failure_labels = [
            f for f in FAILURE_LABELS if f in (data["failure_labels"] or [])
        ] + [f for f in (data["failure_labels"] or []) if f not in FAILURE_LABELS]
    if "note" in data:
        assignment.note = data["note"] or ""
    _touch(assignment, timezone.now())
    errors = LabelErrors()
    check_answer_label(assignment, complete=False, errors=errors)
    assignment.save()
    return assignment, errors


def label_snapshot(assignment: Assignment, labels: Iterable[ClaimLabel]) -> dict:
    """The label set in the import_labels format (claims by index), for revisions."""
    return {
        "relevance": assignment.relevance,
        "abstention": assignment.abstention or None,
        "failure_labels": assignment.failure_labels,
        "note": assignment.note,
        "claims": [
            {
                "index": label.claim.ordinal,
                "support": label.support,
                "severity": label.severity,
                "requires_evidence": label.requires_evidence,
                "evidence_ids": label.evidence_ids,
                "evidence_quote": label.evidence_quote,
                "citations": label.citations,
                "note": label.note,
            }
            for label in sorted(labels, key=lambda x: x.claim.ordinal)
        ],
    }


def screen_errors(screen, *, complete: bool) -> LabelErrors:
    """Validate the labels already loaded for the labelling screen, without more queries."""
    shown = screen.shown
    errors = LabelErrors()
    for row in screen.claims:
        if row.label is not None:
            check_claim_label(row.label, row.claim, shown, complete=complete, errors=errors)
        elif complete:
            errors.add(f"claim.{row.claim.ordinal}.support", "Choose a support label.")
    check_answer_label(screen.assignment, complete=complete, errors=errors)
    return errors


def validate_submission(assignment: Assignment) -> tuple[list[ClaimLabel], LabelErrors]:
    answer = assignment.answer
    claims = list(answer.claims.prefetch_related("citations__passage"))
    labels = {label.claim_id: label for label in assignment.claim_labels.select_related("claim")}
    shown = shown_passages(answer)
    errors = LabelErrors()
    complete = []
    for claim in claims:
        label = labels.get(claim.pk)
        if label is None:
            errors.add(f"claim.{claim.ordinal}.support", "Choose a support label.")
            continue
        label.claim = claim
        check_claim_label(label, claim, shown, complete=True, errors=errors)
        complete.append(label)
    check_answer_label(assignment, complete=True, errors=errors)
    return complete, errors


@transaction.atomic
def submit_labels(*, assignment: Assignment, source: str = "browser") -> LabelErrors:
    """Submit when every claim and the answer are labelled; each submission is kept as a
    revision, so a later edit never silently replaces what was submitted before."""
    assignment = (
        Assignment.objects.select_for_update().select_related("answer").get(pk=assignment.pk)
    )
    _editable(assignment)
    labels, errors = validate_submission(assignment)
    if errors:
        return errors
    now = timezone.now()
    _touch(assignment, now)
    assignment.status = Assignment.Status.SUBMITTED
    assignment.submitted_at = now
    assignment.revision += 1
    assignment.save()
    LabelRevision.objects.create(
        assignment=assignment,
        number=assignment.revision,
        labels=label_snapshot(assignment, labels),
        source=source,
    )
    return errors


def adjudication_started(answer: Answer) -> bool:
    """Whether a lead has begun adjudicating this answer; then reviewers can no longer
    reopen it."""
    return AdjudicationLock.objects.filter(answer=answer).exists()


@transaction.atomic
def reopen_task(*, assignment: Assignment) -> Assignment:
    assignment = (
        Assignment.objects.select_for_update().select_related("answer").get(pk=assignment.pk)
    )
    if assignment.status != Assignment.Status.SUBMITTED:
        raise ServiceError("Only a submitted task can be reopened.")
    if adjudication_started(assignment.answer):
        # Not "a lead is adjudicating it": that would tell the reviewer that their co-reviewer
        # has submitted, and disagreed.
        raise ServiceError("This task is closed for review and can no longer be reopened.")
    assignment.status = Assignment.Status.IN_PROGRESS
    assignment.touched_at = timezone.now()
    assignment.save(update_fields=["status", "touched_at"])
    return assignment


# --- Label import ----------------------------------------------------------------------------

LABEL_FIELDS = {
    "answer_id",
    "reviewer",
    "relevance",
    "abstention",
    "failure_labels",
    "note",
    "claims",
}
CLAIM_LABEL_FIELDS = {
    "index",
    "support",
    "severity",
    "requires_evidence",
    "evidence_ids",
    "evidence_quote",
    "citations",
    "note",
}


@dataclass
class LabelImportResult:
    created: int = 0
    unchanged: int = 0


def import_labels(*, lines: Iterable[bytes | str], project: Project) -> LabelImportResult:
    """Import reviewers' submitted labels (SPEC.md format), validated like the browser's
    submissions. All or nothing: raises BundleInvalid listing every problem by line."""
    if project.state == Project.State.DRAFT:
        raise BundleInvalid(
            [BundleError(0, "Labelling is not open: open it first so that the claims are locked.")]
        )
    reviewers = {
        m.user.username: m.user
        for m in project.memberships.filter(role=Role.REVIEWER).select_related("user")
    }
    answers = {
        a.answer_id: a
        for a in project.answers.prefetch_related(
            "claims__citations__passage", "retrieved__passage"
        )
    }
    existing = {
        (a.answer_id, a.reviewer_id): a
        for a in Assignment.objects.filter(project=project).select_related("answer")
    }
    holders = Counter(
        a.answer_id for a in existing.values() if a.status != Assignment.Status.RELEASED
    )
    errors: list[BundleError] = []
    pending: list[tuple[Assignment, list[ClaimLabel], dict]] = []
    seen: dict[tuple[str, str], int] = {}
    result = LabelImportResult()
    for number, obj in JsonLines(lines, errors):
        problems: list[str] = []
        for key in sorted(set(obj) - LABEL_FIELDS):
            problems.append(f"unknown field '{key}'")
        answer = answers.get(obj.get("answer_id"))
        user = reviewers.get(obj.get("reviewer"))
        if answer is None:
            problems.append(f"unknown answer_id {obj.get('answer_id')!r}")
        if user is None:
            problems.append(f"{obj.get('reviewer')!r} is not a reviewer of this project")
        if answer is None or user is None:
            errors.extend(BundleError(number, p) for p in problems)
            continue
        key = (answer.answer_id, user.username)
        if key in seen:
            problems.append(f"{user.username} labels this answer twice (first on line {seen[key]})")
        seen.setdefault(key, number)
        assignment = Assignment(
            project=project,
            answer=answer,
            reviewer=user,
            relevance=obj.get("relevance"),
            abstention=obj.get("abstention") or "",
            failure_labels=obj.get("failure_labels") or [],
            note=obj.get("note") or "",
        )
        if not isinstance(assignment.relevance, (int, type(None))) or isinstance(
            assignment.relevance, bool
        ):
            problems.append("'relevance' must be 0, 1 or 2")
            assignment.relevance = None
        labels, label_problems = _parse_claim_labels(obj.get("claims"), answer)
        problems += label_problems
        found = LabelErrors()
        check_answer_label(assignment, complete=True, errors=found)
        shown = shown_passages(answer)
        for label in labels:
            check_claim_label(label, label.claim, shown, complete=True, errors=found)
        problems += [f"{_field_name(k)}: {v}" for k, v in found.fields.items()]
        snapshot = label_snapshot(assignment, labels)
        previous = existing.get((answer.pk, user.pk))
        if previous is not None:
            last = previous.revisions.order_by("-number").first()
            if last is not None and last.labels == snapshot:
                result.unchanged += 1
                continue
            problems.append(f"{user.username} already has labels for this answer")
        elif holders[answer.pk] >= project.overlap:
            problems.append(
                f"this answer already has {holders[answer.pk]} reviewer(s), the project's overlap"
            )
        holders[answer.pk] += 1
        if problems:
            errors.extend(BundleError(number, p) for p in problems)
        else:
            pending.append((assignment, labels, snapshot))
    if errors:
        raise BundleInvalid(errors)
    # The file's order is often case by case, variant by variant: neither the rows' ids nor
    # their times may keep it, or a reviewer's task list would replay it.
    _SECRET_RANDOM.shuffle(pending)
    with transaction.atomic():
        now = timezone.now()
        for assignment, labels, snapshot in pending:
            assignment.status = Assignment.Status.SUBMITTED
            assignment.submitted_at = now
            assignment.revision = 1
            assignment.save()
            for label in labels:
                label.assignment = assignment
            ClaimLabel.objects.bulk_create(labels)
            LabelRevision.objects.create(
                assignment=assignment, number=1, labels=snapshot, source="import"
            )
        pks = [a.pk for a, _, _ in pending]
        for start in range(0, len(pks), 500):  # SQLite caps the parameters of one query
            Assignment.objects.filter(pk__in=pks[start : start + 500]).update(
                taken_at=now,
                touched_at=now,  # auto_now_add stamped each row as it was saved
            )
    result.created = len(pending)
    return result


def _field_name(key: str) -> str:
    parts = key.split(".")
    return f"claims[{parts[1]}].{parts[2]}" if parts[0] == "claim" else parts[-1]


def _parse_claim_labels(items, answer: Answer) -> tuple[list[ClaimLabel], list[str]]:
    problems: list[str] = []
    claims = {c.ordinal: c for c in answer.claims.all()}
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        return [], ["'claims' must be a list of objects"]
    labels: list[ClaimLabel] = []
    for position, item in enumerate(items):
        for key in sorted(set(item) - CLAIM_LABEL_FIELDS):
            problems.append(f"claims[{position}]: unknown field '{key}'")
        index = item.get("index")
        claim = (
            claims.get(index) if isinstance(index, int) and not isinstance(index, bool) else None
        )
        if claim is None:
            problems.append(f"claims[{position}]: no claim with index {index!r} in this answer")
            continue
        if any(label.claim is claim for label in labels):
            problems.append(f"claims[{position}]: claim {index} is labelled twice")
            continue
        citations = item.get("citations") or {}
        evidence_ids = item.get("evidence_ids") or []
        if not isinstance(citations, dict) or not isinstance(evidence_ids, list):
            problems.append(f"claims[{position}]: 'citations' is an object, 'evidence_ids' a list")
            continue
        merged = {**citations, **default_citation_verdicts(claim)}
        labels.append(
            ClaimLabel(
                claim=claim,
                support=item.get("support") or "",
                severity=item.get("severity") or "",
                requires_evidence=item.get("requires_evidence", True) is not False,
                evidence_ids=evidence_ids,
                evidence_quote=item.get("evidence_quote") or "",
                citations=merged,
                note=item.get("note") or "",
            )
        )
    missing = sorted(set(claims) - {label.claim.ordinal for label in labels})
    if missing:
        problems.append(f"claims {', '.join(map(str, missing))} have no label")
    return labels, problems


# --- Adjudication ------------------------------------------------------------------------------


class Conflict(ServiceError):
    """Another lead saved the same item first; nothing of this save was written."""


@dataclass(frozen=True)
class DecisionInput:
    claim: Claim | None  # None: a field of the answer as a whole
    field: str
    value: object


def _check_decision_value(field_name: str, value) -> str | None:
    """The reason a gold value is not acceptable for its field, or None."""
    checks = {
        "support": lambda v: v in Support.values,
        "severity": lambda v: v in Severity.values,
        "requires_evidence": lambda v: isinstance(v, bool),
        "relevance": lambda v: v in RELEVANCE_RUBRIC,
        "abstention": lambda v: v in Abstention.values,
        "failure_labels": lambda v: isinstance(v, list) and set(v) <= set(FAILURE_LABELS),
        "citations": lambda v: (
            isinstance(v, dict) and all(x in CitationVerdict.values for x in v.values())
        ),
        "evidence": lambda v: isinstance(v, dict) and isinstance(v.get("evidence_ids"), list),
    }
    check = checks.get(field_name)
    if check is None:
        return f"'{field_name}' is not a label field."
    return None if check(value) else f"{value!r} is not a valid {field_name}."


@transaction.atomic
def start_adjudication(*, answer: Answer, lead) -> AdjudicationLock:
    """Opening an item for adjudication freezes the reviewers' labels (no more reopening)."""
    lock, _ = AdjudicationLock.objects.get_or_create(answer=answer, defaults={"started_by": lead})
    return lock


@transaction.atomic
def adjudicate(
    *, answer: Answer, lead, version: int, decisions: list[DecisionInput], rationale: str
) -> AdjudicationLock:
    """Record a lead's gold values for some fields of one answer and its claims.

    `version` is the lock version the lead's screen was rendered with; if another lead saved
    in between, Conflict is raised and nothing is written, so the second lead can compare and
    save again instead of silently overwriting the first."""
    lock, _ = AdjudicationLock.objects.get_or_create(answer=answer, defaults={"started_by": lead})
    lock = AdjudicationLock.objects.select_for_update().get(pk=lock.pk)
    if lock.version != version:
        raise Conflict(
            "Another lead saved this item while you were reading it. Their decision is shown "
            "now; your choices are kept below — review them and save again."
        )
    problems = [reason for d in decisions if (reason := _check_decision_value(d.field, d.value))]
    if any(d.claim is not None and d.claim.answer_id != answer.pk for d in decisions):
        problems.append("A decision names a claim of another answer.")
    if problems:
        raise ServiceError(" ".join(problems))
    if decisions and not rationale.strip():
        raise ServiceError("Write a rationale: it is exported with the gold label.")
    Decision.objects.bulk_create(
        Decision(
            answer=answer,
            claim=d.claim,
            field=d.field,
            value=d.value,
            rationale=rationale.strip(),
            decided_by=lead,
        )
        for d in decisions
    )
    lock.version += 1
    lock.save(update_fields=["version"])
    return lock


# --- Members ---------------------------------------------------------------------------------


_LAST_LEAD = "This is the project's only lead: add another lead first (a project keeps one)."


class MemberError(ServiceError):
    """A refused membership change, with the form field it concerns (None: the whole form)."""

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.field = field


def _lead_count(project: Project) -> int:
    # Locking every lead row serialises two leads who demote or remove each other at once.
    return len(Membership.objects.select_for_update().filter(project=project, role=Role.LEAD))


@transaction.atomic
def add_project_member(
    *, project: Project, username: str, role: str, password: str | None = None
) -> Membership:
    """services.add_member for the members page and the API, with two extra rules: a password
    is set only on a new account (a lead must not be able to take over someone's existing
    login), and the project keeps at least one lead.

    The answer does not say whether the username already had an account: a lead learns
    which accounts exist only by adding them. So a password is checked against the password
    rules whether or not it will be used, an existing account silently keeps its own, and
    the password is hashed either way, so that neither the words nor the time taken tell."""
    User = get_user_model()
    if password:
        try:
            validate_password(password, User(username=username))
        except ValidationError as exc:
            raise MemberError(" ".join(exc.messages), field="password") from exc
    user = User.objects.filter(username=username).first()
    if user is not None and role != Role.LEAD:
        membership = Membership.objects.filter(project=project, user=user).first()
        if membership and membership.role == Role.LEAD and _lead_count(project) <= 1:
            raise MemberError(_LAST_LEAD, field="role")
    if user is not None and password:
        make_password(password)  # the time a new account's password takes; the hash is unused
        password = None
    return add_member(project=project, username=username, role=role, password=password)


ADDED_MEMBER = (
    "{username} is now a {role} of this project. A password given here is set only on a new "
    "account; an existing account keeps its own, and a new one without a password can log in "
    "once an administrator sets one."
)


@transaction.atomic
def change_member_role(*, membership: Membership, role: str) -> Membership:
    if role not in Role.values:
        raise ServiceError(f"Unknown role '{role}': use one of {', '.join(Role.values)}.")
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    demoted = membership.role == Role.LEAD and role != Role.LEAD
    if demoted and _lead_count(membership.project) <= 1:
        raise ServiceError(_LAST_LEAD)
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def remove_member(*, membership: Membership) -> None:
    """Remove a person from the project. Their account stays; so do any labels they already
    submitted (assignments belong to the project, not to the membership)."""
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    if membership.role == Role.LEAD and _lead_count(membership.project) <= 1:
        raise ServiceError(_LAST_LEAD)
    membership.delete()


# --- Guidelines ------------------------------------------------------------------------------


@transaction.atomic
def update_guidelines(*, project: Project, guidelines: str, overlap: int | None = None) -> Project:
    """Guidelines may change at any time; overlap only in draft (the queue is built on it)."""
    project = Project.objects.select_for_update().get(pk=project.pk)
    if overlap is not None and overlap != project.overlap:
        if project.state != Project.State.DRAFT:
            raise ServiceError("Overlap is fixed once labelling opens.")
        if overlap < 1:
            raise ServiceError("Overlap is at least 1 (each answer needs a reviewer).")
        project.overlap = overlap
    project.guidelines = guidelines
    project.save(update_fields=["guidelines", "overlap"])
    return project


# --- A new project from the browser -----------------------------------------------------------

# Project slugs are one namespace for the whole site, so creating a project must say when a
# slug is in use, whoever uses it. That is all it says: not whose project, its name or state.
SLUG_TAKEN = "This slug is not available: choose another."


@transaction.atomic
def import_new_project(
    *, lines: Iterable[bytes | str], slug: str, name: str | None, user, reimport: bool = True
) -> ImportResult:
    """Import a bundle as a new project whose lead is ``user``. A slug that exists is refused
    unless ``user`` already leads that project and ``reimport`` allows an ordinary re-import
    into it (pipelines do; the new-project page does not, where it would surprise). The
    check and the import share one transaction: if someone else creates the slug in between,
    nothing is written into their project."""
    if Project.objects.filter(slug=slug).exists():
        if not _leads(user, slug):
            raise ServiceError(SLUG_TAKEN)
        if not reimport:
            raise ServiceError(
                "You already lead a project with this slug: to add to it, use its Upload "
                f"page (/p/{slug}/upload/), or choose another slug."
            )
    result = import_bundle(lines=lines, project_slug=slug, name=name)
    if result.created_project:
        add_member(project=result.project, username=user.get_username(), role=Role.LEAD)
    elif not _leads(user, slug):
        raise ServiceError(SLUG_TAKEN)  # raised inside the transaction: the import rolls back
    return result


def _leads(user, slug: str) -> bool:
    return Project.objects.led_by(user).filter(slug=slug).exists()
