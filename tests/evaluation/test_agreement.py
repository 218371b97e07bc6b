"""Agreement statistics: pure functions, no database."""

import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix
from statsmodels.stats.inter_rater import cohens_kappa

from evaluation import agreement
from evaluation.agreement import (
    CITATION,
    FIELDS,
    KAPPA_UNDEFINED_NO_ITEMS,
    KAPPA_UNDEFINED_ONE_LABEL,
    RELEVANCE,
    SEVERITY,
    SUPPORT,
    cohen_kappa,
    evidence_overlap,
    field_agreement,
    kappa_from_confusion,
)

YES_NO = ("yes", "no")


def textbook_pairs():
    """20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no."""
    pairs = [("yes", "yes")] * 20 + [("yes", "no")] * 5 + [("no", "yes")] * 10
    pairs += [("no", "no")] * 15
    a, b = zip(*pairs, strict=True)
    return list(a), list(b)


def random_pairs(rng, labels, n, agree=0.6):
    a = rng.integers(0, len(labels), n)
    b = np.where(rng.random(n) < agree, a, rng.integers(0, len(labels), n))
    return [labels[i] for i in a], [labels[i] for i in b]


def test_textbook_table_gives_raw_070_and_kappa_040():
    a, b = textbook_pairs()
    result = field_agreement(a, b, labels=YES_NO)
    assert result.n == 50
    assert result.raw_agreement == pytest.approx(0.70)
    assert result.kappa == pytest.approx(0.40)
    assert result.matrix == ((20, 5), (10, 15))


def test_sixteen_of_twenty_answers_agree_is_raw_080_and_flagged_small():
    a = [2] * 16 + [2, 1, 0, 2]
    b = [2] * 16 + [1, 2, 1, 0]
    result = field_agreement(a, b, labels=RELEVANCE, weights="linear")
    assert result.n == 20
    assert result.raw_agreement == pytest.approx(0.8)
    assert result.small_sample is True


def test_kappa_is_none_with_reason_when_both_reviewers_used_one_label():
    a = b = ["supported"] * 12
    result = field_agreement(a, b, labels=SUPPORT, groups=list(range(12)))
    assert result.raw_agreement == 1.0
    assert result.kappa is None
    assert result.ci95 is None
    assert result.kappa_undefined_reason == KAPPA_UNDEFINED_ONE_LABEL
    assert result.dominant_label_warning is True
    payload = result.as_dict()
    assert payload["kappa"] is None
    assert "NaN" not in json.dumps(payload)


def test_kappa_is_none_when_one_label_on_weighted_field_too():
    result = field_agreement(["minor"] * 5, ["minor"] * 5, labels=SEVERITY, weights="linear")
    assert result.kappa is None
    assert result.kappa_undefined_reason == KAPPA_UNDEFINED_ONE_LABEL


def test_reviewers_with_different_single_labels_have_kappa_zero_not_undefined():
    result = field_agreement(["supported"] * 4, ["contradicted"] * 4, labels=SUPPORT)
    assert result.kappa == pytest.approx(0.0)
    assert result.kappa_undefined_reason is None


def test_no_doubly_labelled_items_gives_n_zero_and_an_empty_matrix():
    result = field_agreement([], [], labels=SUPPORT)
    payload = result.as_dict()
    assert payload["n"] == 0
    assert payload["raw_agreement"] is None
    assert payload["kappa"] is None
    assert payload["ci95"] is None
    assert payload["confusion"] == {"labels": list(SUPPORT), "matrix": [[0, 0, 0]] * 3}
    assert payload["prevalence"] is None
    assert payload["kappa_undefined_reason"] == KAPPA_UNDEFINED_NO_ITEMS


def test_as_dict_has_the_spec_shape_and_is_json_serialisable():
    rng = np.random.default_rng(3)
    a, b = random_pairs(rng, SUPPORT, 40)
    payload = field_agreement(a, b, labels=SUPPORT, groups=[i // 3 for i in range(40)]).as_dict()
    assert set(payload) == {
        "n",
        "raw_agreement",
        "kappa",
        "weighting",
        "ci95",
        "confusion",
        "prevalence",
        "dominant_label_warning",
        "small_sample",
        "kappa_undefined_reason",
    }
    assert payload["weighting"] is None
    assert payload["small_sample"] is False
    assert len(payload["ci95"]) == 2
    assert set(payload["prevalence"]) == {"label", "share"}
    json.dumps(payload)


def test_prevalence_is_share_of_most_frequent_label_over_both_reviewers():
    a = ["supported"] * 9 + ["contradicted"]
    b = ["supported"] * 8 + ["contradicted", "insufficient_evidence"]
    result = field_agreement(a, b, labels=SUPPORT)
    assert result.prevalence_label == "supported"
    assert result.prevalence == pytest.approx(17 / 20)
    assert result.dominant_label_warning is True


def test_linear_weighted_kappa_on_severity_credits_near_misses():
    a = ["none", "minor", "major", "critical", "none", "minor", "major", "critical"]
    near = ["minor", "minor", "critical", "critical", "none", "major", "major", "major"]
    far = ["critical", "minor", "none", "critical", "none", "critical", "major", "none"]
    weighted_near = field_agreement(a, near, labels=SEVERITY, weights="linear")
    weighted_far = field_agreement(a, far, labels=SEVERITY, weights="linear")
    assert weighted_near.weighting == "linear"
    assert weighted_near.kappa == pytest.approx(
        cohen_kappa_score(a, near, labels=list(SEVERITY), weights="linear")
    )
    # Same raw agreement, but the near misses are one step away and the far ones are not.
    assert weighted_near.raw_agreement == weighted_far.raw_agreement
    assert weighted_near.kappa > weighted_far.kappa
    unweighted_near = field_agreement(a, near, labels=SEVERITY)
    assert weighted_near.kappa > unweighted_near.kappa


def test_labels_outside_the_vocabulary_are_rejected():
    with pytest.raises(ValueError, match="maybe"):
        field_agreement(["supported", "maybe"], ["supported", "supported"], labels=SUPPORT)
    with pytest.raises(ValueError, match="aligned"):
        field_agreement(["supported"], [], labels=SUPPORT)


def test_fields_table_weights_only_the_ordinal_fields():
    assert {name for name, spec in FIELDS.items() if spec.weights == "linear"} == {
        "severity",
        "relevance",
    }
    assert FIELDS["citation"].labels == CITATION
    assert FIELDS["requires_evidence"].labels == (True, False)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    ("labels", "weights"),
    [(SUPPORT, None), (SEVERITY, None), (SEVERITY, "linear"), (RELEVANCE, "linear")],
)
def test_kappa_matches_statsmodels_and_sklearn_on_generated_data(seed, labels, weights):
    rng = np.random.default_rng(seed)
    a, b = random_pairs(rng, labels, int(rng.integers(30, 400)), agree=rng.random())
    result = field_agreement(a, b, labels=labels, weights=weights, n_boot=0)

    expected_matrix = confusion_matrix(a, b, labels=list(labels))
    assert np.array_equal(np.array(result.matrix), expected_matrix)

    table = np.array(result.matrix)
    if weights is None:
        statsmodels_kappa = cohens_kappa(table, return_results=False)
    else:
        # statsmodels scales |i - j| by (k - 1); kappa is invariant to that scale, so its
        # default linear weights equal scikit-learn's.
        statsmodels_kappa = cohens_kappa(table, wt="linear", return_results=False)
    sklearn_kappa = cohen_kappa_score(a, b, labels=list(labels), weights=weights)
    assert result.kappa == pytest.approx(statsmodels_kappa, abs=1e-9)
    assert result.kappa == pytest.approx(sklearn_kappa, abs=1e-9)
    assert kappa_from_confusion(table, weights) == pytest.approx(statsmodels_kappa, abs=1e-9)


def test_statsmodels_linear_weights_are_sklearns_up_to_scale():
    k = len(SEVERITY)
    result = cohens_kappa(np.ones((k, k)) + np.eye(k), wt="linear")
    idx = np.arange(k)
    assert np.allclose(result.weights * (k - 1), np.abs(idx[:, None] - idx[None, :]))


def test_vectorised_kappa_from_confusion_matches_sklearn_on_a_stack():
    rng = np.random.default_rng(11)
    stack = rng.integers(0, 20, size=(50, 4, 4))
    stack[7] = 0
    stack[7, 2, 2] = 9  # both raters used one label: undefined
    for weights in (None, "linear", "quadratic"):
        kappas = kappa_from_confusion(stack, weights)
        assert np.isnan(kappas[7])
        for i in (0, 1, 25, 49):
            rows, cols = np.nonzero(stack[i])
            counts = stack[i][rows, cols]
            a = np.repeat(rows, counts)
            b = np.repeat(cols, counts)
            expected = cohen_kappa_score(a, b, labels=[0, 1, 2, 3], weights=weights)
            assert kappas[i] == pytest.approx(expected, abs=1e-12)


def test_bootstrap_interval_is_reproducible_with_a_seed_and_contains_the_estimate():
    rng = np.random.default_rng(5)
    a, b = random_pairs(rng, SUPPORT, 300, agree=0.7)
    groups = [i // 4 for i in range(300)]
    first = field_agreement(a, b, labels=SUPPORT, groups=groups, seed=42)
    again = field_agreement(a, b, labels=SUPPORT, groups=groups, seed=42)
    other = field_agreement(a, b, labels=SUPPORT, groups=groups, seed=43)
    assert first.ci95 == again.ci95
    assert first.ci95 != other.ci95
    lo, hi = first.ci95
    assert lo < first.kappa < hi
    assert first.boot_used + first.boot_skipped == 1000


def test_bootstrap_with_one_group_gives_a_degenerate_interval():
    rng = np.random.default_rng(8)
    a, b = random_pairs(rng, SUPPORT, 60)
    result = field_agreement(a, b, labels=SUPPORT, groups=["answer-1"] * 60)
    assert result.ci95 == (pytest.approx(result.kappa), pytest.approx(result.kappa))


def test_bootstrap_resamples_answers_so_duplicated_claims_do_not_narrow_the_interval():
    rng = np.random.default_rng(13)
    a, b = random_pairs(rng, SUPPORT, 200, agree=0.6)
    base = field_agreement(a, b, labels=SUPPORT, groups=list(range(200)), n_boot=2000)

    # Every answer now holds four copies of its claim: no new information.
    a4 = [x for x in a for _ in range(4)]
    b4 = [x for x in b for _ in range(4)]
    groups4 = [g for g in range(200) for _ in range(4)]
    grouped = field_agreement(a4, b4, labels=SUPPORT, groups=groups4, n_boot=2000)
    as_if_independent = field_agreement(a4, b4, labels=SUPPORT, n_boot=2000)

    def width(result):
        return result.ci95[1] - result.ci95[0]

    assert grouped.kappa == pytest.approx(base.kappa)
    assert width(grouped) == pytest.approx(width(base), rel=0.15)
    # Treating the copies as independent claims would halve the width (1/sqrt(4)).
    assert width(as_if_independent) < 0.65 * width(base)


@pytest.mark.parametrize("groups_per_answer", [1, 6])
def test_pooled_and_per_group_resampling_give_the_same_interval(monkeypatch, groups_per_answer):
    # Identical groups are pooled and drawn as a multinomial when they are few; otherwise group
    # indices are drawn one by one. Both are the same bootstrap, so the intervals must agree.
    rng = np.random.default_rng(21)
    a, b = random_pairs(rng, SUPPORT, 3000, agree=0.7)
    groups = [i // groups_per_answer for i in range(3000)]

    def interval(ratio):
        monkeypatch.setattr(agreement, "_MULTINOMIAL_PATTERN_RATIO", ratio)
        return field_agreement(a, b, labels=SUPPORT, groups=groups, n_boot=4000, seed=1).ci95

    pooled, drawn = interval(0), interval(10**9)
    assert pooled != drawn  # the two paths really ran
    assert pooled == pytest.approx(drawn, abs=0.01)


def test_cohen_kappa_helper_returns_reason_instead_of_nan():
    assert cohen_kappa(["no"] * 3, ["no"] * 3, labels=YES_NO) == (None, KAPPA_UNDEFINED_ONE_LABEL)
    kappa, reason = cohen_kappa(*textbook_pairs(), labels=YES_NO)
    assert kappa == pytest.approx(0.4)
    assert reason is None


def test_evidence_overlap_is_mean_jaccard_over_pairs_where_someone_named_a_passage():
    result = evidence_overlap(
        [["p1", "p2"], [], ["p3"], ["p1"]],
        [["p2"], [], ["p4"], ["p1"]],
    )
    # two empty sets are no agreement about evidence: counted apart, never scored as 1
    assert (result.n, result.neither) == (3, 1)
    assert result.mean_jaccard == pytest.approx((0.5 + 0.0 + 1.0) / 3)
    assert evidence_overlap([], []).as_dict() == {"n": 0, "mean_jaccard": None, "neither": 0}
    assert evidence_overlap([[]], [[]]).as_dict() == {"n": 0, "mean_jaccard": None, "neither": 1}


@pytest.mark.django_db
def test_the_agreement_page_names_each_field_s_top_label_in_words(
    client, reviewer_a, reviewer_b, lead
):
    """ "Needs evidence: True 79%" read as code; the page says "yes 79%" (and "insufficient
    evidence", not "insufficient_evidence")."""
    import re

    from django.urls import reverse

    from evaluation.views.agreement import label_words
    from tests.api import build_demo
    from tests.conftest import PASSWORD

    assert [label_words(v) for v in (True, "False", "insufficient_evidence", None)] == [
        "yes",
        "no",
        "insufficient evidence",
        "",
    ]
    project = build_demo([reviewer_a, reviewer_b], lead)
    client.login(username=lead.username, password=PASSWORD)
    page = client.get(reverse("agreement", kwargs={"slug": project.slug})).content.decode()
    top_labels = re.findall(r"<td>([\w ]+) \d+%", page)
    assert "yes" in top_labels or "no" in top_labels, top_labels  # needs evidence
    assert not {"True", "False"} & set(top_labels)
    assert not [label for label in top_labels if "_" in label]
