"""Inter-reviewer agreement: raw agreement, Cohen's kappa, confusion matrices, bootstrap CIs.

Pure functions, no Django import. The definitions follow SPEC.md "Agreement": kappa comes from
scikit-learn's ``cohen_kappa_score`` with the field's full label list, linear weights for the
ordinal fields, and it is reported as ``None`` (never 0 or NaN) when chance agreement is 1.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

from annotate.schema import RELEVANCE  # the scale lives with the label schema

SUPPORT = ("supported", "contradicted", "insufficient_evidence")
SUPPORT_BINARY = ("supported", "unsupported")
SEVERITY = ("none", "minor", "major", "critical")
CITATION = ("supports", "does_not_support", "citation_not_found")
ABSTENTION = ("appropriate", "unnecessary")
REQUIRES_EVIDENCE = (True, False)

Weighting = Literal["linear", "quadratic"] | None


class FieldSpec(NamedTuple):
    labels: tuple[Hashable, ...]
    weights: Weighting


# Ordinal fields get linear weights so that "minor" vs "major" counts as a smaller disagreement
# than "none" vs "critical"; nominal fields have no order to exploit.
FIELDS: dict[str, FieldSpec] = {
    "support": FieldSpec(SUPPORT, None),
    "support_binary": FieldSpec(SUPPORT_BINARY, None),
    "severity": FieldSpec(SEVERITY, "linear"),
    "requires_evidence": FieldSpec(REQUIRES_EVIDENCE, None),
    "citation": FieldSpec(CITATION, None),
    "relevance": FieldSpec(RELEVANCE, "linear"),
    "abstention": FieldSpec(ABSTENTION, None),
}

# Below 30 items a single item moves raw agreement by more than 3 points (with n = 10, by 10
# points, as SPEC.md warns) and the kappa interval is too wide to compare reviewers or slices.
SMALL_SAMPLE_N = 30
# When one label takes 80% of all labels, kappa collapses even at high raw agreement (the
# "kappa paradox"); the report must say so rather than let a low kappa read as bad reviewing.
DOMINANT_LABEL_SHARE = 0.8

KAPPA_UNDEFINED_NO_ITEMS = "no doubly-labelled items"
KAPPA_UNDEFINED_ONE_LABEL = "both reviewers used one label"

# Measured: numpy's multinomial costs ~15× more per category than drawing one group index, so
# the bootstrap pools identical groups only when they are at least 15× fewer than the groups.
_MULTINOMIAL_PATTERN_RATIO = 15
# Bounds the memory of one block of bootstrap replicates (entries of the resampling matrix).
_BOOT_BLOCK_ENTRIES = 2_000_000


def _weight_matrix(k: int, weights: Weighting) -> np.ndarray:
    """Disagreement weights as in scikit-learn: 0 on the diagonal, label order defines distance."""
    idx = np.arange(k, dtype=float)
    if weights is None:
        return 1.0 - np.eye(k)
    if weights == "linear":
        return np.abs(idx[:, None] - idx[None, :])
    if weights == "quadratic":
        return (idx[:, None] - idx[None, :]) ** 2
    raise ValueError(f"unknown weighting {weights!r}; use None, 'linear' or 'quadratic'")


def kappa_from_confusion(matrix: Any, weights: Weighting = None) -> float | np.ndarray:
    """Cohen's kappa from a k×k confusion matrix, or from a stack of them (shape (..., k, k)).

    Same formula and weights as ``sklearn.metrics.cohen_kappa_score``, vectorised so that
    thousands of bootstrap replicates cost one numpy expression. Undefined kappas (chance
    agreement 1, or an empty matrix) come back as NaN here, for vectorised callers to filter;
    reports must turn them into ``None``.
    """
    conf = np.asarray(matrix, dtype=float)
    k = conf.shape[-1]
    if conf.ndim < 2 or conf.shape[-2] != k:
        raise ValueError("confusion matrix must be square")
    w = _weight_matrix(k, weights)
    rows = conf.sum(axis=-1)
    cols = conf.sum(axis=-2)
    total = rows.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = rows[..., :, None] * cols[..., None, :] / total[..., None, None]
        observed_dis = (w * conf).sum(axis=(-2, -1))
        expected_dis = (w * expected).sum(axis=(-2, -1))
        kappa = 1.0 - observed_dis / expected_dis
    # Products of counts are exact, so an undefined kappa has an expected disagreement of
    # exactly 0, as scikit-learn checks too.
    kappa = np.where((expected_dis == 0) | (total == 0), np.nan, kappa)
    return float(kappa) if kappa.ndim == 0 else kappa


def encode_labels(
    values: Sequence[Hashable], labels: Sequence[Hashable], who: str = "labels"
) -> np.ndarray:
    """Positions of ``values`` in the vocabulary ``labels``; ValueError names any stray label."""
    index = {label: i for i, label in enumerate(labels)}
    try:
        return np.fromiter((index[v] for v in values), dtype=np.intp, count=len(values))
    except (KeyError, TypeError):
        unknown = sorted({repr(v) for v in values if v not in index})
        raise ValueError(
            f"{who} used labels outside the vocabulary {list(labels)!r}: {', '.join(unknown)}"
        ) from None


def _confusion(a_idx: np.ndarray, b_idx: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(a_idx * k + b_idx, minlength=k * k).reshape(k, k)


def _kappa_point(
    a_idx: np.ndarray, b_idx: np.ndarray, conf: np.ndarray, weights: Weighting
) -> tuple[float | None, str | None]:
    n = int(conf.sum())
    if n == 0:
        return None, KAPPA_UNDEFINED_NO_ITEMS
    rows = conf.sum(axis=1)
    cols = conf.sum(axis=0)
    # Chance agreement sum(rows*cols)/n² is 1 exactly when both reviewers put every item under
    # the same single label; checked in integers so no float tolerance is involved.
    if int((rows.astype(object) * cols.astype(object)).sum()) == n * n:
        return None, KAPPA_UNDEFINED_ONE_LABEL
    k = conf.shape[0]
    # scikit-learn takes a second to load, and the gold export (which needs only numpy's
    # kappa_from_confusion) should not pay for it.
    # late import: heavy library (memory)
    from sklearn.metrics import cohen_kappa_score

    # Encoded indices with labels 0..k-1 give scikit-learn the same matrix and weights as the
    # raw labels, and skip its slow label inference on large object arrays.
    kappa = cohen_kappa_score(a_idx, b_idx, labels=list(range(k)), weights=weights)
    if not np.isfinite(kappa):
        return None, "kappa undefined"
    return float(kappa), None


def cohen_kappa(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    labels: Sequence[Hashable],
    weights: Weighting = None,
) -> tuple[float | None, str | None]:
    """Cohen's kappa of two aligned label sequences and, when it is ``None``, the reason."""
    if len(a) != len(b):
        raise ValueError(f"a and b must be aligned: {len(a)} != {len(b)} items")
    labels = tuple(labels)
    a_idx = encode_labels(a, labels, "reviewer A")
    b_idx = encode_labels(b, labels, "reviewer B")
    return _kappa_point(a_idx, b_idx, _confusion(a_idx, b_idx, len(labels)), weights)


def _unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0, return_inverse=True, return_counts=True)``, faster.

    Rows of small counts are read as digits of one integer so that a 1-D unique does the work
    (an order of magnitude faster than the row-wise sort); wide or large rows fall back.
    """
    base = int(rows.max()) + 1
    if base ** rows.shape[1] < 2**62:
        keys = rows @ (base ** np.arange(rows.shape[1], dtype=np.int64))
        _, first, inverse, counts = np.unique(
            keys, return_index=True, return_inverse=True, return_counts=True
        )
        return rows[first], inverse.ravel(), counts
    patterns, inverse, counts = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    return patterns, inverse.ravel(), counts


def _bootstrap_kappas(
    a_idx: np.ndarray,
    b_idx: np.ndarray,
    group_idx: np.ndarray,
    k: int,
    weights: Weighting,
    n_boot: int,
    seed: int,
) -> np.ndarray:
    """Kappa of ``n_boot`` cluster-bootstrap replicates (groups drawn with replacement).

    A replicate's confusion matrix is the sum of the drawn groups' own confusion matrices, so
    only the number of times each group is drawn matters. Groups with identical contributions
    are interchangeable: their pooled draw counts are multinomial in proportion to how many
    such groups there are, which lets typical data resample a few hundred distinct patterns
    instead of tens of thousands of groups.
    """
    n_groups = int(group_idx.max()) + 1
    per_group = np.bincount(
        group_idx * (k * k) + a_idx * k + b_idx, minlength=n_groups * k * k
    ).reshape(n_groups, k * k)
    patterns, pattern_of_group, multiplicity = _unique_rows(per_group)
    # int32 halves the memory traffic of the draws; the block bound keeps offsets far below 2³¹.
    pattern_of_group = pattern_of_group.astype(np.int32)
    patterns = patterns.astype(float)
    n_patterns = patterns.shape[0]
    rng = np.random.default_rng(seed)
    use_multinomial = n_patterns * _MULTINOMIAL_PATTERN_RATIO <= n_groups
    block = max(1, _BOOT_BLOCK_ENTRIES // n_groups)
    out = np.empty(n_boot)
    for start in range(0, n_boot, block):
        size = min(block, n_boot - start)
        if use_multinomial:
            draws = rng.multinomial(n_groups, multiplicity / n_groups, size=size)
        else:
            drawn = pattern_of_group[
                rng.integers(0, n_groups, size=(size, n_groups), dtype=np.int32)
            ]
            drawn += np.arange(size, dtype=np.int32)[:, None] * np.int32(n_patterns)
            draws = np.bincount(drawn.ravel(), minlength=size * n_patterns).reshape(
                size, n_patterns
            )
        confusions = (draws.astype(float) @ patterns).reshape(size, k, k)
        out[start : start + size] = kappa_from_confusion(confusions, weights)
    return out


@dataclass(frozen=True)
class FieldAgreement:
    """Agreement of two reviewers on one field; ``as_dict`` is the SPEC.md JSON shape."""

    n: int
    raw_agreement: float | None
    kappa: float | None
    weighting: Weighting
    ci95: tuple[float, float] | None
    labels: tuple[Hashable, ...]
    matrix: tuple[tuple[int, ...], ...]
    prevalence_label: Hashable | None
    prevalence: float | None
    dominant_label_warning: bool
    small_sample: bool
    kappa_undefined_reason: str | None
    # Kept off the JSON: how the interval was obtained, for callers that want to show it.
    n_groups: int = 0
    boot_used: int = 0
    boot_skipped: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "raw_agreement": self.raw_agreement,
            "kappa": self.kappa,
            "weighting": self.weighting,
            "ci95": list(self.ci95) if self.ci95 is not None else None,
            "confusion": {
                "labels": list(self.labels),
                "matrix": [list(row) for row in self.matrix],
            },
            "prevalence": (
                None
                if self.prevalence is None
                else {"label": self.prevalence_label, "share": self.prevalence}
            ),
            "dominant_label_warning": self.dominant_label_warning,
            "small_sample": self.small_sample,
            "kappa_undefined_reason": self.kappa_undefined_reason,
        }


def field_agreement(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    *,
    labels: Sequence[Hashable],
    weights: Weighting = None,
    groups: Sequence[Hashable] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> FieldAgreement:
    """Agreement between reviewer A's labels ``a`` and reviewer B's ``b`` on one field.

    ``a[i]`` and ``b[i]`` label the same item; every label must be in ``labels`` (the field's
    full vocabulary, whose order is the ordinal order for weighted kappa). ``groups[i]`` is the
    answer that item i belongs to: claims of one answer are not independent, so the 95% interval
    is a percentile bootstrap that resamples whole groups (each item is its own group when
    ``groups`` is None). Replicates whose kappa is undefined are skipped. The interval is
    ``None`` when kappa is, and reproducible for a given ``seed``.
    """
    if len(a) != len(b):
        raise ValueError(f"a and b must be aligned: {len(a)} != {len(b)} items")
    if groups is not None and len(groups) != len(a):
        raise ValueError(f"groups must be aligned with a: {len(groups)} != {len(a)} items")
    labels = tuple(labels)
    if not labels:
        raise ValueError("labels must not be empty")
    a_idx = encode_labels(a, labels, "reviewer A")
    b_idx = encode_labels(b, labels, "reviewer B")
    group_idx = None
    if groups is not None and len(a_idx):
        ids: dict[Hashable, int] = {}
        group_idx = np.fromiter(
            (ids.setdefault(g, len(ids)) for g in groups), dtype=np.intp, count=len(a_idx)
        )
    return field_agreement_encoded(
        a_idx,
        b_idx,
        labels=labels,
        weights=weights,
        group_idx=group_idx,
        n_boot=n_boot,
        seed=seed,
    )


def field_agreement_encoded(
    a_idx: np.ndarray,
    b_idx: np.ndarray,
    *,
    labels: Sequence[Hashable],
    weights: Weighting = None,
    group_idx: np.ndarray | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> FieldAgreement:
    """``field_agreement`` on labels already encoded as positions in ``labels`` and groups as
    non-negative integers: reports over many slices encode once and select with masks."""
    labels = tuple(labels)
    k = len(labels)
    n = len(a_idx)
    conf = _confusion(a_idx, b_idx, k)
    kappa, reason = _kappa_point(a_idx, b_idx, conf, weights)

    raw = prevalence = prevalence_label = None
    if n:
        raw = float(np.trace(conf)) / n
        label_counts = conf.sum(axis=0) + conf.sum(axis=1)
        top = int(np.argmax(label_counts))  # ties go to the earlier label in the vocabulary
        prevalence_label = labels[top]
        prevalence = float(label_counts[top]) / (2 * n)

    ci95 = None
    n_groups = boot_used = boot_skipped = 0
    if n:
        if group_idx is None:
            group_idx = np.arange(n)
        else:
            # Renumber 0..g-1 so the bootstrap draws only groups present in this selection.
            group_idx = np.unique(group_idx, return_inverse=True)[1]
        n_groups = int(group_idx.max()) + 1
    if kappa is not None and n_boot > 0:
        replicates = _bootstrap_kappas(a_idx, b_idx, group_idx, k, weights, n_boot, seed)
        valid = replicates[np.isfinite(replicates)]
        boot_used = int(valid.size)
        boot_skipped = n_boot - boot_used
        if boot_used:
            lo, hi = np.percentile(valid, [2.5, 97.5])
            ci95 = (float(lo), float(hi))

    return FieldAgreement(
        n=n,
        raw_agreement=raw,
        kappa=kappa,
        weighting=weights,
        ci95=ci95,
        labels=labels,
        matrix=tuple(tuple(int(x) for x in row) for row in conf),
        prevalence_label=prevalence_label,
        prevalence=prevalence,
        dominant_label_warning=prevalence is not None and prevalence >= DOMINANT_LABEL_SHARE,
        small_sample=n < SMALL_SAMPLE_N,
        kappa_undefined_reason=reason,
        n_groups=n_groups,
        boot_used=boot_used,
        boot_skipped=boot_skipped,
    )


@dataclass(frozen=True)
class EvidenceOverlap:
    n: int  # pairs where at least one side named a passage
    mean_jaccard: float | None
    neither: int = 0  # pairs where neither side named a passage: counted, never scored

    def as_dict(self) -> dict[str, Any]:
        return {"n": self.n, "mean_jaccard": self.mean_jaccard, "neither": self.neither}


def evidence_overlap(
    sets_a: Sequence[Sequence[Hashable]], sets_b: Sequence[Sequence[Hashable]]
) -> EvidenceOverlap:
    """Mean Jaccard index |A ∩ B| / |A ∪ B| of the evidence passages two reviewers chose.

    ``sets_a[i]`` and ``sets_b[i]`` are the passage ids reviewer A and B gave for item i.
    Only pairs where at least one side named a passage are scored: two empty sets are no
    evidence of agreement about evidence (they made a project that never labelled evidence
    read "overlap 0.93"), so they are counted apart as ``neither``. ``mean_jaccard`` is
    ``None`` when no pair is scored.
    """
    if len(sets_a) != len(sets_b):
        raise ValueError(f"sets_a and sets_b must be aligned: {len(sets_a)} != {len(sets_b)}")
    scores = []
    neither = 0
    for raw_a, raw_b in zip(sets_a, sets_b, strict=True):
        set_a, set_b = set(raw_a), set(raw_b)
        union = set_a | set_b
        if not union:
            neither += 1
            continue
        scores.append(len(set_a & set_b) / len(union))
    return EvidenceOverlap(
        n=len(scores), mean_jaccard=float(np.mean(scores)) if scores else None, neither=neither
    )
