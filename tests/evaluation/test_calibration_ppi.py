"""PPI++, strata and the three-way shares in the calibration report (SPEC.md "Calibration,
second step"; issue #31 items 2 and 3), through the real report on the demo project.

The gold items and the target are chosen here again from the database, without the report's
code (two submitted label sets and every claim's support_binary decided: gold; no submitted
label set: target), and handed to ppi_py itself: the report must give ppi_py's numbers to
1e-9, on the command's --json, the API, the run's JSON and the page."""

from __future__ import annotations

import io
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from html import unescape

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy.stats import norm

from annotate.common import computed
from annotate.gold.pairs import pairs_for_project
from annotate.gold.splits import judge_split
from annotate.models import Answer, Assignment, Claim
from annotate.models import ComputedReport as StoredReport
from evaluation.judges.runs import import_judge_run
from evaluation.models import JudgeRun, Verdict
from evaluation.reports.strata import slice_stratum
from tests.api import API, build_demo, token_client
from tests.conftest import FIXTURES, PASSWORD
from tests.evaluation.test_calibration_report import ITEMS, build_project, judge_lines

pytestmark = pytest.mark.django_db

Z = norm.ppf(0.975)
UNSUPPORTED = {"contradicted", "insufficient_evidence", "unsupported"}


@pytest.fixture
def demo(db, reviewer_a, reviewer_b, lead):
    """The demo project (both reviewers' labels, strict-judge-v2) and strict-judge-v3 beside."""
    project = build_demo([reviewer_a, reviewer_b], lead)
    with open(FIXTURES / "demo_judge_run_v2.jsonl", "rb") as stream:
        import_judge_run(lines=stream, project=project, user=lead)
    lead.set_password(PASSWORD)
    lead.save()
    return project


# --- The samples, chosen again without the report's code --------------------------------------


@dataclass
class Item:
    gold: str | None  # the decided support (three-way), None for a target claim
    gold_binary: str | None
    judge: str
    answerable: bool
    adversarial: bool
    variant: str

    @property
    def stratum(self) -> str:
        return slice_stratum(answerable=self.answerable, adversarial=self.adversarial)


def samples(project, run: JudgeRun, split: str) -> tuple[list[Item], list[Item]]:
    """(gold items of the split the judge labelled, target claims the judge labelled)."""
    _, pairs = pairs_for_project(project)
    pair_of = {p.claim_id: p for p in pairs}
    submitted = Counter(
        Assignment.objects.filter(project=project, status="submitted").values_list(
            "answer_id", flat=True
        )
    )
    verdicts = {
        v.claim_id: v.label
        for v in Verdict.objects.filter(run=run, status="ok", claim__isnull=False)
    }
    claims_of = defaultdict(list)
    for claim in Claim.objects.filter(answer__project=project):
        claims_of[claim.answer_id].append(claim.pk)
    gold, target = [], []
    answers = Answer.objects.filter(project=project).select_related("case", "variant")
    for answer in answers:
        in_split = split == "all" or judge_split(answer.case.case_id) == split
        decided = all(
            pk in pair_of and pair_of[pk].gold.get("support_binary") for pk in claims_of[answer.pk]
        )
        for pk in claims_of[answer.pk]:
            if pk not in verdicts:
                continue
            item = Item(
                gold=None,
                gold_binary=None,
                judge=verdicts[pk],
                answerable=answer.case.answerable,
                adversarial=answer.case.adversarial,
                variant=answer.variant.name,
            )
            if submitted[answer.pk] == 0:
                target.append(item)
            elif submitted[answer.pk] >= 2 and decided and in_split:
                item.gold = pair_of[pk].gold.get("support")
                item.gold_binary = pair_of[pk].gold["support_binary"]
                gold.append(item)
    return gold, target


def arrays(gold: list[Item], target: list[Item]) -> tuple[np.ndarray, ...]:
    """Unsupported (the positive class) per gold, per the judge on gold, per the judge on the
    target: ppi_py's Y, Ŷ and Ŷ_unlabeled."""
    y = np.array([i.gold_binary in UNSUPPORTED for i in gold], dtype=float)
    yhat = np.array([i.judge in UNSUPPORTED for i in gold], dtype=float)
    yhat_target = np.array([i.judge in UNSUPPORTED for i in target], dtype=float)
    return y, yhat, yhat_target


def ppi_py(y, yhat, yhat_target) -> tuple[float, tuple[float, float]]:
    """ppi_py's PPI++ of the mean: its point estimate and 95% interval with λ tuned."""
    estimate = ppi_mean_pointestimate(y, yhat, yhat_target, lam=None)
    low, high = ppi_mean_ci(y, yhat, yhat_target, alpha=0.05, lam=None)
    return float(np.ravel(estimate)[0]), (float(np.ravel(low)[0]), float(np.ravel(high)[0]))


def unclipped(block: dict) -> tuple[float, list[float]]:
    """A clipped share's own estimate and interval, before clipping."""
    if block["clipped"]:
        return block["unclipped"]["estimate"], block["unclipped"]["ci95"]
    return block["estimate"], block["ci95"]


def command_json(run: JudgeRun, **options) -> dict:
    out = io.StringIO()
    call_command(
        "calibration",
        project=run.project.slug,
        judge=run.name,
        json=True,
        stdout=out,
        **options,
    )
    return json.loads(out.getvalue())


def command_text(run: JudgeRun, **options) -> str:
    out = io.StringIO()
    call_command("calibration", project=run.project.slug, judge=run.name, stdout=out, **options)
    return out.getvalue()


# --- PPI++ is ppi_py's --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "judge,split",
    [
        ("strict-judge-v2", "judge_test"),  # the demo, as `calibration --judge` shows it
        ("strict-judge-v3", "judge_test"),
        ("strict-judge-v2", "all"),
    ],
)
def test_the_headline_is_ppi_py_s_ppi_plus_plus_on_the_demo(demo, judge, split):
    run = JudgeRun.objects.get(project=demo, name=judge)
    report = command_json(run, split=split)
    y, yhat, yhat_target = arrays(*samples(demo, run, split))
    assert (report["n"], report["corrected"]["target_n"]) == (y.size, yhat_target.size)
    estimate, (low, high) = ppi_py(y, yhat, yhat_target)

    block = report["corrected"]["ppi_plus_plus"]
    assert {"estimate", "ci95", "lambda"} <= set(block)
    own_estimate, own_ci = unclipped(block)
    assert own_estimate == pytest.approx(estimate, abs=1e-9)
    assert own_ci == pytest.approx([low, high], abs=1e-9)
    assert block["estimate"] == pytest.approx(min(1.0, max(0.0, estimate)), abs=1e-9)
    assert 0.0 <= block["ci95"][0] <= block["ci95"][1] <= 1.0
    assert 0.0 <= block["lambda"] <= 1.0
    # Classic PPI and Rogan–Gladen stay beside it.
    assert {"ppi", "rogan_gladen"} <= set(report["corrected"])


def test_the_headline_is_ppi_py_s_on_a_constructed_project(db):
    """A fourth data set: the constructed project's ten gold items and seven target claims."""
    project, answer_ids = build_project(ITEMS)
    run = import_judge_run(lines=judge_lines(ITEMS, answer_ids), project=project).run
    report = command_json(run)
    y, yhat, yhat_target = arrays(*samples(project, run, "judge_test"))
    estimate, (low, high) = ppi_py(y, yhat, yhat_target)
    own_estimate, own_ci = unclipped(report["corrected"]["ppi_plus_plus"])
    assert own_estimate == pytest.approx(estimate, abs=1e-9)
    assert own_ci == pytest.approx([low, high], abs=1e-9)


def test_the_demo_s_intervals_are_clipped_to_the_unit_interval_and_keep_their_own_ends(demo):
    run = JudgeRun.objects.get(project=demo, name="strict-judge-v2")
    corrected = command_json(run)["corrected"]
    for name in ("ppi", "ppi_plus_plus"):
        block = corrected[name]
        own_estimate, (own_low, own_high) = unclipped(block)
        assert block["clipped"] == (own_low < 0 or own_high > 1 or not 0 <= own_estimate <= 1)
        assert block["ci95"] == [max(0.0, own_low), min(1.0, own_high)]
    # The demo's classic PPI interval starts below 0 (issue #31): shown from 0, saying so.
    assert corrected["ppi"]["clipped"] and corrected["ppi"]["unclipped"]["ci95"][0] < 0
    assert corrected["ppi"]["ci95"][0] == 0.0


def test_ppi_plus_plus_is_no_wider_than_classic_ppi_on_the_demo(demo):
    run = JudgeRun.objects.get(project=demo, name="strict-judge-v2")
    corrected = command_json(run)["corrected"]
    _, plus = unclipped(corrected["ppi_plus_plus"])
    _, classic = unclipped(corrected["ppi"])
    # PPI++ with the best λ in [0, 1] is at most as wide as λ = 1 (classic PPI), up to the
    # difference between 1.96 with sample variances and ppi_py's exact z with population ones.
    assert plus[1] - plus[0] <= (classic[1] - classic[0]) * 1.01


# --- Strata -------------------------------------------------------------------------------------


def independent_stratified(gold: list[Item], target: list[Item], key) -> dict:
    """Σ w_h θ_h and Σ w_h² Var_h, θ_h and Var_h from ppi_py within each stratum."""
    names = sorted({key(i) for i in gold} | {key(i) for i in target})
    big_n = len(target)
    rows, theta, variance = {}, 0.0, 0.0
    for name in names:
        g = [i for i in gold if key(i) == name]
        t = [i for i in target if key(i) == name]
        estimate, (low, high) = ppi_py(*arrays(g, t))
        var = ((high - low) / (2 * Z)) ** 2
        rows[name] = (len(g), len(t), estimate, (low, high))
        weight = len(t) / big_n
        theta += weight * estimate
        variance += weight**2 * var
    half = Z * np.sqrt(variance)
    return {"rows": rows, "estimate": theta, "ci95": (theta - half, theta + half)}


def test_the_stratified_estimate_by_slice_is_the_weighted_sum_of_ppi_py_per_stratum(demo):
    run = JudgeRun.objects.get(project=demo, name="strict-judge-v2")
    report = command_json(run, by="slice", split="all")
    gold, target = samples(demo, run, "all")
    expected = independent_stratified(gold, target, lambda i: i.stratum)

    assert report["by"] == "slice"
    assert [row["name"] for row in report["strata"]] == [
        name for name in ("answerable", "unanswerable", "adversarial") if name in expected["rows"]
    ]
    for row in report["strata"]:
        assert {"name", "n", "target_n", "estimate", "ci95"} <= set(row)
        n, big_n, estimate, ci = expected["rows"][row["name"]]
        assert (row["n"], row["target_n"]) == (n, big_n)
        own_estimate, own_ci = unclipped(row)
        assert own_estimate == pytest.approx(estimate, abs=1e-9)
        assert own_ci == pytest.approx(list(ci), abs=1e-9)
    stratified = report["stratified"]
    assert {"estimate", "ci95"} <= set(stratified)
    own_estimate, own_ci = unclipped(stratified)
    assert own_estimate == pytest.approx(expected["estimate"], abs=1e-9)
    assert own_ci == pytest.approx(list(expected["ci95"]), abs=1e-9)
    assert sum(row["target_n"] for row in report["strata"]) == report["corrected"]["target_n"]


def test_strata_by_variant_are_the_same_in_the_command_the_api_and_the_run_s_json(
    demo, lead, client
):
    run = JudgeRun.objects.get(project=demo, name="strict-judge-v2")
    cli = command_json(run, by="variant")
    api = token_client(lead).get(
        f"{API}/projects/demo/judge-runs/{run.pk}/calibration/", {"by": "variant"}
    )
    assert api.status_code == 200
    client.login(username=lead.username, password=PASSWORD)
    page_json = client.get(
        reverse("judge_run_json", kwargs={"slug": "demo", "run_pk": run.pk}) + "?by=variant"
    ).json()
    for face in (api.json(), page_json):
        assert face["by"] == "variant"
        assert face["strata"] == cli["strata"] and face["stratified"] == cli["stratified"]
        assert face["corrected"] == cli["corrected"]
    assert [row["name"] for row in cli["strata"]] == ["baseline", "verifier"]
    # Without ?by there are no top-level strata, only every grouping under strata_by.
    plain = token_client(lead).get(f"{API}/projects/demo/judge-runs/{run.pk}/calibration/")
    assert "strata" not in plain.json() and set(plain.json()["strata_by"]) == {"slice", "variant"}
    bad = token_client(lead).get(
        f"{API}/projects/demo/judge-runs/{run.pk}/calibration/", {"by": "reviewer"}
    )
    assert bad.status_code == 400


def test_the_command_prints_the_headline_the_classic_estimates_and_the_strata(demo):
    run = JudgeRun.objects.get(project=demo, name="strict-judge-v2")
    report = command_json(run, by="slice")
    text = command_text(run, by="slice")
    plus = report["corrected"]["ppi_plus_plus"]
    assert (
        f"PPI++ (headline): {plus['estimate']:.3f} 95% "
        f"[{plus['ci95'][0]:.3f}, {plus['ci95'][1]:.3f}]"
    ) in text
    assert f"λ = {plus['lambda']:.3f}" in text
    ppi = report["corrected"]["ppi"]
    assert f"PPI: {ppi['estimate']:.3f} 95% [{ppi['ci95'][0]:.3f}, {ppi['ci95'][1]:.3f}]" in text
    assert "clipped to [0, 1]: unclipped" in text  # the demo's classic PPI starts below 0
    assert "Rogan–Gladen" in text and "by slice" in text
    for row in report["strata"]:
        assert row["name"] in text
    assert "stratified:" in text


# --- Three-way ----------------------------------------------------------------------------------


def test_three_way_shares_are_ppi_py_s_means_of_each_label_s_indicator(demo):
    run = JudgeRun.objects.get(project=demo, name="strict-judge-v2")
    report = command_json(run)
    assert report["scale"] == "three_way"
    gold, target = samples(demo, run, "judge_test")
    decided = [i for i in gold if i.gold in ("supported", "contradicted", "insufficient_evidence")]
    shares = report["corrected"]["three_way"]
    assert set(shares) == {"contradicted", "insufficient_evidence"}
    for label, block in shares.items():
        y = np.array([i.gold == label for i in decided], dtype=float)
        yhat = np.array([i.judge == label for i in decided], dtype=float)
        yhat_target = np.array([i.judge == label for i in target], dtype=float)
        estimate, (low, high) = ppi_py(y, yhat, yhat_target)
        assert (block["n"], block["target_n"]) == (len(decided), len(target))
        own_estimate, own_ci = unclipped(block)
        assert own_estimate == pytest.approx(estimate, abs=1e-9)
        assert own_ci == pytest.approx([low, high], abs=1e-9)
        assert 0.0 <= block["lambda"] <= 1.0


def test_a_binary_judge_in_a_three_way_project_has_its_three_way_shares_refused(demo, lead):
    lines = []
    with open(FIXTURES / "demo_judge_run.jsonl", encoding="utf-8") as stream:
        for line in stream:
            row = json.loads(line)
            if row["type"] == "run":
                row["judge"] = "binary-judge"
            elif row.get("label") in ("contradicted", "insufficient_evidence"):
                row["label"] = "unsupported"
            lines.append(json.dumps(row).encode())
    run = import_judge_run(lines=lines, project=demo, user=lead).run
    report = command_json(run)
    refused = report["corrected"]["three_way"]["refused"]
    assert "binary judge" in refused and report["kappa"] is None
    assert "estimate" in report["corrected"]["ppi_plus_plus"]  # the binary share stays
    assert "three-way shares: refused — " + refused in command_text(run)


def test_a_binary_project_has_no_three_way_shares_at_all(db):
    from tests.evaluation.test_calibration_edges import build_binary_project

    _, runs = build_binary_project()
    report = command_json(runs["eager"])
    assert "three_way" not in report["corrected"]
    assert "ppi_plus_plus" in report["corrected"]


# --- The page -----------------------------------------------------------------------------------


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _row(page: str, pattern: str) -> str:
    found = re.search(rf"<tr {pattern}>(.*?)</tr>", page, re.S)
    assert found, f"no row {pattern} on the page"
    return found.group(1)


def _field(row_html: str, name: str) -> str:
    found = re.search(rf'data-field="{name}">(.*?)</(?:td|span)>', row_html, re.S)
    assert found, f"no {name} in the row"
    return _text(found.group(1))


def _share_read_back(row_html: str, block: dict) -> None:
    """The estimate and interval a row shows are the block's, to three decimals, and a
    clipped share says so with its unclipped numbers."""
    estimate = _field(row_html, "estimate")
    assert estimate.split()[0] == f"{block['estimate']:.3f}"
    assert ("clipped" in estimate) == block["clipped"]
    interval = _field(row_html, "ci95")
    assert interval.startswith(f"{block['ci95'][0]:.3f} – {block['ci95'][1]:.3f}")
    if block["clipped"]:
        own = block["unclipped"]
        assert _field(row_html, "unclipped") == (
            f"unclipped {own['estimate']:.3f}, {own['ci95'][0]:.3f} – {own['ci95'][1]:.3f}"
        )


def test_the_calibration_page_shows_the_report_s_ppi_plus_plus_strata_and_three_way_shares(
    demo, lead, client
):
    run = JudgeRun.objects.get(project=demo, name="strict-judge-v2")
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("judge_run", kwargs={"slug": "demo", "run_pk": run.pk})
    response = client.get(url + "?by=slice")
    assert response.status_code == 200
    page = response.content.decode()
    report = command_json(run, by="slice")
    corrected = report["corrected"]

    plus = _row(page, 'id="ppi-plus-plus"')
    _share_read_back(plus, corrected["ppi_plus_plus"])
    assert _field(plus, "lambda") == f"{corrected['ppi_plus_plus']['lambda']:.3f}"
    assert "headline" in _text(plus)
    _share_read_back(_row(page, 'id="ppi"'), corrected["ppi"])
    assert corrected["ppi"]["clipped"]  # so the page read back the unclipped ends above

    total = sum(row["target_n"] for row in report["strata"])
    for stratum in report["strata"]:
        row = _row(page, f'data-stratum="{stratum["name"]}"')
        assert _field(row, "n") == str(stratum["n"])
        assert _field(row, "target_n") == str(stratum["target_n"])
        assert _field(row, "weight") == f"{stratum['target_n'] / total:.3f}"
        _share_read_back(row, stratum)
    stratified = _row(page, 'id="stratified"')
    assert _field(stratified, "n") == str(report["n"]) == str(sum(r["n"] for r in report["strata"]))
    assert _field(stratified, "target_n") == str(total)
    assert _field(stratified, "weight") == "1"
    _share_read_back(stratified, report["stratified"])

    for label in ("contradicted", "insufficient_evidence"):
        row = _row(page, f'id="three-way-{label}"')
        block = corrected["three_way"][label]
        assert _field(row, "n") == str(block["n"])
        assert _field(row, "target_n") == str(block["target_n"])
        assert _field(row, "lambda") == f"{block['lambda']:.3f}"
        _share_read_back(row, block)

    # Without a choice no strata are shown; the selector's htmx request gets its section alone.
    assert 'id="no-strata"' in client.get(url).content.decode()
    section = client.get(
        url + "?by=variant", headers={"HX-Request": "true", "HX-Target": "strata-section"}
    )
    body = section.content.decode().lstrip()
    # the section, and the split switch's hidden `by` out of band, so another split keeps it
    assert body.startswith('<input type="hidden" name="by" id="split-by" value="variant"')
    assert '<section class="section" aria-labelledby="strata-title"' in body
    assert 'data-stratum="baseline"' in body and 'data-stratum="verifier"' in body


def test_only_the_lead_reaches_the_strata(demo, lead, reviewer_a, outsider, client):
    """Variant names are the lead's alone: the page and the API with ?by=variant are too."""
    run = JudgeRun.objects.get(project=demo, name="strict-judge-v2")
    url = reverse("judge_run", kwargs={"slug": "demo", "run_pk": run.pk}) + "?by=variant"
    api = f"{API}/projects/demo/judge-runs/{run.pk}/calibration/?by=variant"
    for person in (reviewer_a, outsider):
        person.set_password(PASSWORD)
        person.save()
        client.login(username=person.username, password=PASSWORD)
        assert client.get(url).status_code == 404
        assert token_client(person).get(api).status_code in (403, 404)


# --- The stored report --------------------------------------------------------------------------


def test_a_calibration_stored_before_the_strata_is_recomputed_not_an_error(demo, lead, client):
    """A report of this code's version but an older shape (no strata_by) is as good as none:
    computed again, on the page, the run's JSON and the API, never a KeyError."""
    run = JudgeRun.objects.get(project=demo, name="strict-judge-v2")
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("judge_run", kwargs={"slug": "demo", "run_pk": run.pk})
    assert client.get(url).status_code == 200
    row = StoredReport.objects.get(kind="calibration")
    old = {k: v for k, v in row.result.items() if k != "strata_by"}
    del old["corrected"]["ppi_plus_plus"]
    StoredReport.objects.filter(pk=row.pk).update(result=old)
    computed.forget_decoded()
    page = client.get(url + "?by=slice")
    assert page.status_code == 200 and 'id="stratified"' in page.content.decode()
    stored = StoredReport.objects.get(kind="calibration")
    assert stored.code_version == computed.CODE_VERSION
    assert "strata_by" in stored.result and "ppi_plus_plus" in stored.result["corrected"]
    api = token_client(lead).get(f"{API}/projects/demo/judge-runs/{run.pk}/calibration/?by=slice")
    assert (
        api.status_code == 200
        and api.json()["stratified"] == stored.result["strata_by"]["slice"]["stratified"]
    )


def test_the_api_schema_documents_ppi_plus_plus_and_the_strata(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = schema["components"]["schemas"]
    assert {"estimate", "ci95", "lambda", "clipped", "unclipped"} <= set(
        components["PPIPlusPlus"]["properties"]
    )
    assert {"name", "n", "target_n", "estimate", "ci95"} <= set(components["Stratum"]["properties"])
    assert {"ppi_plus_plus", "ppi", "rogan_gladen", "three_way"} <= set(
        components["Corrected"]["properties"]
    )


def test_the_strata_cost_the_page_no_query(demo, lead, client):
    """Every grouping is in the stored report: choosing one reads nothing more."""
    run = JudgeRun.objects.get(project=demo, name="strict-judge-v2")
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("judge_run", kwargs={"slug": "demo", "run_pk": run.pk})
    client.get(url)  # computed and stored here
    counts = []
    for query in ("", "?by=slice", "?by=variant"):
        with CaptureQueriesContext(connection) as queries:
            assert client.get(url + query).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1] == counts[2]
