"""What a reviewer can see that tells the variants apart, though no page names them.

Blinding is enforced in the queries, but the data can undo it: if one system always puts four
passages in the prompt and the other three, the labelling screen (which must show what reached
the prompt) names the system by that count. For each visible feature of an answer, this finds
how well one threshold on it separates each pair of variants: the best balanced accuracy of
"feature <= t means variant A", which is (1 + KS) / 2 with KS the two-sample
Kolmogorov-Smirnov statistic. 0.5 is chance; 1.0 is a label on every task.

A second test catches what is rare but telling: a feature that shows on a fair share of one
variant's answers and never on the other's (citation_not_found on the baseline only, say)
names the variant whenever it shows, however rarely, even though one threshold over all
answers separates them poorly.

Pure functions; the lead's set-up page reads them through selectors.blinding_check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

# Features a reviewer sees on the labelling screen, as (key, what the reviewer sees).
FEATURES = {
    "in_prompt": "the number of passages marked “in prompt”",
    "retrieved": "the number of passages retrieved",
    "cited_not_retrieved": "passages marked “cited, not retrieved”",
    "claims": "the number of claims",
    "citations": "the number of citations in the answer",
    "citation_not_found": "citations marked citation_not_found",
    "length": "the length of the answer",
    "abstained": "whether the answer declines",
}
# Flag a feature when one threshold on it guesses the variant this often (balanced).
FLAG_AT = 0.75
# Fewer answers than this per variant say little either way.
MIN_ANSWERS = 10
# "Only one variant shows it": on at least this share of that variant's answers (and at least
# MIN_SHOWN of them), and on none of the other's.
ONLY_SHARE = 0.1
MIN_SHOWN = 3


@dataclass(frozen=True)
class Finding:
    feature: str
    shows: str
    a: str
    b: str
    n_a: int
    n_b: int
    accuracy: float  # best one-threshold balanced accuracy, 0.5 to 1
    # Set when the finding is "only `only` shows it": on `shown` of its answers, none of the
    # other variant's; a reviewer who sees it knows the variant.
    only: str | None = None
    shown: int = 0

    @property
    def percent(self) -> int:
        return round(self.accuracy * 100)


def separability(a: Sequence[float], b: Sequence[float]) -> float:
    """Best balanced accuracy of one threshold telling sample a from sample b."""
    if not a or not b:
        return 0.5
    return (1 + ks_statistic(a, b)) / 2


def ks_statistic(a: Sequence[float], b: Sequence[float]) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the samples'
    empirical distribution functions, read at each value either sample holds (scipy's
    ks_2samp statistic, which the tests compare it with). Written here because the set-up
    page needs only the statistic: importing scipy for it took a web worker from 82 to
    206 MB, and ks_2samp also computed a p-value nobody reads."""
    a, b = sorted(a), sorted(b)
    n, m = len(a), len(b)
    i = j = 0
    gap = 0  # in units of 1 / (n m): |i/n - j/m| = |i m - j n| / (n m), exact in integers
    # Once one sample is used up its distribution is 1 and the gap can only close.
    while i < n and j < m:
        value = min(a[i], b[j])
        while i < n and a[i] <= value:
            i += 1
        while j < m and b[j] <= value:
            j += 1
        gap = max(gap, abs(i * m - j * n))
    return gap / (n * m)


def visible_differences(
    values: Mapping[str, Mapping[str, Sequence[float]]],
    *,
    flag_at: float = FLAG_AT,
    min_answers: int = MIN_ANSWERS,
) -> list[Finding]:
    """For values[variant][feature] = one value per answer, the features that let a single
    threshold name the variant at least `flag_at` of the time, most telling first."""
    findings = []
    for a, b in combinations(sorted(values), 2):
        for feature, shows in FEATURES.items():
            left, right = values[a].get(feature, []), values[b].get(feature, [])
            if len(left) < min_answers or len(right) < min_answers:
                continue
            accuracy = separability(left, right)
            if accuracy >= flag_at:
                findings.append(Finding(feature, shows, a, b, len(left), len(right), accuracy))
                continue
            only = _only_one_shows(a, left, b, right)
            if only is not None:
                name, shown = only
                findings.append(
                    Finding(feature, shows, a, b, len(left), len(right), accuracy, name, shown)
                )
    return sorted(findings, key=lambda f: (f.only is not None, -f.accuracy, f.a, f.b, f.feature))


def _only_one_shows(a: str, left, b: str, right) -> tuple[str, int] | None:
    """(variant, answers) when a non-zero value of the feature appears on a fair share of one
    variant's answers and on none of the other's."""
    for name, mine, theirs in ((a, left, right), (b, right, left)):
        shown = sum(1 for v in mine if v)
        if shown >= max(MIN_SHOWN, ONLY_SHARE * len(mine)) and not any(theirs):
            return name, shown
    return None
