"""Agreement when more than two reviewers label an item: Krippendorff's alpha, Fleiss' kappa,
Cohen's kappa for every pair of reviewers, and whether all label sets agree.

Pure functions, no Django import, as evaluation/agreement.py. The definitions follow SPEC.md
"More than two reviewers":
- alpha over all label sets, nominal or ordinal (the field's order), equal to the
  ``krippendorff`` package's (which computes the point estimate here);
- Fleiss' kappa for nominal fields, over the items with exactly ``raters`` label sets (the most
  label sets on one item);
- Cohen's kappa for each pair of reviewers, on the items both labelled (agreement.field_agreement);
- each with n and a 95% percentile interval from the bootstrap over answers (claims of one
  answer are not independent), seeded.

Both alpha and Fleiss' kappa are functions of sums over items (alpha of the coincidence matrix,
Fleiss' of the per-item agreement and the label totals), so a bootstrap replicate is the
weighted sum of the answers' own contributions: one matrix product for all replicates, as
agreement._bootstrap_kappas does for two reviewers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import krippendorff
import numpy as np

from evaluation.agreement import FieldAgreement, encode_labels, field_agreement

Level = Literal["nominal", "ordinal"]

ALPHA_UNDEFINED_NO_PAIRS = "no item has two label sets"
ALPHA_UNDEFINED_ONE_LABEL = "every label set used one label"
FLEISS_UNDEFINED_NO_ITEMS = "no item has the full number of label sets"
FLEISS_UNDEFINED_ONE_LABEL = "every label set used one label"

# Bounds the memory of one block of bootstrap draws (replicates × answers).
_BOOT_BLOCK_ENTRIES = 2_000_000


class LabelSet(NamedTuple):
    """One reviewer's label of one item; ``group`` is the answer the item belongs to."""

    item: Hashable
    group: Hashable
    rater: Hashable
    label: Hashable


@dataclass(frozen=True)
class MultiRaterAgreement:
    """Agreement of every label set on one field; ``as_dict`` is SPEC.md's JSON shape."""

    n: int  # items with at least two label sets (the pairable ones alpha reads)
    raters: int  # the most label sets on one item
    level: Level
    alpha: float | None
    alpha_ci95: tuple[float, float] | None
    alpha_undefined_reason: str | None
    fleiss_kappa: float | None  # nominal fields only
    fleiss_n: int  # items with exactly `raters` label sets
    fleiss_ci95: tuple[float, float] | None
    fleiss_undefined_reason: str | None
    all_agree: int  # items whose label sets all agree
    pairwise: dict[tuple[Hashable, Hashable], FieldAgreement] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "raters": self.raters,
            "alpha": self.alpha,
            "alpha_ci95": _listed(self.alpha_ci95),
            "alpha_n": self.n,
            "alpha_undefined_reason": self.alpha_undefined_reason,
            "all_agree": self.all_agree,
            "pairwise": [
                {"a": a, "b": b, "n": pair.n, "kappa": pair.kappa, "ci95": _listed(pair.ci95)}
                for (a, b), pair in self.pairwise.items()
            ],
        }
        if self.level == "nominal":
            out["fleiss_kappa"] = self.fleiss_kappa
            out["fleiss_ci95"] = _listed(self.fleiss_ci95)
            out["fleiss_n"] = self.fleiss_n
            out["fleiss_undefined_reason"] = self.fleiss_undefined_reason
        return out


def _listed(ci: tuple[float, float] | None) -> list[float] | None:
    return list(ci) if ci is not None else None


def all_agree(labels: Sequence[Hashable]) -> bool:
    """An item is agreed when it has two label sets or more and all of them agree."""
    return len(labels) >= 2 and all(label == labels[0] for label in labels)


def multirater_agreement(
    label_sets: Sequence[LabelSet],
    *,
    labels: Sequence[Hashable],
    level: Level = "nominal",
    n_boot: int = 1000,
    seed: int = 0,
    pairwise: bool = True,
) -> MultiRaterAgreement:
    """Agreement of all ``label_sets`` on one field. ``labels`` is the field's vocabulary, in
    its order for an ordinal field; a rater labels an item at most once (ValueError otherwise).
    Items with a single label set count for nothing (no pair to compare). ``pairwise`` False
    skips every pair's Cohen's kappa (a report that reads them for one slice only)."""
    if level not in ("nominal", "ordinal"):
        raise ValueError(f"unknown level {level!r}; use 'nominal' or 'ordinal'")
    labels = tuple(labels)
    k = len(labels)
    if not k:
        raise ValueError("labels must not be empty")
    codes = encode_labels([s.label for s in label_sets], labels, "a label set")

    by_item: dict[Hashable, dict[Hashable, int]] = defaultdict(dict)
    group_of: dict[Hashable, Hashable] = {}
    for s, code in zip(label_sets, codes, strict=True):
        if s.rater in by_item[s.item]:
            raise ValueError(f"rater {s.rater!r} labelled item {s.item!r} twice")
        by_item[s.item][s.rater] = int(code)
        group_of.setdefault(s.item, s.group)
    pairable = [item for item, sets in by_item.items() if len(sets) >= 2]
    raters = max((len(by_item[item]) for item in pairable), default=0)

    # counts[i, c]: how many label sets put pairable item i under label c.
    counts = np.zeros((len(pairable), k), dtype=np.int64)
    for i, item in enumerate(pairable):
        np.add.at(counts[i], list(by_item[item].values()), 1)
    group_ids: dict[Hashable, int] = {}
    group_idx = np.fromiter(
        (group_ids.setdefault(group_of[item], len(group_ids)) for item in pairable),
        dtype=np.intp,
        count=len(pairable),
    )
    rng = np.random.default_rng(seed)
    draws = _group_draws(rng, len(group_ids), n_boot)

    alpha, alpha_reason = _alpha_point(counts, k, level)
    alpha_ci = None
    if alpha is not None and draws is not None:
        per_group = _per_group(_coincidences(counts), group_idx, len(group_ids))
        alpha_ci = _percentile(_alpha_from_coincidences(draws @ per_group, k, level))

    fleiss = fleiss_ci = fleiss_reason = None
    full = counts[counts.sum(axis=1) == raters] if raters else counts[:0]
    if level == "nominal":
        fleiss, fleiss_reason = _fleiss_point(full)
        if fleiss is not None and draws is not None:
            full_groups = group_idx[counts.sum(axis=1) == raters]
            per_group = _per_group(_fleiss_terms(full), full_groups, len(group_ids))
            fleiss_ci = _percentile(_fleiss_from_terms(draws @ per_group, raters))

    return MultiRaterAgreement(
        n=len(pairable),
        raters=raters,
        level=level,
        alpha=alpha,
        alpha_ci95=alpha_ci,
        alpha_undefined_reason=alpha_reason,
        fleiss_kappa=fleiss,
        fleiss_n=int(full.shape[0]),
        fleiss_ci95=fleiss_ci,
        fleiss_undefined_reason=fleiss_reason if level == "nominal" else None,
        all_agree=int((counts.max(axis=1, initial=0) == counts.sum(axis=1)).sum()),
        pairwise=_pairwise(by_item, group_of, labels, level, n_boot, seed) if pairwise else {},
    )


# --- Krippendorff's alpha ---------------------------------------------------------------------


def _alpha_point(counts: np.ndarray, k: int, level: Level) -> tuple[float | None, str | None]:
    if counts.shape[0] == 0:
        return None, ALPHA_UNDEFINED_NO_PAIRS
    totals = counts.sum(axis=0)
    if np.count_nonzero(totals) < 2:
        return None, ALPHA_UNDEFINED_ONE_LABEL
    # The package wants raters × units; each item's label sets fill its first rows, in any
    # order (alpha ignores which rater gave which value), the rest stay missing.
    data = np.full((int(counts.sum(axis=1).max()), counts.shape[0]), np.nan)
    for i, row in enumerate(counts):
        values = np.repeat(np.arange(k), row)
        data[: values.size, i] = values
    value = krippendorff.alpha(
        reliability_data=data, value_domain=list(range(k)), level_of_measurement=level
    )
    return float(value), None


def _coincidences(counts: np.ndarray) -> np.ndarray:
    """Each item's coincidence matrix (Krippendorff): o[c, d] = n_c (n_d - [c = d]) / (m - 1),
    flattened, one row per item."""
    m = counts.sum(axis=1).astype(float)
    pairs = counts[:, :, None] * counts[:, None, :] - np.einsum(
        "ic,cd->icd", counts, np.eye(counts.shape[1])
    )
    return (pairs / (m - 1)[:, None, None]).reshape(counts.shape[0], -1)


def _delta(marginals: np.ndarray, level: Level) -> np.ndarray:
    """Squared distances between labels, from the coincidences' marginals (ordinal metric of
    Krippendorff: the ranks' mass between two values, less half of each end); stacked."""
    k = marginals.shape[-1]
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(k), marginals.shape[:-1] + (k, k))
    cumulative = np.cumsum(marginals, axis=-1)
    lo = np.minimum.outer(np.arange(k), np.arange(k))
    hi = np.maximum.outer(np.arange(k), np.arange(k))
    before_lo = np.where(lo > 0, np.take(cumulative, lo - 1, axis=-1), 0.0)
    between = np.take(cumulative, hi, axis=-1) - before_lo
    ends = (marginals[..., :, None] + marginals[..., None, :]) / 2
    return (between - ends) ** 2


def _alpha_from_coincidences(flat: np.ndarray, k: int, level: Level) -> np.ndarray:
    o = flat.reshape(flat.shape[:-1] + (k, k))
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    delta = _delta(n_c, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = (o * delta).sum(axis=(-2, -1))
        expected = (n_c[..., :, None] * n_c[..., None, :] * delta).sum(axis=(-2, -1)) / (n - 1)
        return 1.0 - observed / expected


# --- Fleiss' kappa ----------------------------------------------------------------------------


def _fleiss_point(full: np.ndarray) -> tuple[float | None, str | None]:
    if full.shape[0] == 0:
        return None, FLEISS_UNDEFINED_NO_ITEMS
    value = float(_fleiss_from_terms(_fleiss_terms(full).sum(axis=0), int(full[0].sum())))
    if not np.isfinite(value):
        return None, FLEISS_UNDEFINED_ONE_LABEL
    return value, None


def _fleiss_terms(full: np.ndarray) -> np.ndarray:
    """Per item: [1, sum of n_ic (n_ic - 1), n_i1 ... n_ik], summed over items by the caller."""
    pairs = (full * (full - 1)).sum(axis=1, keepdims=True)
    return np.hstack([np.ones((full.shape[0], 1)), pairs, full]).astype(float)


def _fleiss_from_terms(terms: np.ndarray, m: int) -> np.ndarray:
    items, pairs, totals = terms[..., 0], terms[..., 1], terms[..., 2:]
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = pairs / (items * m * (m - 1))
        shares = totals / (items * m)[..., None]
        chance = (shares**2).sum(axis=-1)
        return np.where(chance >= 1.0, np.nan, (observed - chance) / (1.0 - chance))


# --- The bootstrap over answers ---------------------------------------------------------------


def _group_draws(rng: np.random.Generator, n_groups: int, n_boot: int) -> np.ndarray | None:
    """How many times each answer is drawn in each replicate: (n_boot, n_groups)."""
    if n_groups == 0 or n_boot <= 0:
        return None
    out = np.empty((n_boot, n_groups))
    block = max(1, _BOOT_BLOCK_ENTRIES // n_groups)
    for start in range(0, n_boot, block):
        size = min(block, n_boot - start)
        drawn = rng.integers(0, n_groups, size=(size, n_groups))
        drawn += np.arange(size)[:, None] * n_groups
        out[start : start + size] = np.bincount(drawn.ravel(), minlength=size * n_groups).reshape(
            size, n_groups
        )
    return out


def _per_group(rows: np.ndarray, group_idx: np.ndarray, n_groups: int) -> np.ndarray:
    out = np.zeros((n_groups, rows.shape[1]))
    np.add.at(out, group_idx, rows)
    return out


def _percentile(replicates: np.ndarray) -> tuple[float, float] | None:
    valid = replicates[np.isfinite(replicates)]
    if not valid.size:
        return None
    lo, hi = np.percentile(valid, [2.5, 97.5])
    return float(lo), float(hi)


# --- Pairs of reviewers -----------------------------------------------------------------------


def _pairwise(
    by_item: dict[Hashable, dict[Hashable, int]],
    group_of: dict[Hashable, Hashable],
    labels: tuple[Hashable, ...],
    level: Level,
    n_boot: int,
    seed: int,
) -> dict[tuple[Hashable, Hashable], FieldAgreement]:
    """Cohen's kappa of every pair of reviewers who share an item, on the items they share;
    pairs ordered by their reviewers' sort order (str of the rater)."""
    shared: dict[tuple[Hashable, Hashable], list[Hashable]] = defaultdict(list)
    for item, sets in by_item.items():
        ordered = sorted(sets, key=str)
        for i, a in enumerate(ordered):
            for b in ordered[i + 1 :]:
                shared[(a, b)].append(item)
    weights = "linear" if level == "ordinal" else None
    return {
        (a, b): field_agreement(
            [labels[by_item[item][a]] for item in items],
            [labels[by_item[item][b]] for item in items],
            labels=labels,
            weights=weights,
            groups=[group_of[item] for item in items],
            n_boot=n_boot,
            seed=seed,
        )
        for (a, b), items in sorted(
            shared.items(), key=lambda pair: (str(pair[0][0]), str(pair[0][1]))
        )
    }
