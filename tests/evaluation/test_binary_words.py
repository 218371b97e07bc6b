"""A binary project is described in binary words (issue #30): on the hallucination-benchmark
fixture (tests/test_hallucination_benchmark.py; support labelled supported / unsupported only,
two annotators on most summaries, one on a few, none on the rest) the evaluation, agreement
and calibration texts and pages say "unsupported N", show support once, and never speak of
contradicted, insufficient evidence or an undecided subtype. Numbers are read from what is
rendered and checked against the JSON and against counts made here from the labels."""

from __future__ import annotations

import io
import re
from collections import defaultdict
from html import unescape

from django.core.management import call_command
from django.urls import reverse

from annotate.gold.pairs import pairs_for_project
from annotate.models import Answer
from evaluation.models import JudgeRun
from evaluation.reports.agreement import agreement_report
from evaluation.reports.evaluation import evaluate
from tests.conftest import PASSWORD
from tests.test_hallucination_benchmark import halu  # noqa: F401  (the fixture)

THREE_WAY_WORDS = ("contradicted", "insufficient", "subtype")


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _command(*args, **kwargs) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out, **kwargs)
    return out.getvalue()


def _page(client, lead, name: str, **kwargs) -> str:
    client.login(username=lead.username, password=PASSWORD)
    response = client.get(reverse(name, kwargs=kwargs))
    assert response.status_code == 200
    return response.content.decode()


def _row(lines: list[str], *starts: str) -> list[str]:
    """The cells of the first text-table line whose cells start with these."""
    for line in lines:
        cells = re.split(r"\s{2,}", line.strip())
        if cells[: len(starts)] == list(starts):
            return cells
    raise AssertionError(f"no row {starts}")


def _generation_block(text: str, slice_name: str) -> list[str]:
    block = text.split("Generation (gold labels")[1].split("Abstention")[0]
    return block.split(f"[{slice_name}]")[1].split("[")[0].splitlines()


def test_evaluate_says_unsupported_n_in_a_binary_project(halu, client, lead):  # noqa: F811
    report = evaluate(halu)
    text = _command("evaluate", project="halu")
    for word in THREE_WAY_WORDS:
        assert word not in text.lower(), word
    lines = _generation_block(text, "all")
    for name, variant in report["variants"].items():
        faith = variant["generation"]["all"]["faithfulness"]
        cells = _row(lines, name, "faithfulness")
        assert cells[-1] == f"unsupported {faith['unsupported']}"
        # the rendered counts add up: supported + unsupported = n
        supported, n = int(cells[3]), int(cells[4])
        assert supported + faith["unsupported"] == n > 0
    page = _text(_page(client, lead, "evaluation:report", slug="halu"))
    for word in THREE_WAY_WORDS:
        assert word not in page.lower(), word
    for variant in report["variants"].values():
        faith = variant["generation"]["all"]["faithfulness"]
        assert f"unsupported {faith['unsupported']}" in page


def test_three_way_projects_keep_their_subtypes(db):
    from tests.conftest import import_fixture

    import_fixture("demo.jsonl", "demo")
    text = _command("evaluate", project="demo")
    assert "contradicted 0, insufficient 0" in text


def test_unsupported_answers_pending_counts_disputes_only_and_unlabelled_apart(
    halu,  # noqa: F811
):
    """Pending = answers two reviewers labelled with a claim still undecided and none decided
    unsupported; the answers nobody (or one person) labelled are `unlabelled`, not disputes."""
    answer_pairs, claim_pairs = pairs_for_project(halu)
    doubly = {p.answer_id for p in answer_pairs}
    binaries = defaultdict(list)
    for pair in claim_pairs:
        binaries[pair.answer_id].append(pair.gold.get("support_binary"))
    expected = defaultdict(lambda: {"pending": 0, "unlabelled": 0})
    for answer in Answer.objects.filter(project=halu).select_related("variant"):
        labels = binaries.get(answer.pk, [])
        if "unsupported" in labels or (labels and None not in labels):
            continue  # known
        kind = "pending" if answer.pk in doubly else "unlabelled"
        expected[answer.variant.name][kind] += 1
    assert sum(e["pending"] for e in expected.values()) > 0
    assert sum(e["unlabelled"] for e in expected.values()) > 0
    report = evaluate(halu)
    text = _command("evaluate", project="halu")
    lines = _generation_block(text, "all")
    for name, variant in report["variants"].items():
        u = variant["generation"]["all"]["unsupported_answers"]
        assert (u["pending"], u["unlabelled"]) == (
            expected[name]["pending"],
            expected[name]["unlabelled"],
        )
        assert u["n"] + u["pending"] + u["unlabelled"] == variant["answers"]
        cells = _row(lines, name, "unsupported answers")
        # Slice, variant, metric, value, count, n, pending, unlabelled, detail
        assert cells[5:7] == [str(u["pending"]), str(u["unlabelled"])]


def test_agreement_shows_support_once_in_a_binary_project(halu, client, lead):  # noqa: F811
    report = agreement_report(halu)
    support = report["slices"]["all"]["support"]
    # SPEC keeps support_binary in the JSON; here it is the same field
    assert report["slices"]["all"]["support_binary"]["n"] == support["n"] > 0
    text = _command("agreement", project="halu")
    assert "support_binary" not in text
    cells = _row(text.splitlines(), "support")
    assert cells[1:3] == [str(support["n"]), f"{support['raw_agreement']:.3f}"]
    # once in each slice with labels (all, answerable), never twice in one
    assert text.count("\n  support ") == 2
    # every case is answerable and none adversarial: those slices have nothing to show
    for slice_name in ("unanswerable", "adversarial"):
        assert f"{slice_name}\n  nothing labelled by two reviewers in this slice" in text
    small = text.split("Small samples", 1)[1] if "Small samples" in text else ""
    assert "unanswerable" not in small and "adversarial" not in small
    page = _text(_page(client, lead, "agreement", slug="halu"))
    assert "supported vs unsupported" not in page and "contradicted" not in page
    matches = round(support["raw_agreement"] * support["n"])
    assert f"Support {support['n']} {round(support['raw_agreement'] * 100)}% " in page
    assert f"{matches}/{support['n']}" in page


def test_calibration_speaks_binary_in_a_binary_project(halu, client, lead):  # noqa: F811
    run = JudgeRun.objects.get(project=halu, name="strict-binary")
    text = _command("calibration", project="halu", judge="strict-binary")
    assert "binary (supported vs unsupported)" not in text
    for word in THREE_WAY_WORDS:
        assert word not in text.lower(), word
    from evaluation.reports.calibration import calibration_report

    r = calibration_report(run=run)
    accuracy = f"{r['accuracy']:.3f}" if r["accuracy"] is not None else "—"
    assert f"  binary: accuracy {accuracy}" in text
    page = _text(_page(client, lead, "judge_run", slug="halu", run_pk=run.pk))
    assert "unsupported is the positive class" in page
    for word in THREE_WAY_WORDS:
        assert word not in page.lower(), word
