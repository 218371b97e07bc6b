"""Importing a label file again: every line whose reviewer already submitted those very
labels is 'unchanged' and nothing is written; a line with other labels is refused by line.
The comparison reads the latest revisions together, not one query per line."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotate.bundles import BundleInvalid
from annotate.models import LabelRevision
from annotate.services import import_labels
from tests.conftest import FIXTURES, labelled_demo

pytestmark = pytest.mark.django_db


@pytest.fixture
def labelled():
    return labelled_demo()


def test_the_same_file_again_is_unchanged_in_a_fixed_number_of_queries(labelled):
    lines = (FIXTURES / "demo_labels.jsonl").read_bytes().splitlines()
    revisions = LabelRevision.objects.count()
    with CaptureQueriesContext(connection) as queries:
        result = import_labels(lines=lines, project=labelled)
    assert (result.created, result.unchanged) == (0, len(lines))
    assert LabelRevision.objects.count() == revisions
    assert len(queries) < 20, len(queries)  # 80 lines: one query per line was 80 more


def test_other_labels_for_a_held_answer_are_refused_by_line(labelled):
    lines = (FIXTURES / "demo_labels.jsonl").read_bytes().splitlines()
    first = json.loads(lines[0])
    first["relevance"] = 0 if first.get("relevance") else 1
    changed = [json.dumps(first).encode(), *lines[1:]]
    with pytest.raises(BundleInvalid) as caught:
        import_labels(lines=changed, project=labelled)
    assert [str(e) for e in caught.value.errors] == [
        f"line 1: {first['reviewer']} already has labels for this answer"
    ]
