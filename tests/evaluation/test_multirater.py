"""Agreement of more than two reviewers (evaluation/multirater.py), checked against the
krippendorff package, statsmodels' Fleiss' kappa and scikit-learn's Cohen's kappa, and on the
published example of Krippendorff's alpha."""

from __future__ import annotations

import itertools
import warnings

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa

from evaluation import multirater
from evaluation.multirater import LabelSet, all_agree, multirater_agreement

SUPPORT = ("supported", "contradicted", "insufficient_evidence")
SEVERITY = ("none", "minor", "major", "critical")

# The krippendorff package's own example (after Krippendorff 2011): three coders, fifteen
# units, values 1-4, missing values; nominal alpha 0.691358.
EXAMPLE = [
    [None, None, None, None, None, 3, 4, 1, 2, 1, 1, 3, 3, None, 3],
    [1, None, 2, 1, 3, 3, 4, 3, None, None, None, None, None, None, None],
    [None, None, 2, 1, 3, 4, 4, None, 2, 1, 1, 3, 3, None, 4],
]


def sets_from_matrix(matrix, groups=None):
    """LabelSets from a raters × items matrix (None = not labelled)."""
    out = []
    for rater, row in enumerate(matrix):
        for item, value in enumerate(row):
            if value is not None:
                group = item if groups is None else groups[item]
                out.append(LabelSet(item, group, f"r{rater}", value))
    return out


def package_alpha(matrix, labels, level):
    index = {label: i for i, label in enumerate(labels)}
    data = [[np.nan if v is None else index[v] for v in row] for row in matrix]
    return krippendorff.alpha(
        reliability_data=data, value_domain=list(range(len(labels))), level_of_measurement=level
    )


def test_the_published_example():
    result = multirater_agreement(
        sets_from_matrix(EXAMPLE), labels=(1, 2, 3, 4), level="nominal", n_boot=0
    )
    assert result.alpha == pytest.approx(0.691358, abs=1e-6)
    # units 1, 2 and 14 have fewer than two values: not pairable
    assert result.n == 12
    assert result.raters == 3
    assert result.alpha_ci95 is None  # no bootstrap asked for


@st.composite
def label_matrices(draw):
    raters = draw(st.integers(2, 5))
    items = draw(st.integers(2, 25))
    k = draw(st.integers(2, 4))
    cell = st.one_of(st.none(), st.integers(0, k - 1))
    matrix = [[draw(cell) for _ in range(items)] for _ in range(raters)]
    groups = [draw(st.integers(0, max(1, items // 3))) for _ in range(items)]
    return matrix, tuple(range(k)), groups


@settings(max_examples=150, deadline=None)
@given(label_matrices(), st.sampled_from(["nominal", "ordinal"]))
def test_the_bootstraps_sum_of_coincidences_is_the_packages_alpha(case, level):
    """A bootstrap replicate's alpha comes from summed per-item coincidence matrices; drawn
    once each (every weight 1), the sum must give the package's alpha exactly."""
    matrix, labels, _ = case
    columns = list(zip(*matrix, strict=True))
    pairable = [col for col in columns if sum(v is not None for v in col) >= 2]
    if not pairable:
        return
    counts = np.array([[sum(v == c for v in col) for c in labels] for col in pairable])
    if np.count_nonzero(counts.sum(axis=0)) < 2:
        return
    summed = multirater._coincidences(counts).sum(axis=0)
    ours = float(multirater._alpha_from_coincidences(summed, len(labels), level))
    assert ours == pytest.approx(package_alpha(matrix, labels, level), abs=1e-9)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # statsmodels' NaN
@settings(max_examples=100, deadline=None)
@given(label_matrices())
def test_fleiss_kappa_equals_statsmodels(case):
    matrix, labels, groups = case
    result = multirater_agreement(
        sets_from_matrix(matrix, groups), labels=labels, level="nominal", n_boot=0
    )
    columns = list(zip(*matrix, strict=True))
    sizes = [sum(v is not None for v in col) for col in columns]
    raters = max((s for s in sizes if s >= 2), default=0)
    full = [col for col, size in zip(columns, sizes, strict=True) if raters and size == raters]
    assert result.raters == raters
    assert result.fleiss_n == len(full)
    if not full:
        assert result.fleiss_kappa is None
        return
    table = np.array([[sum(v == c for v in col) for c in labels] for col in full])
    expected = fleiss_kappa(table, method="fleiss")
    if np.isfinite(expected) and table.sum(axis=0).max() < table.sum():
        assert result.fleiss_kappa == pytest.approx(expected, abs=1e-9)
    else:
        assert result.fleiss_kappa is None
        assert result.fleiss_undefined_reason == multirater.FLEISS_UNDEFINED_ONE_LABEL


@settings(max_examples=60, deadline=None)
@given(label_matrices(), st.sampled_from(["nominal", "ordinal"]))
def test_every_pair_is_cohens_kappa_on_the_items_both_labelled(case, level):
    matrix, labels, groups = case
    result = multirater_agreement(
        sets_from_matrix(matrix, groups), labels=labels, level=level, n_boot=0
    )
    weights = "linear" if level == "ordinal" else None
    seen = set()
    for a, b in itertools.combinations(range(len(matrix)), 2):
        both = [
            (x, y)
            for x, y in zip(matrix[a], matrix[b], strict=True)
            if x is not None and y is not None
        ]
        if not both:
            continue
        seen.add((f"r{a}", f"r{b}"))
        pair = result.pairwise[(f"r{a}", f"r{b}")]
        assert pair.n == len(both)
        xs, ys = zip(*both, strict=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scikit-learn warns of its own NaN kappa
            expected = cohen_kappa_score(xs, ys, labels=list(labels), weights=weights)
        if pair.kappa is None:
            assert not np.isfinite(expected) or len(set(xs) | set(ys)) == 1
        else:
            assert pair.kappa == pytest.approx(expected, abs=1e-9)
    assert set(result.pairwise) == seen


def three_reviewers(n_answers=40, claims=3, seed=7, noise=0.2):
    """Three reviewers over answers of a few claims each, agreeing with a truth 80% of the
    time, the third absent from a quarter of the answers."""
    rng = np.random.default_rng(seed)
    out = []
    for answer in range(n_answers):
        for claim in range(claims):
            truth = rng.integers(0, 3)
            for rater in ("ana", "ben", "cy"):
                if rater == "cy" and answer % 4 == 0:
                    continue
                label = truth if rng.random() > noise else rng.integers(0, 3)
                out.append(LabelSet((answer, claim), answer, rater, SUPPORT[label]))
    return out


def test_the_interval_holds_the_estimate_and_repeats_with_its_seed():
    sets = three_reviewers()
    first = multirater_agreement(sets, labels=SUPPORT, n_boot=500, seed=3)
    again = multirater_agreement(sets, labels=SUPPORT, n_boot=500, seed=3)
    other = multirater_agreement(sets, labels=SUPPORT, n_boot=500, seed=4)
    assert first.alpha_ci95[0] <= first.alpha <= first.alpha_ci95[1]
    assert first.fleiss_ci95[0] <= first.fleiss_kappa <= first.fleiss_ci95[1]
    assert first.alpha_ci95 == again.alpha_ci95
    assert first.alpha_ci95 != other.alpha_ci95
    assert first.raters == 3
    assert first.n == 120
    assert first.fleiss_n == 90  # the answers "cy" skipped have two label sets, not three
    assert set(first.pairwise) == {("ana", "ben"), ("ana", "cy"), ("ben", "cy")}
    assert first.pairwise[("ana", "cy")].n == 90


def test_the_bootstrap_resamples_answers_not_claims():
    """Claims of one answer move together: with every answer's claims identical, resampling
    answers gives a wider interval than treating each claim as its own unit would."""
    base = three_reviewers(n_answers=30, claims=1, seed=11)
    copied = [LabelSet((s.item, c), s.group, s.rater, s.label) for s in base for c in range(5)]
    by_answer = multirater_agreement(copied, labels=SUPPORT, n_boot=800, seed=1)
    by_claim = multirater_agreement(
        [LabelSet(s.item, s.item, s.rater, s.label) for s in copied],
        labels=SUPPORT,
        n_boot=800,
        seed=1,
    )
    assert by_answer.alpha == pytest.approx(by_claim.alpha)
    width = lambda ci: ci[1] - ci[0]  # noqa: E731
    assert width(by_answer.alpha_ci95) > 1.5 * width(by_claim.alpha_ci95)


def test_ordinal_alpha_reads_the_order_and_has_no_fleiss():
    # Two raters a step apart everywhere, or three steps apart: ordinal alpha tells them apart,
    # nominal alpha does not.
    near = [
        LabelSet(i, i, r, SEVERITY[(i % 3) + (r == "b")]) for i in range(30) for r in ("a", "b")
    ]
    far = [
        LabelSet(i, i, r, SEVERITY[0 if r == "a" else 3] if i % 2 else SEVERITY[i % 3])
        for i in range(30)
        for r in ("a", "b")
    ]
    nominal_near = multirater_agreement(near, labels=SEVERITY, level="nominal", n_boot=0)
    ordinal_near = multirater_agreement(near, labels=SEVERITY, level="ordinal", n_boot=0)
    ordinal_far = multirater_agreement(far, labels=SEVERITY, level="ordinal", n_boot=0)
    assert ordinal_near.alpha > nominal_near.alpha
    assert ordinal_far.alpha < ordinal_near.alpha
    assert ordinal_near.fleiss_kappa is None
    assert "fleiss_kappa" not in ordinal_near.as_dict()
    assert "fleiss_kappa" in nominal_near.as_dict()


def test_undefined_values_say_why():
    one_label = [LabelSet(i, i, r, "supported") for i in range(5) for r in ("a", "b", "c")]
    result = multirater_agreement(one_label, labels=SUPPORT, n_boot=100)
    assert result.alpha is None
    assert result.alpha_undefined_reason == multirater.ALPHA_UNDEFINED_ONE_LABEL
    assert result.fleiss_kappa is None
    assert result.alpha_ci95 is None
    assert result.all_agree == 5

    singles = [LabelSet(i, i, "a", "supported") for i in range(5)]
    empty = multirater_agreement(singles, labels=SUPPORT, n_boot=100)
    assert (empty.n, empty.raters, empty.alpha) == (0, 0, None)
    assert empty.alpha_undefined_reason == multirater.ALPHA_UNDEFINED_NO_PAIRS
    assert empty.fleiss_undefined_reason == multirater.FLEISS_UNDEFINED_NO_ITEMS
    assert empty.pairwise == {}


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="twice"):
        multirater_agreement(
            [LabelSet(1, 1, "a", "supported"), LabelSet(1, 1, "a", "contradicted")],
            labels=SUPPORT,
        )
    with pytest.raises(ValueError, match="outside the vocabulary"):
        multirater_agreement([LabelSet(1, 1, "a", "maybe")], labels=SUPPORT)
    with pytest.raises(ValueError, match="level"):
        multirater_agreement([], labels=SUPPORT, level="interval")


def test_an_item_is_agreed_only_when_all_its_label_sets_agree():
    assert all_agree(["supported", "supported", "supported"])
    assert not all_agree(["supported", "supported", "contradicted"])
    assert not all_agree(["supported"])  # one label set agrees with nobody
    sets = [
        LabelSet(1, 1, "a", "supported"),
        LabelSet(1, 1, "b", "supported"),
        LabelSet(1, 1, "c", "supported"),
        LabelSet(2, 2, "a", "supported"),
        LabelSet(2, 2, "b", "supported"),
        LabelSet(2, 2, "c", "contradicted"),
    ]
    assert multirater_agreement(sets, labels=SUPPORT, n_boot=0).all_agree == 1
