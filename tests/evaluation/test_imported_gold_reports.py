"""The reports on gold from elsewhere (SPEC "Gold from elsewhere"): a benchmark's single
labels (fixtures/halu/gold.jsonl) are gold items for calibration, never its target; they never
enter agreement, and every human-human figure says how many gold items came without a second
reviewer. The figures are checked against a calculation from the fixture files alone."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest
from django.urls import reverse

from annotate.gold.splits import judge_split
from annotate.imports.gold_import import import_gold
from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.projects.opening import open_labelling
from evaluation.judges.runs import import_judge_run
from evaluation.reports.agreement import agreement_report
from evaluation.reports.calibration import calibration_report
from evaluation.reports.evaluation import evaluate
from evaluation.reports.few_shot import few_shot_examples
from tests.conftest import FIXTURES, PASSWORD, import_fixture

pytestmark = pytest.mark.django_db

HALU = FIXTURES / "halu"
JUDGE = "strict-binary"


def read(name: str) -> list[dict]:
    return [json.loads(line) for line in (HALU / name).read_text().splitlines()]


@pytest.fixture
def benchmark(lead):
    """Gold only from import_gold: no reviewer has labelled anything; a judge run."""
    project = import_fixture("halu/bundle.jsonl", "halu")
    for name in ("ann1", "ann2"):
        add_member(project=project, username=name, role="reviewer")
    add_member(project=project, username=lead.username, role="lead")
    project = open_labelling(project=project)
    with (HALU / "gold.jsonl").open("rb") as stream:
        import_gold(lines=stream, project=project, source="halu-bench", file_name="gold.jsonl")
    with (HALU / f"judge_{JUDGE}.jsonl").open("rb") as stream:
        run = import_judge_run(lines=stream, project=project).run
    return project, run


@pytest.fixture
def mixed(benchmark):
    """The same, and the annotators' labels: two on most summaries, one on a few."""
    project, run = benchmark
    with (HALU / "labels.jsonl").open("rb") as stream:
        import_labels(lines=stream, project=project)
    return project, run


def _verdicts() -> dict[tuple[str, int], str | None]:
    return {
        (v["answer_id"], v["claim_index"]): v["label"]
        for v in read(f"judge_{JUDGE}.jsonl")
        if v["type"] == "verdict"
    }


def _expected(gold_answers: dict[str, list[str]], target_answers: set[str], split="all"):
    """TPR, TNR, n, the target's size and PPI's estimate, from the files alone."""
    verdicts = _verdicts()
    pairs = [
        (support, verdicts[(answer_id, k)])
        for answer_id, labels in gold_answers.items()
        if split == "all" or judge_split(answer_id.split("/")[0]) == split
        for k, support in enumerate(labels)
        if verdicts.get((answer_id, k)) is not None
    ]
    gold = np.array([g == "unsupported" for g, _ in pairs])
    judge = np.array([j == "unsupported" for _, j in pairs])
    target = np.array(
        [
            label == "unsupported"
            for (answer_id, _), label in verdicts.items()
            if answer_id in target_answers and label is not None
        ]
    )
    return {
        "n": len(pairs),
        "tpr": (gold & judge).sum() / gold.sum(),
        "tnr": (~gold & ~judge).sum() / (~gold).sum(),
        "target_n": len(target),
        "ppi": target.mean() - (judge.astype(float) - gold.astype(float)).mean(),
    }


def _answers() -> list[str]:
    return [row["answer_id"] for row in read("bundle.jsonl") if row["type"] == "answer"]


def _benchmark_gold() -> dict[str, list[str]]:
    return {row["answer_id"]: [c["support"] for c in row["claims"]] for row in read("gold.jsonl")}


def test_gold_from_import_alone_calibrates_a_judge(benchmark):
    project, run = benchmark
    gold = _benchmark_gold()
    target = set(_answers()) - set(gold)
    report = calibration_report(run=run, split="all", n_boot=200)
    expected = _expected(gold, target)
    claims = sum(len(labels) for labels in gold.values())
    assert report["gold_items"] == claims
    assert report["gold_sources"] == {"agreed": 0, "adjudicated": 0, "imported": claims}
    assert report["n"] == expected["n"] > 0
    assert report["tpr"] == pytest.approx(expected["tpr"])
    assert report["tnr"] == pytest.approx(expected["tnr"])
    corrected = report["corrected"]
    assert corrected["target_n"] == expected["target_n"] > 0  # never the imported answers
    assert corrected["excluded"] == {"pending_dispute": 0, "single_reviewer": 0}
    assert corrected["provisional"] is False
    assert corrected["ppi"]["estimate"] == pytest.approx(expected["ppi"])
    # No human-human figure: none of the gold has a second reviewer, and the report says so.
    assert report["human_agreement"]["n"] == 0 and report["human_kappa"] is None
    assert report["human_agreement"]["no_second_reviewer"] == claims
    default = calibration_report(run=run, n_boot=200)  # judge_test
    assert sum(default["gold_sources"].values()) == default["gold_items"]
    assert default["n"] == _expected(gold, target, "judge_test")["n"]


def test_the_done_when_project_pages_calibration_gold_and_agreement(benchmark, client, lead):
    """A project whose gold comes only from import_gold: its calibration page, its gold
    export, and an agreement page that says nothing is doubly labelled, with the number of
    imported gold items, read from the rendered pages."""
    project, run = benchmark
    gold = _benchmark_gold()
    claims = sum(len(labels) for labels in gold.values())
    client.login(username=lead.username, password=PASSWORD)

    page = client.get(reverse("judge_run", kwargs={"slug": project.slug, "run_pk": run.pk}))
    assert page.status_code == 200
    body = html.unescape(page.content.decode())
    report = page.context["r"]
    sources = re.search(r'id="gold-sources">([^<]*)<', body).group(1)
    assert sources == f"0 agreed · 0 adjudicated · {report['gold_sources']['imported']} imported"
    assert report["gold_sources"]["imported"] == report["gold_items"] > 0
    no_second = re.search(r'id="no-second-reviewer">([^<]*)<', body).group(1)
    assert no_second.startswith(f"{report['gold_items']} gold claims imported with no second")

    download = client.get(reverse("gold_download", kwargs={"slug": project.slug, "fmt": "jsonl"}))
    rows = [json.loads(line) for line in b"".join(download.streaming_content).splitlines()]
    assert len(rows) == len(gold) + claims
    assert {r["gold_source"].get("support") for r in rows if r["item"] == "claim"} == {"imported"}

    # The judge's view of an answer shows its imported gold and where it came from.
    answer = project.answers.get(answer_id=next(iter(gold)))
    shown = client.get(
        reverse(
            "judge_answer", kwargs={"slug": project.slug, "run_pk": run.pk, "answer_pk": answer.pk}
        )
    )
    text = html.unescape(shown.content.decode())
    # no reviewers' labels beside it (the lead tabs name the Reviewers page, not this)
    assert "from “halu-bench” (gold.jsonl, line 1)" in text and "<dt>Reviewers</dt>" not in text

    agreement = html.unescape(
        client.get(reverse("agreement", args=[project.slug])).content.decode()
    )
    assert "No answer has been labelled by two reviewers yet." in agreement
    said = re.search(r'id="imported-gold">([^<]*)<', agreement).group(1)
    assert said == (
        f"{len(gold)} answers ({claims} claims) have imported gold from 'halu-bench' "
        "(no second reviewer, so no agreement)."
    )


def test_in_a_mixed_project_each_answer_lands_where_its_labels_put_it(mixed):
    """Two annotators who agree: gold as agreed (the benchmark's label kept beside). Two who
    disagree: excluded as a pending dispute, imported gold or not. One annotator and the
    benchmark: the benchmark's gold. The benchmark alone: its gold. Nobody: the target."""
    project, run = mixed
    gold = _benchmark_gold()
    sets: dict[str, list[list[str]]] = {}
    for row in read("labels.jsonl"):
        sets.setdefault(row["answer_id"], []).append([c["support"] for c in row["claims"]])
    disputed = {a for a, s in sets.items() if len(s) == 2 and s[0] != s[1]}
    agreed = {a: s[0] for a, s in sets.items() if len(s) == 2 and s[0] == s[1]}
    alone = {a: labels for a, labels in gold.items() if len(sets.get(a, [])) < 2}
    assert disputed & set(gold) and alone.keys() & sets.keys()  # every combination is here
    target = {a for a in _answers() if a not in sets and a not in gold}
    report = calibration_report(run=run, split="all", n_boot=200)
    expected = _expected({**agreed, **alone}, target)
    assert report["gold_sources"] == {
        "agreed": sum(len(s) for s in agreed.values()),
        "adjudicated": 0,
        "imported": sum(len(s) for s in alone.values()),
    }
    assert report["gold_items"] == sum(report["gold_sources"].values())
    assert (report["n"], report["tpr"], report["tnr"]) == (
        expected["n"],
        pytest.approx(expected["tpr"]),
        pytest.approx(expected["tnr"]),
    )
    verdicts = _verdicts()
    judged_disputed = sum(
        1 for (a, _), label in verdicts.items() if a in disputed and label is not None
    )
    corrected = report["corrected"]
    assert corrected["excluded"] == {"pending_dispute": judged_disputed, "single_reviewer": 0}
    assert corrected["target_n"] == expected["target_n"]
    assert corrected["provisional"] is True
    assert report["human_agreement"]["no_second_reviewer"] == report["gold_sources"]["imported"]


def test_imported_gold_never_enters_agreement_and_the_report_counts_it(mixed):
    project, _ = mixed
    report = agreement_report(project, n_boot=50)
    gold = _benchmark_gold()
    sets: dict[str, int] = {}
    for row in read("labels.jsonl"):
        sets[row["answer_id"]] = sets.get(row["answer_id"], 0) + 1
    alone = [a for a in gold if sets.get(a, 0) < 2]
    assert report["gold_without_second_reviewer"] == {
        "answers": len(alone),
        "claims": sum(len(gold[a]) for a in alone),
        "sources": ["halu-bench"],
    }
    # The same figures as without the benchmark's gold.
    from annotate.models import GoldImport

    GoldImport.objects.all().delete()
    without = agreement_report(project, n_boot=50)
    assert without["slices"] == report["slices"] and without["pairs"] == report["pairs"]
    assert without["gold_without_second_reviewer"]["answers"] == 0


def test_the_evaluation_reads_imported_gold_as_gold(benchmark):
    project, _ = benchmark
    gold = _benchmark_gold()
    report = evaluate(project)
    generation = [v["generation"]["all"] for v in report["variants"].values()]
    assert sum(g["labelled"] for g in generation) == len(gold)
    faithfulness = [g["faithfulness"] for g in generation]
    assert sum(f["n"] for f in faithfulness) == sum(len(s) for s in gold.values())
    assert sum(f["supported"] for f in faithfulness) == sum(
        s.count("supported") for s in gold.values()
    )
    unsupported = sum(g["unsupported_answers"]["unsupported"] for g in generation)
    assert unsupported == sum("unsupported" in s for s in gold.values())


def test_few_shot_examples_come_from_imported_gold_of_judge_dev_only(benchmark):
    project, _ = benchmark
    gold = _benchmark_gold()
    examples = few_shot_examples(project)
    expected = {
        (answer_id, k): support
        for answer_id, labels in gold.items()
        if judge_split(answer_id.split("/")[0]) == "judge_dev"
        for k, support in enumerate(labels)
    }
    assert expected and {(e["answer_id"], e["claim_index"]): e["label"] for e in examples} == (
        expected
    )
    assert {e["gold_source"] for e in examples} == {"imported"}
