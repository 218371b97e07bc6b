"""A bundle as plain records (no ORM): what parse_bundle (annotate.imports.bundles) returns.

Each record's `row()` is its canonical bundle object (defaults filled in, numbers normalised);
`content_hash` of that row is what makes re-imports idempotent and detects changed content.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from annotate.schema import LabelSchema

SPLITS = ("dev", "heldout")


def normalize_ws(text: str) -> str:
    """Collapse runs of whitespace so a quote copied across a line break still matches."""
    return " ".join(text.split())


def quote_occurs(quote: str, passage_text: str) -> bool:
    needle = normalize_ws(quote)
    return bool(needle) and needle in normalize_ws(passage_text)


def canonical_number(value: int | float | None) -> int | float | None:
    """1200 and 1200.0 are the same figure; write them one way so hashes and exports agree.
    Only where a float holds every integer exactly (below 2^53): 1e19 written as the integer
    10000000000000000000 would be a number no import reads back (beyond a 64-bit integer)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


def content_hash(row: Mapping[str, Any]) -> str:
    encoded = json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha1(encoded.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class PassageRecord:
    line: int
    passage_id: str
    text: str
    document: str = ""
    location: str = ""
    title: str = ""

    def row(self) -> dict[str, Any]:
        return {
            "type": "passage",
            "passage_id": self.passage_id,
            "text": self.text,
            "document": self.document,
            "location": self.location,
            "title": self.title,
        }


@dataclass(slots=True)
class VariantRecord:
    line: int
    name: str
    description: str = ""
    model: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        return {
            "type": "variant",
            "name": self.name,
            "description": self.description,
            "model": self.model,
            "settings": self.settings,
        }


@dataclass(slots=True)
class EvidenceRecord:
    passage_id: str
    quote: str
    location: str = ""


@dataclass(slots=True)
class CaseRecord:
    line: int
    case_id: str
    question: str
    answerable: bool
    adversarial: bool
    required_facts: list[str] = field(default_factory=list)
    reference: str = ""
    forbidden_claims: list[str] = field(default_factory=list)
    evidence: list[EvidenceRecord] = field(default_factory=list)
    split: str = "dev"
    checked_documents: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)

    def row(self) -> dict[str, Any]:
        return {
            "type": "case",
            "case_id": self.case_id,
            "question": self.question,
            "answerable": self.answerable,
            "adversarial": self.adversarial,
            "required_facts": self.required_facts,
            "forbidden_claims": self.forbidden_claims,
            "evidence": [
                {"passage_id": e.passage_id, "quote": e.quote, "location": e.location}
                for e in self.evidence
            ],
            "split": self.split,
            "checked_documents": self.checked_documents,
            "tags": self.tags,
            # Only when present, so cases imported before `reference` existed keep their hash.
            **({"reference": self.reference} if self.reference else {}),
        }


@dataclass(slots=True)
class RetrievedRecord:
    passage_id: str
    rank: int
    score: float | None
    in_prompt: bool


@dataclass(slots=True)
class ClaimRecord:
    text: str
    start: int
    end: int
    citations: tuple[str, ...]


@dataclass(slots=True)
class AnswerRecord:
    line: int
    answer_id: str
    case_id: str
    variant: str
    text: str
    sample: int = 0
    abstained: bool = False
    elapsed_ms: float | None = None
    request_cost: float | None = None
    retrieved: list[RetrievedRecord] = field(default_factory=list)
    claims: list[ClaimRecord] | None = None  # None: the app proposes sentence-level claims

    def row(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "type": "answer",
            "answer_id": self.answer_id,
            "case_id": self.case_id,
            "variant": self.variant,
            "sample": self.sample,
            "text": self.text,
            "abstained": self.abstained,
            "elapsed_ms": canonical_number(self.elapsed_ms),
            "request_cost": canonical_number(self.request_cost),
            "retrieved": [
                {
                    "passage_id": r.passage_id,
                    "rank": r.rank,
                    "score": canonical_number(r.score),
                    "in_prompt": r.in_prompt,
                }
                for r in self.retrieved
            ],
        }
        if self.claims is not None:
            row["claims"] = [
                {"text": c.text, "start": c.start, "end": c.end, "citations": list(c.citations)}
                for c in self.claims
            ]
        return row


@dataclass(slots=True)
class JudgmentRecord:
    line: int
    case_id: str
    passage_id: str
    grade: int

    def row(self) -> dict[str, Any]:
        return {
            "type": "judgment",
            "case_id": self.case_id,
            "passage_id": self.passage_id,
            "grade": self.grade,
        }


@dataclass
class Bundle:
    corpus_version: str | None = None
    name: str | None = None
    label_schema: LabelSchema | None = None  # None: the header did not say
    passages: dict[str, PassageRecord] = field(default_factory=dict)
    variants: dict[str, VariantRecord] = field(default_factory=dict)
    cases: dict[str, CaseRecord] = field(default_factory=dict)
    answers: dict[str, AnswerRecord] = field(default_factory=dict)
    judgments: dict[tuple[str, str], JudgmentRecord] = field(default_factory=dict)
    lines: int = 0
