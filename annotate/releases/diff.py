"""Two releases compared (diff_gold): the rows one has and the other not, and the rows both
have that changed, field by field, with counts. A row is known by its item, answer and claim
index; a nested field (gold, gold_source, rationale, the reviewers' labels ...) is compared
key by key ("gold.support"). The export's provenance (export_id, as_of, content_hash) is not
a change."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from annotate.models import GoldRelease
from annotate.releases.selectors import release_rows

PROVENANCE = ("export_id", "as_of", "content_hash")
Key = tuple[str, str, Any]


def row_key(row: dict) -> Key:
    return (row["item"], row["answer_id"], row.get("claim_index"))


def key_dict(key: Key) -> dict:
    item, answer_id, claim_index = key
    out = {"item": item, "answer_id": answer_id}
    if claim_index is not None:
        out["claim_index"] = claim_index
    return out


@dataclass
class RowChange:
    key: Key
    fields: dict[str, tuple[Any, Any]]  # field -> (before, after)

    def as_dict(self) -> dict:
        return {
            **key_dict(self.key),
            "fields": {name: {"before": a, "after": b} for name, (a, b) in self.fields.items()},
        }


@dataclass
class GoldDiff:
    before: str
    after: str
    added: list[Key] = field(default_factory=list)
    removed: list[Key] = field(default_factory=list)
    changed: list[RowChange] = field(default_factory=list)

    @property
    def by_field(self) -> Counter:
        """How many changed rows changed each field."""
        return Counter(name for change in self.changed for name in change.fields)

    def as_dict(self) -> dict:
        return {
            "before": self.before,
            "after": self.after,
            "counts": {
                "added": len(self.added),
                "removed": len(self.removed),
                "changed": len(self.changed),
            },
            "by_field": dict(sorted(self.by_field.items())),
            "added": [key_dict(k) for k in self.added],
            "removed": [key_dict(k) for k in self.removed],
            "changed": [change.as_dict() for change in self.changed],
        }

    def lines(self) -> list[str]:
        """The diff for people (the command's output)."""
        out = [
            f"{self.before} -> {self.after}: {len(self.added)} added, {len(self.removed)} "
            f"removed, {len(self.changed)} changed"
        ]
        for name, n in sorted(self.by_field.items()):
            out.append(f"  {name}: {n} row{'s' if n != 1 else ''}")
        for key in self.added:
            out.append(f"+ {_shown(key)}")
        for key in self.removed:
            out.append(f"- {_shown(key)}")
        for change in self.changed:
            out.append(f"~ {_shown(change.key)}")
            for name, (a, b) in change.fields.items():
                out.append(f"    {name}: {a!r} -> {b!r}")
        return out


def _shown(key: Key) -> str:
    item, answer_id, claim_index = key
    return f"{item} {answer_id}" + ("" if claim_index is None else f" claim {claim_index}")


def _hashes(release: GoldRelease) -> dict[Key, str]:
    return {row_key(row): row["content_hash"] for row in release_rows(release)}


def _rows(release: GoldRelease, keys: set[Key]) -> dict[Key, dict]:
    return {row_key(row): row for row in release_rows(release) if row_key(row) in keys}


def _flat(row: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in row.items():
        if name in PROVENANCE:
            continue
        if isinstance(value, dict):
            for inner, v in value.items():
                out[f"{name}.{inner}"] = v
        else:
            out[name] = value
    return out


def field_changes(before: dict, after: dict) -> dict[str, tuple[Any, Any]]:
    a, b = _flat(before), _flat(after)
    return {
        name: (a.get(name), b.get(name))
        for name in sorted(set(a) | set(b))
        if a.get(name) != b.get(name) or (name in a) != (name in b)
    }


def diff_releases(before: GoldRelease, after: GoldRelease) -> GoldDiff:
    """What changed from `before` to `after`. Reads each file twice (the rows' hashes, then
    the changed rows), holding only the keys and the changed rows."""
    if before.project_id != after.project_id:
        raise ValueError("Both releases must be of the same project.")
    old, new = _hashes(before), _hashes(after)
    result = GoldDiff(before=before.name, after=after.name)
    result.added = sorted((k for k in new if k not in old), key=_order)
    result.removed = sorted((k for k in old if k not in new), key=_order)
    differing = {k for k in new if k in old and new[k] != old[k]}
    if differing:
        rows_a, rows_b = _rows(before, differing), _rows(after, differing)
        for key in sorted(differing, key=_order):
            fields = field_changes(rows_a[key], rows_b[key])
            if fields:
                result.changed.append(RowChange(key, fields))
    return result


def _order(key: Key):
    item, answer_id, claim_index = key
    return (answer_id, item != "claim", -1 if claim_index is None else claim_index)
