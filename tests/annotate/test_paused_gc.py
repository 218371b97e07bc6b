"""Imports run with Python's cyclic garbage collector paused (annotate.collector: it walked
the import's millions of objects again and again, 1.1 of 7 s on a 100,000-claim bundle), and
turn it back on, after a refused bundle too. How pauses overlap across threads, and a
collector that was off staying off: tests/annotate/test_collector.py."""

from __future__ import annotations

import gc

import pytest

from annotate.bundles import BundleInvalid
from annotate.services import import_bundle
from tests.annotate.test_import import SMALL, lines_of


@pytest.fixture(autouse=True)
def collector_on():
    gc.enable()
    yield
    gc.enable()


@pytest.mark.django_db
def test_an_import_runs_without_the_collector_and_turns_it_back_on():
    seen = []
    import_bundle(
        lines=SMALL, project_slug="t", progress=lambda step, n: seen.append(gc.isenabled())
    )
    assert seen and not any(seen)
    assert gc.isenabled()


@pytest.mark.django_db
def test_a_refused_bundle_turns_the_collector_back_on():
    with pytest.raises(BundleInvalid):
        import_bundle(lines=lines_of(edit={1: "not json"}), project_slug="t")
    assert gc.isenabled()


@pytest.mark.django_db
def test_a_judge_run_import_runs_without_the_collector():
    from evaluation.judges import import_judge_run
    from tests.evaluation.scale import bundle, judge_run

    project = import_bundle(lines=bundle(4), project_slug="scaled").project
    seen = []

    def lines():
        for line in judge_run(4):
            seen.append(gc.isenabled())
            yield line

    assert import_judge_run(lines=lines(), project=project).run.verdicts.count() > 0
    assert seen and not any(seen)
    assert gc.isenabled()
