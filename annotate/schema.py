"""A project's label schema: which fields its reviewers label (SPEC.md "Label schema").

A hallucination study labels support only; a RAG evaluation also severity, evidence and
citations. `support` is always labelled, on a three-way or a binary scale; every other field is
on or off. A field that is off is not on the screen, not required to submit, refused in
imported labels, and absent from agreement, gold and reports -- never shown as a number.

Whatever the scale, `support_binary` (supported vs unsupported, where unsupported is
contradicted or insufficient_evidence) is derived everywhere: it is what binary figures read.

Pure: no Django import, so the statistics modules can use it too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SUPPORTED, UNSUPPORTED = "supported", "unsupported"
CONTRADICTED, INSUFFICIENT = "contradicted", "insufficient_evidence"
SCALES: dict[str, tuple[str, ...]] = {
    "three_way": (SUPPORTED, CONTRADICTED, INSUFFICIENT),
    "binary": (SUPPORTED, UNSUPPORTED),
}
BINARY = SCALES["binary"]
RELEVANCE = (0, 1, 2)  # an answer's relevance: off-topic, partial, direct (RELEVANCE_RUBRIC)
CLAIM_FIELDS = ("severity", "requires_evidence", "evidence", "citations")
ANSWER_FIELDS = ("relevance", "abstention", "failure_labels")
SCHEMA_KEYS = ("support", "claim_fields", "answer_fields")


def support_binary(value: str | None) -> str | None:
    """supported -> supported; any unsupported subtype -> unsupported; anything else -> None."""
    if value == SUPPORTED:
        return SUPPORTED
    if value in (CONTRADICTED, INSUFFICIENT, UNSUPPORTED):
        return UNSUPPORTED
    return None


class SchemaInvalid(ValueError):
    """A label schema that cannot be used; `problems` lists each reason."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True, slots=True)
class LabelSchema:
    support: str = "three_way"
    claim_fields: tuple[str, ...] = CLAIM_FIELDS
    answer_fields: tuple[str, ...] = ANSWER_FIELDS

    @classmethod
    def parse(cls, value: Any) -> LabelSchema:
        """A schema from its JSON form; missing keys take the default (everything on).
        Raises SchemaInvalid naming every problem and the allowed values."""
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise SchemaInvalid(["'label_schema' must be an object"])
        problems = [
            f"unknown key '{key}' in label_schema (allowed: {', '.join(SCHEMA_KEYS)})"
            for key in sorted(set(value) - set(SCHEMA_KEYS))
        ]
        support = value.get("support", "three_way")
        if support not in SCALES:
            problems.append(
                f"label_schema 'support' must be one of {', '.join(SCALES)}, got {support!r}"
            )
        fields = {}
        for key, allowed in (("claim_fields", CLAIM_FIELDS), ("answer_fields", ANSWER_FIELDS)):
            chosen = value.get(key, list(allowed))
            if not isinstance(chosen, list) or not all(isinstance(x, str) for x in chosen):
                problems.append(f"label_schema '{key}' must be a list of field names")
                chosen = []
            unknown = [x for x in chosen if x not in allowed]
            if unknown:
                problems.append(
                    f"label_schema '{key}' has unknown field(s) {', '.join(map(repr, unknown))} "
                    f"(allowed: {', '.join(allowed)})"
                )
            # Stored in the canonical order, so two schemas with the same fields are equal.
            fields[key] = tuple(x for x in allowed if x in chosen)
        if problems:
            raise SchemaInvalid(problems)
        return cls(support=support, **fields)

    @classmethod
    def from_json(cls, text: str) -> LabelSchema:
        """A schema given as JSON text (an import's --label-schema, an upload's field),
        checked as a bundle header's `label_schema` is."""
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise SchemaInvalid([f"the label schema is not JSON ({exc})"]) from exc
        if value is None:  # `null` would mean the default: say what is meant instead
            raise SchemaInvalid(["'label_schema' must be an object"])
        return cls.parse(value)

    @classmethod
    def of(cls, stored: Any) -> LabelSchema:
        """The schema stored on a project (already validated when it was set)."""
        try:
            return cls.parse(stored or None)
        except SchemaInvalid:
            return cls()

    def as_dict(self) -> dict[str, Any]:
        return {
            "support": self.support,
            "claim_fields": list(self.claim_fields),
            "answer_fields": list(self.answer_fields),
        }

    @property
    def binary(self) -> bool:
        return self.support == "binary"

    @property
    def support_labels(self) -> tuple[str, ...]:
        return SCALES[self.support]

    def claim(self, name: str) -> bool:
        """Whether a claim field is labelled: `support` and `note` always are."""
        return name in ("support", "note") or name in self.claim_fields

    def answer(self, name: str) -> bool:
        return name == "note" or name in self.answer_fields

    def describe(self) -> str:
        """One line for people: 'support (binary); claims: severity, evidence; answers: none'."""
        claims = ", ".join(self.claim_fields) or "none"
        answers = ", ".join(self.answer_fields) or "none"
        scale = "three-way" if self.support == "three_way" else "binary"
        return f"support ({scale}); other claim fields: {claims}; answer fields: {answers}"

    def changes_from(self, old: LabelSchema) -> str:
        """What differs from `old`, for an import's result: 'support three_way → binary;
        claim fields severity, evidence → none' (only the parts that changed)."""

        def listed(names: tuple[str, ...]) -> str:
            return ", ".join(names) or "none"

        parts = []
        if old.support != self.support:
            parts.append(f"support {old.support} → {self.support}")
        for key, label in (("claim_fields", "claim fields"), ("answer_fields", "answer fields")):
            before, after = getattr(old, key), getattr(self, key)
            if before != after:
                parts.append(f"{label} {listed(before)} → {listed(after)}")
        return "; ".join(parts) or "none"


DEFAULT = LabelSchema()


def default_schema() -> dict[str, Any]:
    """The model field's default (a callable, so no two projects share one dict)."""
    return DEFAULT.as_dict()
