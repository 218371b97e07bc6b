"""Writing a planned bundle import (write_import): every kind of record in bulk, replaced
answers deleted and inserted again, corrections made in place."""

from __future__ import annotations

from collections import Counter

from annotate.common import bulk
from annotate.imports.bundle_plan import Correction, ImportPlan, ImportResult
from annotate.imports.claims import propose_claims
from annotate.imports.records import AnswerRecord, Bundle, ClaimRecord, VariantRecord, content_hash
from annotate.models import (
    Answer,
    AnswerCorrection,
    Case,
    Citation,
    Claim,
    Evidence,
    Judgment,
    Passage,
    Project,
    RetrievedPassage,
    Variant,
)
from annotate.projects.opening import queue_keys, renumber_for_late_answers


def write_import(
    project, bundle: Bundle, existing, plan: ImportPlan, result: ImportResult, progress
):
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


def _write_corrections(corrections: list[Correction], result: ImportResult) -> None:
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
