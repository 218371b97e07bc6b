"""The blinding check: which features of the labelling screen name the variant. Its number is
cross-checked against scikit-learn's ROC curve, an independent route to the same quantity."""

from __future__ import annotations

import random

import numpy as np
import pytest
from django.urls import reverse
from sklearn.metrics import roc_curve

from annotate.blinding import FEATURES, separability, visible_differences
from annotate.models import Role
from annotate.selectors import blinding_check
from annotate.services import add_member
from tests.conftest import PASSWORD, import_fixture


def best_threshold_balanced_accuracy(a, b) -> float:
    """From the ROC curve: the best (TPR + TNR) / 2 over thresholds, either way round."""
    labels = np.array([1] * len(a) + [0] * len(b))
    scores = np.array([*a, *b], dtype=float)
    best = 0.0
    for sign in (1, -1):
        fpr, tpr, _ = roc_curve(labels, sign * scores)
        best = max(best, float(np.max(tpr - fpr)))
    return (1 + best) / 2


@pytest.mark.parametrize("seed", range(40))
def test_separability_is_the_best_one_threshold_balanced_accuracy(seed):
    rng = random.Random(seed)
    a = [rng.randint(0, 6) for _ in range(rng.randint(1, 40))]  # ties, as counts have
    b = [rng.randint(2, 8) for _ in range(rng.randint(1, 40))]
    assert separability(a, b) == pytest.approx(best_threshold_balanced_accuracy(a, b))


def test_visible_differences_flags_only_what_names_the_variant():
    same = {key: [1, 2, 3, 4, 5] * 4 for key in FEATURES}
    telling = {**same, "in_prompt": [4] * 20}
    values = {"baseline": {**same, "in_prompt": [3] * 18 + [4] * 2}, "verifier": telling}
    [finding] = visible_differences(values)
    assert (finding.feature, finding.a, finding.b) == ("in_prompt", "baseline", "verifier")
    assert finding.accuracy == pytest.approx(0.95)  # threshold 3.5: 18/20 and 20/20
    assert finding.percent == 95 and finding.n_a == finding.n_b == 20
    few = {name: {k: v[:5] for k, v in features.items()} for name, features in values.items()}
    assert visible_differences(few) == []  # five answers each say nothing


@pytest.mark.django_db
def test_the_demo_is_named_by_its_in_prompt_count_on_the_set_up_page(client, lead):
    """In the demo, baseline puts 3 passages in the prompt in 24 of 30 cases and the verifier
    always 4: one threshold names the variant 90% of the time."""
    project = import_fixture("demo.jsonl", "demo")
    [finding] = blinding_check(project)
    assert (finding.feature, finding.percent, finding.n_a, finding.n_b) == ("in_prompt", 90, 30, 30)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    client.login(username=lead.username, password=PASSWORD)
    page = client.get(reverse("project_setup", kwargs={"slug": project.slug})).content.decode()
    assert "Blinding check" in page
    assert "reviewers can tell them apart by the number of passages marked “in prompt”" in page


@pytest.mark.django_db
def test_too_few_answers_flag_nothing(small_project):
    assert blinding_check(small_project) == []  # two variants of 3 and 1 answers
