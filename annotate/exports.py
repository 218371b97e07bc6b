"""Generators of export rows. They stream: rows come from iterator() queries in a fixed order,
so memory stays flat and the same data always gives the same bytes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.db.models import Prefetch

from annotate.bundles import canonical_number
from annotate.models import Citation, Claim, Judgment, Project, RetrievedPassage

CHUNK = 500


def bundle_rows(project: Project) -> Iterator[dict[str, Any]]:
    """The project's data as bundle objects; `import_bundle` of these reproduces the project."""
    yield {"type": "bundle", "corpus_version": project.corpus_version, "name": project.name}
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
        }
    answers = (
        project.answers.order_by("answer_id")
        .select_related("case", "variant")
        .prefetch_related(
            Prefetch(
                "retrieved",
                queryset=RetrievedPassage.objects.select_related("passage").order_by("rank"),
            ),
            Prefetch(
                "claims",
                queryset=Claim.objects.order_by("ordinal").prefetch_related(
                    Prefetch("citations", queryset=Citation.objects.order_by("ordinal"))
                ),
            ),
        )
    )
    for a in answers.iterator(chunk_size=CHUNK):
        yield {
            "type": "answer",
            "answer_id": a.answer_id,
            "case_id": a.case.case_id,
            "variant": a.variant.name,
            "sample": a.sample,
            "text": a.text,
            "abstained": a.abstained,
            "elapsed_ms": canonical_number(a.elapsed_ms),
            "request_cost": canonical_number(a.request_cost),
            "retrieved": [
                {
                    "passage_id": r.passage.passage_id,
                    "rank": r.rank,
                    "score": canonical_number(r.score),
                    "in_prompt": r.in_prompt,
                }
                for r in a.retrieved.all()
            ],
            "claims": [
                {
                    "text": c.text,
                    "start": c.start,
                    "end": c.end,
                    "citations": [x.cited_id for x in c.citations.all()],
                }
                for c in a.claims.all()
            ],
        }
    judgments = (
        Judgment.objects.filter(case__project=project)
        .order_by("case__case_id", "passage__passage_id")
        .values_list("case__case_id", "passage__passage_id", "grade")
    )
    for case_id, passage_id, grade in judgments.iterator(chunk_size=2000):
        yield {"type": "judgment", "case_id": case_id, "passage_id": passage_id, "grade": grade}


def jsonl(rows) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"
