"""Imports run with Python's cyclic garbage collector paused (it walked the import's millions
of objects again and again: 1.1 of 7 s on a 100,000-claim bundle), and always turn it back
on: after a refused bundle too, and only once the last of two overlapping imports is done."""

from __future__ import annotations

import gc
import threading

import pytest

from annotate.bulk import paused_gc
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


def test_the_last_of_two_overlapping_pauses_turns_the_collector_back_on():
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    states = {}

    def first():
        with paused_gc():
            first_in.set()
            second_in.wait(5)
        states["after the first"] = gc.isenabled()
        first_out.set()

    def second():
        first_in.wait(5)
        with paused_gc():
            second_in.set()
            first_out.wait(5)
            states["second, alone"] = gc.isenabled()
        states["after both"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert states == {"after the first": False, "second, alone": False, "after both": True}


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    with paused_gc():
        assert not gc.isenabled()
    assert not gc.isenabled()


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
