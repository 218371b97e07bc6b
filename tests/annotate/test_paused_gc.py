"""Imports run with Python's cyclic garbage collector paused (annotate.common.collector: it walked
the import's millions of objects again and again, 1.1 of 7 s on a 100,000-claim bundle), and
turn it back on, after a refused bundle too. How pauses overlap across threads, and a
collector that was off staying off: tests/annotate/test_collector.py."""

from __future__ import annotations

import gc

import pytest
from django.contrib.auth import get_user_model

from annotate.imports.bundle_import import import_bundle
from annotate.imports.lines import BundleInvalid
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
    from evaluation.judges.runs import import_judge_run
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


def alive_at(monkeypatch, module, name: str, kinds: tuple[type, ...]) -> tuple[int, list[int]]:
    """Make `module.name` count, each time it is called, the instances of exactly `kinds`
    alive in the process. Returns (how many are alive now, the list the counts go to)."""

    def alive() -> int:
        # type(), not isinstance(): a dead weak proxy among them raises on isinstance.
        return sum(type(o) in kinds for o in gc.get_objects())

    function, seen = getattr(module, name), []

    def counting(*args, **kwargs):
        seen.append(alive())
        return function(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    gc.collect()
    return alive(), seen


@pytest.mark.django_db
def test_a_correction_import_holds_none_of_the_stored_answers_it_compared(monkeypatch):
    """A re-import compares each changed answer with the one stored. Read as model instances
    with their claims, citations and passages prefetched (each row tied back to its parent),
    with the collector paused, they all stayed until the import's end: correcting every
    answer's latency in the bench's 10,000-answer bundle took 823 MB. They are read as flat
    rows, and no claim, citation or retrieved row is alive when the import writes."""
    import json

    from annotate.imports import bundle_import
    from annotate.models import Answer, Citation, Claim, RetrievedPassage

    project = import_bundle(lines=SMALL, project_slug="t").project
    corrected = [
        json.dumps({**json.loads(line), "elapsed_ms": 9}) if '"type": "answer"' in line else line
        for line in SMALL
    ]
    before, seen = alive_at(
        monkeypatch, bundle_import, "write_import", (Claim, Citation, RetrievedPassage)
    )
    import_bundle(lines=corrected, project_slug="t", replace=True)
    assert seen == [before]
    elapsed = set(Answer.objects.filter(project=project).values_list("elapsed_ms", flat=True))
    assert elapsed == {9}


@pytest.mark.django_db
def test_a_label_import_lets_each_chunk_s_passages_and_citations_go(monkeypatch):
    """A label import reads each chunk's answers with their claims, citations and retrieved
    passages prefetched, and keeps the answers and claims its label sets point to. What the
    prefetch tied to them (here each answer's five retrieved passages) is let go as each
    chunk is done (collector.untie): with the collector paused it stayed to the end, 85 MB
    instead of 20 MB for 4,000 label sets."""
    from annotate.imports import label_import
    from annotate.imports.label_lines import NamedAnswers
    from annotate.members.services import add_member
    from annotate.models import Citation, RetrievedPassage, Role
    from annotate.projects.opening import open_labelling
    from annotate.projects.services import set_label_schema
    from annotate.schema import LabelSchema
    from tests.evaluation import scale

    project = import_bundle(lines=scale.bundle(12), project_slug="chunks").project
    set_label_schema(project=project, schema=LabelSchema("three_way", (), ("relevance",)))
    get_user_model().objects.create_user("alice")
    add_member(project=project, username="alice", role=Role.REVIEWER)
    project = open_labelling(project=project)
    monkeypatch.setattr(label_import, "LINE_CHUNK", 4)
    released, alive = NamedAnswers.release, []

    def counted(self):
        released(self)
        alive.append(sum(type(o) in (Citation, RetrievedPassage) for o in gc.get_objects()))

    monkeypatch.setattr(NamedAnswers, "release", counted)
    result = label_import.import_labels(
        lines=scale.labels("alice", 12, first=True), project=project
    )
    assert result.created == 12
    assert len(alive) == 4 and alive == [0, 0, 0, 0]
