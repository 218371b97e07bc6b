"""Property-based fuzzing of the judge-run importer (issue #15): whatever the file and the name
given, import_judge_run succeeds or raises BundleInvalid with every problem by line, and a
refused run writes nothing. Budgets and profiles: tests/fuzz.py."""

from __future__ import annotations

import json

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from annotate.imports.lines import BundleInvalid
from evaluation.judges.runs import RUN_FIELDS, VERDICT_FIELDS, import_judge_run
from evaluation.models import JudgeRun, Verdict
from tests.conftest import FIXTURES, import_fixture
from tests.fuzz import HOSTILE, check_refusal, fuzz, in_savepoint, mutate_lines, random_objects

RUN, *VERDICTS = (FIXTURES / "demo_judge_run.jsonl").read_text().splitlines()
FIELDS = sorted({"type"} | set().union(*RUN_FIELDS, *VERDICT_FIELDS))
NAMES = st.one_of(st.none(), st.sampled_from(["second-run", "x" * 201, "a\x00b", "🙂", " "]))


@pytest.fixture
def project(db):
    return import_fixture("demo.jsonl", "demo")


def attempt(project, lines, name) -> None:
    def run():
        before = (JudgeRun.objects.count(), Verdict.objects.count())
        try:
            result = import_judge_run(lines=lines, project=project, name=name)
        except BundleInvalid as exc:
            check_refusal(exc)
            assert (JudgeRun.objects.count(), Verdict.objects.count()) == before
            event("refused")
        else:
            # what was stored is JSON as the standard has it, and says what it is
            for verdict in Verdict.objects.filter(run=result.run):
                json.dumps([verdict.evidence_ids, verdict.raw, verdict.quote], allow_nan=False)
                assert verdict.status in Verdict.Status.values
            json.dumps(result.run.settings, allow_nan=False)
            event("imported")

    in_savepoint(run)


@fuzz(examples=150)
@given(data=st.data())
def test_fuzz_import_judge_run_on_mutated_demo_lines(project, data):
    verdicts = data.draw(st.lists(st.sampled_from(VERDICTS), min_size=1, max_size=5), label="rows")
    lines = mutate_lines([RUN, *verdicts], data, FIELDS)
    attempt(project, lines, data.draw(NAMES, label="name"))


@fuzz(examples=60)
@given(
    lines=random_objects(FIELDS, ["run", "verdict"]),
    name=NAMES | HOSTILE.filter(lambda v: isinstance(v, str)),
)
def test_fuzz_import_judge_run_on_random_objects(project, lines, name):
    attempt(project, [RUN, *lines], name)
