"""The 95% intervals the charts draw. Pure functions, no database; the Wilson interval is
checked against statsmodels, the reference implementation."""

from __future__ import annotations

import pytest
from statsmodels.stats.proportion import proportion_confint

from evaluation.intervals import bounded_mean_interval, wilson_interval


@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 29, 30, 100, 1000, 10_000])
def test_wilson_matches_statsmodels_for_every_count(n):
    step = max(1, n // 25)
    for successes in [*range(0, n + 1, step), n]:
        low, high = proportion_confint(successes, n, alpha=0.05, method="wilson")
        ours = wilson_interval(successes, n)
        assert ours == pytest.approx((low, high), abs=1e-12), (successes, n)


def test_two_of_two_is_no_firm_one():
    # The example: 1.00 at n = 2 next to 0.75 is no difference at all.
    low, high = wilson_interval(2, 2)
    assert high == 1.0 and low < 0.35
    other = wilson_interval(3, 4)
    assert other[0] < low < other[1]


def test_wilson_never_collapses_and_stays_within_zero_and_one():
    for n in (1, 7, 40):
        for successes in (0, n):
            low, high = wilson_interval(successes, n)
            assert 0.0 <= low < high <= 1.0


def test_no_items_give_no_interval_and_impossible_counts_are_refused():
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_a_bounded_mean_gets_the_wilson_interval_of_its_share_rescaled():
    # relevance 0-2 with mean 1.5 over 10 answers: the share 0.75 of 7.5 "successes" in 10
    low, high = bounded_mean_interval(1.5, 10, high=2.0)
    share = wilson_interval(7.5, 10)
    assert (low, high) == pytest.approx((2 * share[0], 2 * share[1]))
    assert low < 1.5 < high <= 2.0
    assert bounded_mean_interval(None, 10) is None
    assert bounded_mean_interval(0.5, 0) is None


def test_the_bounded_mean_interval_is_no_narrower_than_the_datas_own_spread():
    # recall@k of 8 cases: a mean of [0, 1] values is never more spread than a 0/1 variable
    values = [1.0, 1.0, 0.5, 0.5, 1.0, 0.0, 0.5, 1.0]
    n, mean = len(values), sum(values) / len(values)
    sd = (sum((v - mean) ** 2 for v in values) / (n - 1)) ** 0.5
    normal = (mean - 1.96 * sd / n**0.5, mean + 1.96 * sd / n**0.5)
    low, high = bounded_mean_interval(mean, n)
    assert high - low >= (normal[1] - normal[0]) * 0.95
