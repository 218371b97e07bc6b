"""Rogan–Gladen at its edges, on a binary project as users ran it (issue #30): a judge close to
chance is refused with its reason, and an estimate the formula puts past 1 says it was clipped
and what the formula gave -- on the run's page, in its JSON, in the API and in the command.

The project: 30 answers of 10 claims labelled alike by two reviewers (300 gold claims, 100 of
them unsupported) and 20 answers nobody labelled (the 200 target claims). Two judges label
every claim:

- ``near-chance``: TPR 20/100 = 0.2, TNR 180/200 = 0.9, so TPR + TNR − 1 = 0.1; it calls 60
  of the 200 target claims unsupported (p_obs 0.3), which the formula would turn into 2.0;
- ``eager``: TPR 90/100 = 0.9, TNR 120/200 = 0.6 (J = 0.5); it calls 190 of the target
  unsupported (p_obs 0.95): (0.95 + 0.6 − 1) / 0.5 = 1.1, clipped to 1.
"""

from __future__ import annotations

import io
import json
import re
from html import unescape

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotate.imports.bundle_import import import_bundle
from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Role
from annotate.projects.opening import open_labelling
from annotate.templatetags.claimdesk import p_value
from evaluation.judges.runs import import_judge_run
from tests.api import API, token_client
from tests.conftest import PASSWORD
from tests.evaluation.test_calibration_report import _case_ids, add_reviewers

CLAIMS_PER_ANSWER, GOLD_ANSWERS, TARGET_ANSWERS = 10, 30, 20
GOLD_CLAIMS = CLAIMS_PER_ANSWER * GOLD_ANSWERS


def gold_unsupported(k: int) -> bool:
    return k < 100


JUDGES = {
    # gold claim k -> the judge says unsupported; target claim t (0..199) -> the same
    "near-chance": (lambda k: k < 20 or 100 <= k < 120, lambda t: t < 60),
    "eager": (lambda k: k < 90 or 100 <= k < 180, lambda t: t < 190),
}


def _answer(i: int) -> tuple[str, list[dict]]:
    sentences = [f"Sentence {j} of answer {i}." for j in range(CLAIMS_PER_ANSWER)]
    text = " ".join(sentences)
    claims, start = [], 0
    for sentence in sentences:
        claims.append({"text": sentence, "start": start, "end": start + len(sentence)})
        start += len(sentence) + 1
    return text, claims


def answer_ids_of_cases() -> list[str]:
    return [
        f"{case_id}/baseline" for case_id in _case_ids("judge_test", GOLD_ANSWERS + TARGET_ANSWERS)
    ]


def build_binary_project(slug: str = "edges"):
    answer_ids = answer_ids_of_cases()
    lines = [
        {
            "type": "bundle",
            "corpus_version": "v1",
            "name": "Binary edges",
            "label_schema": {"support": "binary", "claim_fields": [], "answer_fields": []},
        },
        {"type": "variant", "name": "baseline", "model": "acme/gen@2026-09-01"},
        {"type": "passage", "passage_id": "p1", "text": "The source."},
    ]
    for i, answer_id in enumerate(answer_ids):
        case_id = answer_id.removesuffix("/baseline")
        text, claims = _answer(i)
        lines += [
            {
                "type": "case",
                "case_id": case_id,
                "question": f"Question {i}?",
                "answerable": True,
                "adversarial": False,
            },
            {
                "type": "answer",
                "answer_id": answer_id,
                "case_id": case_id,
                "variant": "baseline",
                "text": text,
                "claims": claims,
            },
        ]
    project = import_bundle(lines=[json.dumps(row) for row in lines], project_slug=slug).project
    add_reviewers(project)
    project = open_labelling(project=project)

    def claim_number(i: int, j: int) -> int:
        return i * CLAIMS_PER_ANSWER + j

    labels = [
        {
            "answer_id": answer_ids[i],
            "reviewer": reviewer,
            "claims": [
                {
                    "index": j,
                    "support": "unsupported"
                    if gold_unsupported(claim_number(i, j))
                    else "supported",
                }
                for j in range(CLAIMS_PER_ANSWER)
            ],
        }
        for i in range(GOLD_ANSWERS)
        for reviewer in ("alice", "bob")
    ]
    import_labels(lines=[json.dumps(row) for row in labels], project=project)
    runs = {
        name: import_judge_run(
            lines=judge_lines(name, on_gold, on_target, answer_ids), project=project
        ).run
        for name, (on_gold, on_target) in JUDGES.items()
    }
    return project, runs


def judge_lines(name: str, on_gold, on_target, answer_ids: list[str]) -> list[str]:
    rows = [{"type": "run", "judge": name, "model": "northwind/grader", "prompt": "Grade."}]
    for i, answer_id in enumerate(answer_ids):
        for j in range(CLAIMS_PER_ANSWER):
            k = i * CLAIMS_PER_ANSWER + j
            unsupported = on_gold(k) if i < GOLD_ANSWERS else on_target(k - GOLD_CLAIMS)
            label = "unsupported" if unsupported else "supported"
            rows.append(
                {
                    "type": "verdict",
                    "answer_id": answer_id,
                    "claim_index": j,
                    "raw": label,
                    "label": label,
                }
            )
    return [json.dumps(row) for row in rows]


@pytest.fixture
def edges(db, lead):
    project, runs = build_binary_project()
    add_member(project=project, username=lead.username, role=Role.LEAD)
    return project, runs


def _text(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def rogan_gladen_row(page: str) -> str:
    """The Rogan–Gladen row of the run page's corrected table, as a person reads it."""
    found = re.search(r'<tr id="rogan-gladen">(.*?)</tr>', page, re.S)
    assert found, "no Rogan–Gladen row on the page"
    return _text(found.group(1))


def _surfaces(client, lead, project, run) -> tuple[str, dict, dict, str, dict]:
    """The run's page, its JSON, the API's calibration, the command's text and --json."""
    client.login(username=lead.username, password=PASSWORD)
    kwargs = {"slug": project.slug, "run_pk": run.pk}
    page = client.get(reverse("judge_run", kwargs=kwargs))
    assert page.status_code == 200
    page_json = client.get(reverse("judge_run_json", kwargs=kwargs)).json()
    api = token_client(lead).get(f"{API}/projects/{project.slug}/judge-runs/{run.pk}/calibration/")
    assert api.status_code == 200
    text, as_json = io.StringIO(), io.StringIO()
    call_command("calibration", project=project.slug, judge=run.name, stdout=text)
    call_command("calibration", project=project.slug, judge=run.name, json=True, stdout=as_json)
    return (
        page.content.decode(),
        page_json["corrected"],
        api.json()["corrected"],
        text.getvalue(),
        json.loads(as_json.getvalue())["corrected"],
    )


def test_a_judge_close_to_chance_is_refused_with_its_reason_everywhere(client, edges, lead):
    project, runs = edges
    page, page_json, api, text, cli = _surfaces(client, lead, project, runs["near-chance"])
    assert page_json == api == cli  # one report, three faces
    assert page_json["p_obs"] == pytest.approx(0.3) and page_json["target_n"] == 200
    rg = page_json["rogan_gladen"]
    assert "estimate" not in rg and rg["youden"] == pytest.approx(0.1)
    low, high = rg["youden_ci95"]
    assert low < 0.05 < 0.1 < high
    reason = (
        f"TPR + TNR − 1 = 0.100, and its 95% bootstrap interval [{low:.3f}, {high:.3f}] "
        "reaches below 0.05: a judge that close to chance gives no usable correction"
    )
    assert rg["refused"] == reason
    assert rogan_gladen_row(page) == f"Rogan–Gladen refused {reason}"
    assert f"Rogan–Gladen: refused — {reason}" in text
    # PPI does not divide by TPR + TNR − 1 and stays: p_obs minus the judge's bias on gold,
    # 0.3 − (40 − 100) / 300 = 0.5.
    assert page_json["ppi"]["estimate"] == pytest.approx(0.5)
    # The judge's rates, read from the page.
    body = _text(page)
    assert "TPR (unsupported caught) 0.200 20 of 100 gold-unsupported" in body
    assert "TNR (supported passed) 0.900 180 of 200 gold-supported" in body


def test_an_estimate_past_one_says_it_was_clipped_and_what_the_formula_gave(client, edges, lead):
    project, runs = edges
    page, page_json, api, text, cli = _surfaces(client, lead, project, runs["eager"])
    assert page_json == api == cli
    rg = page_json["rogan_gladen"]
    assert rg["estimate"] == 1.0 and rg["clipped"] is True
    assert rg["unclipped"] == pytest.approx(1.1)
    assert rg["youden"] == pytest.approx(0.5) and rg["youden_ci95"][0] > 0.05
    row = rogan_gladen_row(page)
    assert row.startswith("Rogan–Gladen 1.000 clipped the formula gives 1.100 ")
    low, high = rg["ci95"]
    assert f"{low:.3f} – {high:.3f}" in row
    j_low, j_high = rg["youden_ci95"]
    assert f"TPR + TNR − 1 = 0.500, 95% {j_low:.3f} – {j_high:.3f}" in row
    own_low, own_high = rg["unclipped_ci95"]
    assert own_high > 1 and high == 1.0  # the bootstrap's own upper end is past 1 too
    assert f"unclipped {own_low:.3f} – {own_high:.3f}" in row
    assert (
        f"Rogan–Gladen: 1.000 (clipped to [0, 1]: the formula gives 1.100) "
        f"95% [{low:.3f}, {high:.3f}] (clipped to [0, 1]: the bootstrap's own ends "
        f"[{own_low:.3f}, {own_high:.3f}]); TPR + TNR − 1 = 0.500 95% [{j_low:.3f}, {j_high:.3f}]"
    ) in text


def test_the_api_schema_documents_the_rogan_gladen_block(client):
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    block = schema["components"]["schemas"]["RoganGladen"]["properties"]
    assert {"refused", "estimate", "ci95", "clipped", "unclipped", "youden", "youden_ci95"} <= set(
        block
    )


def test_the_text_lists_twenty_disagreements_and_says_where_the_rest_are(edges):
    project, runs = edges
    text = io.StringIO()
    call_command("calibration", project=project.slug, judge="near-chance", stdout=text)
    lines = text.getvalue().splitlines()
    # 80 gold-unsupported claims passed and 20 gold-supported ones flagged
    assert "  disagreements with gold: 100" in lines
    listed = [line for line in lines if re.match(r"    \S+ claim \d+: gold ", line)]
    assert len(listed) == 20
    assert "    … and 80 more: --json lists every one (the run's page too, with a CSV of all)" in (
        lines
    )
    as_json = io.StringIO()
    call_command(
        "calibration", project=project.slug, judge="near-chance", json=True, stdout=as_json
    )
    assert len(json.loads(as_json.getvalue())["disagreements"]) == 100


def test_a_split_with_nothing_scored_says_so_instead_of_a_small_sample(client, edges, lead):
    """Every case of the project is on judge_test: judge_dev has no gold claim at all."""
    project, runs = edges
    text = io.StringIO()
    call_command("calibration", project=project.slug, judge="eager", split="judge_dev", stdout=text)
    assert "gold claims 0: scored n = 0" in text.getvalue()
    assert "nothing scored on this split" in text.getvalue()
    assert "small sample" not in text.getvalue()
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("judge_run", kwargs={"slug": project.slug, "run_pk": runs["eager"].pk})
    page = _text(client.get(url + "?split=judge_dev").content.decode())
    assert "Nothing scored on judge_dev" in page and "Small sample" not in page
    assert "Small sample" not in _text(client.get(url).content.decode())  # n = 300 there


def test_a_tiny_mcnemar_p_is_printed_with_its_digits_not_as_zero(client, edges, lead):
    """A judge right on all 300 gold claims against near-chance, right on 200 of them: the
    100 discordant claims all favour the first, exact McNemar p = 2 · 0.5^100."""
    project, runs = edges
    answer_ids = answer_ids_of_cases()
    perfect = import_judge_run(
        lines=judge_lines("perfect", gold_unsupported, lambda t: t < 50, answer_ids),
        project=project,
    ).run
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("judge_compare", kwargs={"slug": project.slug})
    page = client.get(f"{url}?a={perfect.pk}&b={runs['near-chance'].pk}")
    c = page.context["c"]
    assert (c["only_a_right"], c["only_b_right"]) == (100, 0)
    assert c["mcnemar_p"] == pytest.approx(2 * 0.5**100)
    found = re.search(r'<span class="muted small" id="mcnemar">(.*?)</span>', page.content.decode())
    assert _text(found.group(1)) == "· exact McNemar p = 1.6e-30"


@pytest.mark.parametrize(
    ("p", "shown"),
    [
        (1.0, "p = 1.000"),
        (0.031, "p = 0.031"),
        (0.0012, "p = 0.0012"),
        (0.00007, "p = 7e-05"),
        (6.1e-5, "p = 6.1e-05"),
        (0.0, "p < 1e-300"),
    ],
)
def test_p_values_keep_their_digits(p, shown):
    assert p_value(p) == shown
