"""A project's data as a bundle again (bundle_rows): what `import_bundle` reads, written the
same way, so an export imported into an empty project reproduces it. Streamed: rows come from
iterator() queries in a fixed order, so memory stays flat and the same data always gives the
same bytes."""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from annotate.imports.records import canonical_number
from annotate.models import Citation, Claim, Judgment, Project, RetrievedPassage

CHUNK = 500


def bundle_rows(project: Project) -> Iterator[dict[str, Any]]:
    """The project's data as bundle objects; `import_bundle` of these reproduces the project."""
    yield {
        "type": "bundle",
        "corpus_version": project.corpus_version,
        "name": project.name,
        "label_schema": project.schema.as_dict(),
    }
    for v in project.variants.order_by("name").iterator():
        yield {
            "type": "variant",
            "name": v.name,
            "description": v.description,
            "model": v.model,
            "settings": v.settings,
        }
    for p in project.passages.order_by("passage_id").iterator():
        yield {
            "type": "passage",
            "passage_id": p.passage_id,
            "text": p.text,
            "document": p.document,
            "location": p.location,
            "title": p.title,
        }
    cases = project.cases.order_by("case_id").prefetch_related("evidence__passage")
    for c in cases.iterator(chunk_size=CHUNK):
        yield {
            "type": "case",
            "case_id": c.case_id,
            "question": c.question,
            "answerable": c.answerable,
            "adversarial": c.adversarial,
            "required_facts": c.required_facts,
            "forbidden_claims": c.forbidden_claims,
            "evidence": [
                {"passage_id": e.passage.passage_id, "quote": e.quote, "location": e.location}
                for e in c.evidence.all()
            ],
            "split": c.split,
            "checked_documents": c.checked_documents,
            "tags": c.tags,
            **({"reference": c.reference} if c.reference else {}),
        }
    yield from _answer_rows(project)
    judgments = (
        Judgment.objects.filter(case__project=project)
        .order_by("case__case_id", "passage__passage_id")
        .values_list("case__case_id", "passage__passage_id", "grade")
    )
    for case_id, passage_id, grade in judgments.iterator(chunk_size=2000):
        yield {"type": "judgment", "case_id": case_id, "passage_id": passage_id, "grade": grade}


def _answer_rows(project: Project) -> Iterator[dict[str, Any]]:
    """The bundle's answer objects, a chunk of answers at a time: four queries of plain rows
    per chunk (the answers, their retrieved passages, claims and citations), no model
    instances -- a 10,000-answer project has 300,000 of those rows, and building an object
    for each was most of its export's time."""
    answers = (
        project.answers.order_by("answer_id")
        .values_list(
            "pk",
            "answer_id",
            "case__case_id",
            "variant__name",
            "sample",
            "text",
            "abstained",
            "elapsed_ms",
            "request_cost",
        )
        .iterator(chunk_size=CHUNK)
    )
    while chunk := list(itertools.islice(answers, CHUNK)):
        pks = [row[0] for row in chunk]
        retrieved = defaultdict(list)
        for answer_pk, passage_id, rank, score, in_prompt in (
            RetrievedPassage.objects.filter(answer_id__in=pks)
            .order_by("answer_id", "rank")
            .values_list("answer_id", "passage__passage_id", "rank", "score", "in_prompt")
        ):
            retrieved[answer_pk].append(
                {
                    "passage_id": passage_id,
                    "rank": rank,
                    "score": canonical_number(score),
                    "in_prompt": in_prompt,
                }
            )
        cited = defaultdict(list)
        for claim_pk, cited_id in (
            Citation.objects.filter(claim__answer_id__in=pks)
            .order_by("claim_id", "ordinal")
            .values_list("claim_id", "cited_id")
        ):
            cited[claim_pk].append(cited_id)
        claims = defaultdict(list)
        for answer_pk, claim_pk, text, start, end in (
            Claim.objects.filter(answer_id__in=pks)
            .order_by("answer_id", "ordinal")
            .values_list("answer_id", "pk", "text", "start", "end")
        ):
            claims[answer_pk].append(
                {"text": text, "start": start, "end": end, "citations": cited[claim_pk]}
            )
        for pk, answer_id, case_id, variant, sample, text, abstained, elapsed, cost in chunk:
            yield {
                "type": "answer",
                "answer_id": answer_id,
                "case_id": case_id,
                "variant": variant,
                "sample": sample,
                "text": text,
                "abstained": abstained,
                "elapsed_ms": canonical_number(elapsed),
                "request_cost": canonical_number(cost),
                "retrieved": retrieved[pk],
                "claims": claims[pk],
            }
