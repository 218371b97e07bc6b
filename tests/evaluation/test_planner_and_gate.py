"""The budget planner and the judge gate (SPEC.md "Budget planner", "Judge gate") on the demo:
`calibration --plan` and `--min-kappa` / `--baseline`, the same in the API and on the run's
page, every number read back from the rendered page.

The world: the demo project with its reviewers' labels, its judge run strict-judge-v2
(fixtures/demo_judge_run.jsonl) and a second run, strict-judge-v3 (demo_judge_run_v2.jsonl).
The plan's uniform figures are checked against a closed form computed here from the labels
and verdicts (not through the planner), the McNemar test against statsmodels."""

from __future__ import annotations

import io
import json
import math
import re
import xml.etree.ElementTree as ET

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from statsmodels.stats.contingency_tables import mcnemar

from annotate.gold.pairs import pairs_for_project
from annotate.gold.splits import judge_split
from annotate.models import Answer, Assignment
from evaluation.judges.runs import import_judge_run
from evaluation.models import Verdict
from evaluation.reports import charts
from tests.api import API, token_client
from tests.conftest import FIXTURES, PASSWORD, labelled_demo
from tests.evaluation.test_calibration_samples import confident_run_lines

UNSUPPORTED = ("contradicted", "insufficient_evidence", "unsupported")
Z = 1.96


@pytest.fixture
def demo(db, lead):
    project = labelled_demo(leads=(lead.username,), password=PASSWORD)
    runs = {}
    for name in ("demo_judge_run.jsonl", "demo_judge_run_v2.jsonl"):
        with open(FIXTURES / name, "rb") as stream:
            run = import_judge_run(lines=stream, project=project).run
            runs[run.name] = run
    assert set(runs) == {"strict-judge-v2", "strict-judge-v3"}
    return project, runs


def run_command(*args: str) -> tuple[str, CommandError | None]:
    out = io.StringIO()
    try:
        call_command("calibration", "--project=demo", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue(), exc
    return out.getvalue(), None


def as_json(*args: str) -> dict:
    out, error = run_command(*args, "--json")
    return json.loads(out)


# --- Independent inputs: the demo's gold answers and frame, from labels and verdicts ---------


def gold_answers(project, run, split="judge_test") -> dict[int, list[tuple[bool, bool]]]:
    """(gold unsupported, judge unsupported) per scored claim, by answer: claims of answers
    two reviewers labelled, none of whose claims is in dispute, in the split, with an ok
    verdict."""
    _, pairs = pairs_for_project(project)
    disputed = {p.answer_id for p in pairs if p.gold["support_binary"] is None}
    splits = {a.pk: judge_split(a.case.case_id) for a in Answer.objects.select_related("case")}
    verdicts = {v.claim_id: v for v in Verdict.objects.filter(run=run, claim__isnull=False)}
    by_answer: dict[int, list[tuple[bool, bool]]] = {}
    for p in pairs:
        v = verdicts.get(p.claim_id)
        if p.answer_id in disputed or splits[p.answer_id] != split or v is None:
            continue
        if v.status != "ok":
            continue
        by_answer.setdefault(p.answer_id, []).append(
            (p.gold["support_binary"] == "unsupported", v.label in UNSUPPORTED)
        )
    return by_answer


def frame_claims(run) -> dict[int, int]:
    """Judged (ok) claims per answer nobody has submitted a label set for."""
    labelled = set(
        Assignment.objects.filter(status=Assignment.Status.SUBMITTED).values_list(
            "answer_id", flat=True
        )
    )
    counts: dict[int, int] = {}
    for v in Verdict.objects.filter(run=run, claim__isnull=False, status="ok"):
        if v.answer_id not in labelled:
            counts[v.answer_id] = counts.get(v.answer_id, 0) + 1
    return counts


def uniform_plan_by_hand(project, run, width: float) -> tuple[int, float]:
    """Uniform π = B/F: E[Var] = (1/M²) Σ (1 − π)/π · mean(d²) = (F·ms/M²)(F/B − 1); the
    smallest whole B with 1.96 √E[Var] ≤ width, and its half-width."""
    d = [sum(g for g, _ in c) - sum(j for _, j in c) for c in gold_answers(project, run).values()]
    ms = sum(x * x for x in d) / len(d)
    frame = frame_claims(run)
    big_f, m = len(frame), sum(frame.values())

    def half(b: int) -> float:
        return Z * math.sqrt(big_f * ms / m**2 * (big_f / b - 1))

    b = next(b for b in range(1, big_f + 1) if half(b) <= width)
    return b, half(b)


# --- The command ------------------------------------------------------------------------------


def test_min_kappa_0_9_fails_the_demo_judge_with_exit_1_and_the_reason(demo):
    out, error = run_command("--judge=strict-judge-v2", "--min-kappa=0.9")
    assert error is not None and error.returncode == 1
    report = as_json("--judge=strict-judge-v2")
    lower = report["kappa_ci95"][0]
    assert lower < 0.9
    assert f"the lower end of the judge's kappa interval, {lower:.3f}, is under the minimum" in (
        str(error)
    )
    assert "judge gate: FAILED" in out
    gate = as_json("--judge=strict-judge-v2", "--min-kappa=0.9")["gate"]
    assert gate["passed"] is False and gate["kappa_lower"] == pytest.approx(lower)
    assert gate["summary"].startswith("fails: kappa < 0.9 at the 95% lower end")


def test_min_kappa_0_3_passes_the_demo_judge_with_exit_0(demo):
    out, error = run_command("--judge=strict-judge-v2", "--min-kappa=0.3")
    assert error is None
    assert "judge gate: PASSED" in out
    gate = as_json("--judge=strict-judge-v2", "--min-kappa=0.3")["gate"]
    assert gate["passed"] is True and gate["kappa_lower"] >= 0.3
    assert gate["baseline"] is None and len(gate["reasons"]) == 1


def mcnemar_by_hand(project, candidate, baseline) -> tuple[int, int, int, int]:
    """Both runs' correctness on the judge_test gold claims both scored, three-way (the demo
    project and both judges are three-way): both right, only candidate, only baseline, both
    wrong."""
    _, pairs = pairs_for_project(project)
    disputed = {p.answer_id for p in pairs if p.gold["support_binary"] is None}
    splits = {a.pk: judge_split(a.case.case_id) for a in Answer.objects.select_related("case")}
    va = {v.claim_id: v for v in Verdict.objects.filter(run=candidate, claim__isnull=False)}
    vb = {v.claim_id: v for v in Verdict.objects.filter(run=baseline, claim__isnull=False)}
    cells = [0, 0, 0, 0]
    for p in pairs:
        a, b = va.get(p.claim_id), vb.get(p.claim_id)
        if (
            p.answer_id in disputed
            or splits[p.answer_id] != "judge_test"
            or not p.gold["support"]
            or a is None
            or b is None
            or a.status != "ok"
            or b.status != "ok"
        ):
            continue
        right_a, right_b = a.label == p.gold["support"], b.label == p.gold["support"]
        cells[{(1, 1): 0, (1, 0): 1, (0, 1): 2, (0, 0): 3}[(right_a, right_b)]] += 1
    return tuple(cells)


def test_baseline_prints_the_mcnemar_counts_and_the_exact_p(demo):
    project, runs = demo
    out, error = run_command(
        "--judge=strict-judge-v3", "--min-kappa=0", "--baseline=strict-judge-v2"
    )
    both, only_a, only_b, neither = mcnemar_by_hand(
        project, runs["strict-judge-v3"], runs["strict-judge-v2"]
    )
    expected_p = mcnemar([[both, only_a], [only_b, neither]], exact=True).pvalue
    gate = as_json("--judge=strict-judge-v3", "--min-kappa=0", "--baseline=strict-judge-v2")["gate"]
    b = gate["baseline"]
    assert (b["items"], b["candidate_only"], b["baseline_only"]) == (
        both + only_a + only_b + neither,
        only_a,
        only_b,
    )
    assert b["p_value"] == pytest.approx(expected_p, abs=1e-12)
    assert (
        f"only this judge right {only_a}, only strict-judge-v2 right {only_b}, "
        f"exact p = {expected_p:.4g}" in out
    )
    assert b["worse"] is bool(expected_p < 0.05 and only_a < only_b)
    assert (error is None) is gate["passed"]
    assert f"McNemar p = {expected_p:.2g}" in gate["summary"]


def test_the_gate_refuses_bad_input_with_exit_2(demo):
    for args, message in (
        (["--baseline=strict-judge-v3"], "give --min-kappa too"),
        (["--min-kappa=0.5", "--baseline=nope"], "No other judge run 'nope'"),
        (["--min-kappa=0.5", "--baseline=strict-judge-v2"], "No other judge run"),
        (["--min-kappa=2"], "between -1 and 1"),
        (["--plan=0"], "between 0 and 1"),
        (["--plan=wide"], "must be a number"),
    ):
        _, error = run_command("--judge=strict-judge-v2", *args)
        assert error is not None and error.returncode == 2, args
        assert message in str(error), args
    _, error = run_command("--judge=nope")
    assert error.returncode == 2


def test_plan_gives_the_uniform_budget_a_closed_form_gives(demo):
    project, runs = demo
    run = runs["strict-judge-v2"]
    answers, half = uniform_plan_by_hand(project, run, 0.05)
    plan = as_json("--judge=strict-judge-v2", "--plan=0.05")["plan"]
    assert plan["refused"] is None
    assert plan["half_width"] == 0.05
    assert plan["uniform"]["answers"] == answers
    assert plan["uniform"]["expected_half_width"] == pytest.approx(half, rel=1e-9)
    frame = frame_claims(run)
    assert (plan["frame_answers"], plan["frame_claims"]) == (len(frame), sum(frame.values()))
    # uniform π = B/F: the expected claims are B times the mean claims per answer
    assert plan["uniform"]["claims"] == pytest.approx(
        answers * sum(frame.values()) / len(frame), abs=0.06
    )
    assert plan["gold_answers"] == len(gold_answers(project, run))
    # The demo's verdicts carry no confidence: no active plan, and why.
    assert plan["active"] is None and "no confidence" in plan["active_unavailable"]
    # The expected interval: today's PPI++ estimate ± the planned half-width, in [0, 1].
    now = plan["current"]
    lo, hi = plan["uniform"]["expected_ci95"]
    assert lo == pytest.approx(max(0.0, now["estimate"] - half))
    assert hi == pytest.approx(min(1.0, now["estimate"] + half))
    text, _ = run_command("--judge=strict-judge-v2", "--plan=0.05")
    assert f"uniform: label {answers} more answers" in text
    assert "active: not available" in text


def test_plan_with_confidences_plans_the_active_design_too(db, lead):
    project = labelled_demo(leads=(lead.username,), password=PASSWORD)
    import_judge_run(lines=confident_run_lines(), project=project)
    plan = as_json("--judge=confident", "--plan=0.1")["plan"]
    assert plan["active_unavailable"] is None
    assert plan["active"]["answers"] >= 1
    assert plan["active"]["expected_half_width"] <= 0.1
    assert [p["answers"] for p in plan["curve"]] == sorted(p["answers"] for p in plan["curve"])
    assert all(p["active"] is not None for p in plan["curve"])


# --- The API ----------------------------------------------------------------------------------


def test_the_api_carries_the_same_plan_and_gate(demo, lead):
    project, runs = demo
    run = runs["strict-judge-v3"]
    client = token_client(lead)
    url = f"{API}/projects/demo/judge-runs/{run.pk}/calibration/"
    body = client.get(
        url, {"plan": "0.05", "min_kappa": "0.9", "baseline": "strict-judge-v2"}
    ).json()
    command = as_json(
        "--judge=strict-judge-v3", "--plan=0.05", "--min-kappa=0.9", "--baseline=strict-judge-v2"
    )
    assert body["plan"] == command["plan"]
    assert body["gate"] == command["gate"]
    assert body["gate"]["passed"] is False
    plain = client.get(url).json()
    assert "plan" not in plain and "gate" not in plain
    bad = client.get(url, {"plan": "2"})
    assert bad.status_code == 400 and "between 0 and 1" in bad.json()["plan"][0]
    alone = client.get(url, {"baseline": "strict-judge-v2"})
    assert alone.status_code == 400 and "min_kappa" in alone.json()["baseline"][0]
    unknown = client.get(url, {"min_kappa": "0.5", "baseline": "nope"})
    assert unknown.status_code == 400 and "nope" in unknown.json()["baseline"][0]


# --- The page ---------------------------------------------------------------------------------


def field(page: str, name: str, within: str | None = None) -> str:
    if within is not None:
        page = re.search(rf'id="{within}"(.*?)</tr>', page, re.S).group(1)
    cell = re.search(rf'data-field="{name}">(.*?)</(td|span|strong)>', page, re.S).group(1)
    return re.sub(r"<[^>]+>", "", cell).strip()


def test_the_run_page_shows_the_plan_its_chart_and_the_gate_as_the_command(demo, client, lead):
    project, runs = demo
    run = runs["strict-judge-v3"]
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("judge_run", kwargs={"slug": "demo", "run_pk": run.pk})
    page = client.get(
        url, {"plan": "0.05", "min_kappa": "0.3", "baseline": "strict-judge-v2"}
    ).content.decode()
    command = as_json(
        "--judge=strict-judge-v3", "--plan=0.05", "--min-kappa=0.3", "--baseline=strict-judge-v2"
    )
    plan, gate = command["plan"], command["gate"]
    u = plan["uniform"]
    assert field(page, "answers", "plan-uniform") == str(u["answers"])
    assert field(page, "claims", "plan-uniform") == f"{u['claims']:.1f}"
    assert field(page, "half-width", "plan-uniform") == f"±{u['expected_half_width']:.3f}"
    lo, hi = u["expected_ci95"]
    assert field(page, "ci95", "plan-uniform") == f"{lo:.3f} – {hi:.3f}"
    assert field(page, "plan-frame-answers") == str(plan["frame_answers"])
    assert field(page, "plan-frame-claims") == str(plan["frame_claims"])
    assert field(page, "plan-gold-answers") == str(plan["gold_answers"])
    now = plan["current"]
    assert field(page, "plan-now") == f"{now['estimate']:.3f} ±{now['half_width']:.3f}"
    assert "not available" in re.search(r'id="plan-active">(.*?)</tr>', page, re.S).group(1)
    # The chart: an accessible SVG whose description carries today's point and the curve.
    svg = re.search(r"<figure[^>]*id=\"plan-chart\">(<svg.*?</svg>)", page, re.S).group(1)
    root = ET.fromstring(svg)
    ns = {"svg": "http://www.w3.org/2000/svg"}
    assert root.get("role") == "img"
    assert "Expected 95% half-width" in root.find("svg:title", ns).text
    desc = root.find("svg:desc", ns).text
    assert f"now: {now['answers']} answers labelled, ±{now['half_width']:.3f}" in desc
    first = plan["curve"][0]
    assert f"{first['answers']} answers: uniform ±{first['uniform']:.3f}" in desc
    # ... and a table of the same curve.
    rows = re.search(r'id="plan-curve">(.*?)</table>', page, re.S).group(1)
    assert rows.count("<tr>") == len(plan["curve"]) + 1
    # The gate, as the command decided it.
    assert field(page, "gate-summary") == gate["summary"]
    assert gate["summary"].startswith("passes: kappa ≥ 0.3 at the 95% lower end")
    b = gate["baseline"]
    assert field(page, "candidate-only") == str(b["candidate_only"])
    assert field(page, "baseline-only") == str(b["baseline_only"])
    assert field(page, "p-value") == f"{b['p_value']:.3f}"
    for reason in gate["reasons"]:
        assert reason.replace("'", "&#x27;") in page


def test_the_run_page_without_a_gate_asked_shows_the_default_plan_and_the_form(demo, client, lead):
    project, runs = demo
    client.login(username=lead.username, password=PASSWORD)
    run = runs["strict-judge-v2"]
    page = client.get(reverse("judge_run", kwargs={"slug": "demo", "run_pk": run.pk}))
    page = page.content.decode()
    assert 'id="gate-verdict"' not in page and 'id="gate-form"' in page
    plan = as_json("--judge=strict-judge-v2", "--plan=0.05")["plan"]
    assert field(page, "plan-half-width") == "±0.05"
    assert field(page, "answers", "plan-uniform") == str(plan["uniform"]["answers"])
    # The baseline choices are the project's other runs, by name.
    assert '<option value="strict-judge-v3">' in page


def test_the_half_width_chart_keeps_its_text_inside_and_apart():
    points = [
        charts.CurvePoint(b, 0.4 / math.sqrt(b), 0.3 / math.sqrt(b)) for b in (1, 3, 10, 30, 100)
    ]
    svg = charts.half_width_curve("Expected half-width", points, target=0.05, current=(40, 0.1))
    from tests.evaluation.test_charts import assert_inside_and_apart, parse

    root = parse(svg)
    assert_inside_and_apart(root)
    paths = root.findall(".//{http://www.w3.org/2000/svg}path")
    assert any(p.get("stroke-dasharray") == "6 3" for p in paths)  # active, dashed


def test_with_a_labelled_sample_the_plan_starts_from_its_design_estimate(db, lead):
    """Once a calibration sample has decided answers, today's point is its design estimate
    (gold drawn with known π), and the plan learns from its answers weighted 1/π when all the
    gold came from it."""
    from annotate.imports.label_import import import_labels
    from evaluation.judges.samples import design_estimates, designs_of, draw_sample
    from tests.evaluation.test_calibration_samples import label_lines, sampled_answers

    project = labelled_demo(leads=(lead.username,), password=PASSWORD)
    run = import_judge_run(lines=confident_run_lines(), project=project).run
    design = draw_sample(run=run, budget=10, design="active", seed=3)

    answers = sampled_answers(design)
    for reviewer in ("alice", "bob"):
        import_labels(lines=label_lines(answers, reviewer), project=project)
    plan = as_json("--judge=confident", "--plan=0.1", "--split=all")["plan"]
    report = design_estimates(designs_of(run))[0]
    lo, hi = report.estimate.share.ci95_unclipped
    now = plan["current"]
    assert now["method"] == f"calibration sample {design.pk}"
    assert now["answers"] == report.decided > 0
    assert now["estimate"] == pytest.approx(report.estimate.share.estimate_unclipped)
    assert now["half_width"] == pytest.approx((hi - lo) / 2)
    assert plan["planned_sample"] == {
        "design": design.pk,
        "kind": "active",
        "answers": pytest.approx(min(10, plan["frame_answers"])),
    }
    # the frame left is small: a sample of its size would hold every answer (π = 1)
    assert plan["uniform"]["planned"]["expected_half_width"] >= 0
