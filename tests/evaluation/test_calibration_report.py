"""Calibration of a judge run against gold, computed where it is read.

A constructed project with exact numbers checks what the report hands to the pure functions
(tested in test_calibration.py); the demo project with its judge run checks kappa and the
confusion matrix against scikit-learn, the few-shot export, and the page itself."""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils.html import escape
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from annotate.gold.pairs import pairs_for_project
from annotate.gold.splits import judge_split
from annotate.imports.bundle_import import import_bundle
from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Answer, Claim, Decision, Project, Role
from annotate.projects.opening import open_labelling
from evaluation.agreement import SUPPORT
from evaluation.calibration import corrected_estimates, unsupported_indicator
from evaluation.judges.runs import import_judge_run
from evaluation.models import Verdict
from evaluation.reports.calibration import calibration_report
from evaluation.reports.few_shot import few_shot_examples
from evaluation.reports.judge_comparison import compare_runs
from evaluation.reports.judge_gold import load_gold
from tests.conftest import FIXTURES, PASSWORD, import_fixture

S, C, I = "supported", "contradicted", "insufficient_evidence"  # noqa: E741


@dataclass
class Item:
    split: str  # judge_test or judge_dev
    gold: str | tuple[str, str] | None  # both reviewers' label, (a, b) when they differ, None
    judge: str | None  # a label, "malformed", "timeout", or None for no verdict
    variant: str = "baseline"
    abstained: bool = False


def _case_ids(split: str, count: int) -> list[str]:
    ids, i = [], 0
    while len(ids) < count:
        if judge_split(f"c{i}") == split:
            ids.append(f"c{i}")
        i += 1
    return ids


def add_reviewers(project) -> None:
    """alice and bob as reviewers who can log in with the test password."""
    for name in ("alice", "bob"):
        add_member(
            project=project,
            username=name,
            role=Role.REVIEWER,
            password=PASSWORD,
            reset_password=True,
        )


def build_project(items: list[Item], slug: str = "built") -> tuple[Project, dict[int, str]]:
    """One case, one answer and one claim per item; reviewers alice and bob label the items
    that have gold. Returns the project and item index -> answer_id."""
    ids = {
        split: iter(_case_ids(split, sum(it.split == split for it in items)))
        for split in ("judge_test", "judge_dev")
    }
    lines = [
        {"type": "bundle", "corpus_version": "v1", "name": "Constructed"},
        {"type": "variant", "name": "baseline", "model": "acme/gen@2026-09-01"},
        {"type": "variant", "name": "verifier", "model": "acme/gen@2026-09-01"},
        {"type": "passage", "passage_id": "p1", "text": "The lab uses batch size 32."},
    ]
    answer_ids: dict[int, str] = {}
    for i, item in enumerate(items):
        case_id = next(ids[item.split])
        text = f"Claim number {i} of the constructed project." + " More." * (i % 5)
        answer_ids[i] = f"{case_id}/{item.variant}"
        lines += [
            {
                "type": "case",
                "case_id": case_id,
                "question": f"Question {i}?",
                "answerable": False,
                "adversarial": False,
                "required_facts": ["none"],
            },
            {
                "type": "answer",
                "answer_id": answer_ids[i],
                "case_id": case_id,
                "variant": item.variant,
                "text": text,
                "abstained": item.abstained,
                "retrieved": [{"passage_id": "p1", "rank": 1, "in_prompt": True}],
                "claims": [{"text": text, "start": 0, "end": len(text), "citations": []}],
            },
        ]
    project = import_bundle(lines=[json.dumps(row) for row in lines], project_slug=slug).project
    add_reviewers(project)
    project = open_labelling(project=project)
    labels = []
    for i, item in enumerate(items):
        if item.gold is None:
            continue
        pair = item.gold if isinstance(item.gold, tuple) else (item.gold, item.gold)
        for reviewer, support in zip(("alice", "bob"), pair, strict=True):
            labels.append(
                {
                    "answer_id": answer_ids[i],
                    "reviewer": reviewer,
                    "relevance": 2,
                    "abstention": "appropriate" if item.abstained else None,
                    "failure_labels": [],
                    "note": "",
                    "claims": [
                        {
                            "index": 0,
                            "support": support,
                            "severity": "none" if support == S else "minor",
                            "requires_evidence": False,
                            "evidence_ids": ["p1"],
                            "evidence_quote": "batch size 32",
                            "citations": {},
                            "note": f"{reviewer} on item {i}",
                        }
                    ],
                }
            )
    import_labels(lines=[json.dumps(row) for row in labels], project=project)
    return project, answer_ids


def judge_lines(items, answer_ids, name="judge-a", model="northwind/grader", judged=None):
    judged = judged or [it.judge for it in items]
    rows = [{"type": "run", "judge": name, "model": model, "prompt": "Grade the claim."}]
    for i, label in enumerate(judged):
        row = {"type": "verdict", "answer_id": answer_ids[i], "claim_index": 0}
        if label is None:
            continue
        if label == "malformed":
            row.update(raw="I think it is fine", label=None)
        elif label == "timeout":
            row.update(raw="", status="timeout")
        else:
            row.update(raw=json.dumps({"label": label}), label=label, evidence_ids=["p1"])
        rows.append(row)
    return [json.dumps(row) for row in rows]


# Ten scored gold claims on judge_test: gold 6 supported, 2 contradicted, 2 insufficient; the
# judge catches 3 of the 4 unsupported (TPR 3/4) and passes 5 of the 6 supported (TNR 5/6).
TEST_SCORED = [
    *(Item("judge_test", S, S) for _ in range(5)),
    Item("judge_test", S, I),
    Item("judge_test", C, C),
    Item("judge_test", C, S),
    Item("judge_test", I, I),
    Item("judge_test", I, C),
]
NOT_SCORED = [
    Item("judge_test", S, "malformed"),
    Item("judge_test", S, "timeout"),
    Item("judge_test", S, None),
]
DEV = [Item("judge_dev", S, S), Item("judge_dev", C, S), Item("judge_dev", S, S)]
# The target: claims the judge labelled in answers nobody has labelled: 2 of 7 unsupported. The
# pending claim (the reviewers disagree, no lead decided) is in neither sample but counted as
# excluded; a malformed one and one without a verdict do not count.
TARGET = [
    Item("judge_test", (S, I), S, variant="verifier"),
    Item("judge_test", None, C, variant="verifier"),
    Item("judge_dev", None, I, variant="verifier", abstained=True),
    *(Item("judge_test", None, S, variant="verifier") for _ in range(5)),
    Item("judge_test", None, "malformed", variant="verifier"),
    Item("judge_dev", None, None, variant="verifier"),
]
ITEMS = TEST_SCORED + NOT_SCORED + DEV + TARGET


@pytest.fixture
def built(db, lead, reviewer_a, outsider):
    project, answer_ids = build_project(ITEMS)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    add_member(project=project, username=reviewer_a.username, role=Role.REVIEWER)
    run = import_judge_run(lines=judge_lines(ITEMS, answer_ids), project=project).run
    return project, answer_ids, run


def test_counts_malformed_timeouts_and_missing_apart_and_never_scores_them(built):
    _, _, run = built
    r = calibration_report(run=run)
    assert r["split"] == "judge_test"
    assert (r["gold_items"], r["n"], r["malformed"], r["timeouts"], r["missing"]) == (
        13,
        10,
        1,
        1,
        1,
    )
    assert r["coverage"] == pytest.approx(10 / 13)
    assert sum(map(sum, r["confusion"]["matrix"])) == 10
    assert (r["run"]["malformed"], r["run"]["timeouts"]) == (2, 1)
    assert [p["problem"] for p in r["problems"]["malformed"]] == ["label is null"] * 2
    # an ok verdict's raw response is left unread; a problem's is shown
    assert [p["raw"] for p in r["problems"]["malformed"]] == ["I think it is fine"] * 2
    assert [p["raw"] for p in r["problems"]["timeouts"]] == [""]


def test_kappa_confusion_and_per_label_scores_match_scikit_learn(built):
    _, _, run = built
    r = calibration_report(run=run)
    gold = [it.gold for it in TEST_SCORED]
    judge = [it.judge for it in TEST_SCORED]
    assert r["accuracy"] == pytest.approx(0.7)
    assert r["kappa"] == pytest.approx(cohen_kappa_score(gold, judge, labels=list(SUPPORT)))
    assert r["confusion"] == {
        "labels": list(SUPPORT),
        "matrix": confusion_matrix(gold, judge, labels=list(SUPPORT)).tolist(),
    }
    assert r["confusion"]["matrix"] == [[5, 0, 1], [1, 1, 0], [0, 1, 1]]
    supported = r["per_label"][0]
    assert (supported["precision"], supported["recall"]) == pytest.approx((5 / 6, 5 / 6))
    assert (r["tpr"], r["tnr"]) == pytest.approx((3 / 4, 5 / 6))
    assert len(r["disagreements"]) == 3


def test_human_kappa_is_reviewer_a_against_b_on_the_same_split(built):
    _, _, run = built
    r = calibration_report(run=run)
    # Every judge_test claim is labelled by both, alike except the pending one.
    a = [
        it.gold[0] if isinstance(it.gold, tuple) else it.gold
        for it in ITEMS
        if it.split == "judge_test" and it.gold
    ]
    b = [
        it.gold[1] if isinstance(it.gold, tuple) else it.gold
        for it in ITEMS
        if it.split == "judge_test" and it.gold
    ]
    assert r["human_agreement"]["n"] == len(a) == 14
    assert r["human_kappa"] == pytest.approx(cohen_kappa_score(a, b, labels=list(SUPPORT)))


def test_corrected_estimates_get_the_gold_pairs_and_the_unlabelled_target(built):
    _, _, run = built
    c = calibration_report(run=run)["corrected"]
    assert (c["target_n"], c["p_obs"]) == (7, pytest.approx(2 / 7))
    # the disputed claim is in neither sample, and while it waits the estimate is provisional
    assert c["excluded"] == {"pending_dispute": 1, "single_reviewer": 0}
    assert c["provisional"] and c["disputes_pending"] == 1
    assert (
        c["provisional_reason"] == "1 dispute pending: the estimate may move once it is adjudicated"
    )
    # Rogan–Gladen would be (2/7 + 5/6 − 1) / (3/4 + 5/6 − 1) = 10/49, but ten gold items
    # cannot rule out a judge at chance: the interval of TPR + TNR − 1 = 7/12 reaches below 0.05.
    rg = c["rogan_gladen"]
    assert rg["youden"] == pytest.approx(7 / 12) and rg["youden_ci95"][0] < 0.05
    assert "close to chance" in rg["refused"] and "estimate" not in rg
    # PPI: 2/7 − mean(judge − gold) = 2/7 − (1 − 1)/10; var_target 5/21, var_diff 2/9
    half = 1.96 * math.sqrt((5 / 21) / 7 + (2 / 9) / 10)
    assert c["ppi"]["estimate"] == pytest.approx(2 / 7)
    # The interval reaches below 0: shown from 0, its own ends kept.
    assert c["ppi"]["clipped"] is True and c["ppi"]["ci95"] == [0.0, pytest.approx(2 / 7 + half)]
    assert c["ppi"]["unclipped"]["ci95"] == pytest.approx([2 / 7 - half, 2 / 7 + half])
    gold = [it.gold for it in TEST_SCORED]
    judge = [it.judge for it in TEST_SCORED]
    target = [C, I, S, S, S, S, S]
    expected = corrected_estimates(
        unsupported_indicator(gold), unsupported_indicator(judge), unsupported_indicator(target)
    )
    assert {k: c[k] for k in expected} == expected


def test_a_single_reviewer_answer_is_in_neither_sample_and_an_adjudication_ends_provisional(
    built, lead
):
    project, answer_ids, run = built
    pending = Answer.objects.get(project=project, answer_id=answer_ids[len(TEST_SCORED) + 6])
    Decision.objects.create(
        answer=pending,
        claim=pending.claims.get(),
        field="support",
        value=S,
        rationale="The passage states it.",
        decided_by=lead,
    )
    c = calibration_report(run=run)["corrected"]
    assert not c["provisional"] and c["provisional_reason"] is None
    assert c["excluded"] == {"pending_dispute": 0, "single_reviewer": 0}
    # one reviewer's labels on a target answer take it out of the target
    target_answer = answer_ids[len(TEST_SCORED) + 7]
    line = {
        "answer_id": target_answer,
        "reviewer": "alice",
        "relevance": 2,
        "failure_labels": [],
        "claims": [
            {
                "index": 0,
                "support": C,
                "severity": "minor",
                "evidence_ids": ["p1"],
                "evidence_quote": "batch size 32",
            }
        ],
    }
    import_labels(lines=[json.dumps(line)], project=project)
    c = calibration_report(run=run)["corrected"]
    assert c["excluded"] == {"pending_dispute": 0, "single_reviewer": 1}
    assert c["target_n"] == 6


def test_a_judge_no_better_than_chance_is_refused_with_its_reason(db, lead, client):
    items = [Item("judge_test", g, S) for g in (S, S, C, I)] + [
        Item("judge_test", None, S),
        Item("judge_test", None, C),
    ]
    project, answer_ids = build_project(items, slug="coin")
    add_member(project=project, username=lead.username, role=Role.LEAD)
    run = import_judge_run(lines=judge_lines(items, answer_ids), project=project).run
    r = calibration_report(run=run)
    assert (r["tpr"], r["tnr"]) == (0.0, 1.0)
    reason = r["corrected"]["rogan_gladen"]["refused"]
    assert reason.startswith("TPR + TNR = 1.000 ≤ 1")
    assert "estimate" in r["corrected"]["ppi"]
    client.login(username=lead.username, password=PASSWORD)
    page = client.get(reverse("judge_run", kwargs={"slug": "coin", "run_pk": run.pk}))
    assert "refused" in page.content.decode() and "TPR + TNR = 1.000" in page.content.decode()


def test_with_every_claim_in_gold_there_is_no_target_to_correct(db):
    items = [Item("judge_test", g, g) for g in (S, S, C, I)]
    project, answer_ids = build_project(items, slug="all-gold")
    run = import_judge_run(lines=judge_lines(items, answer_ids), project=project).run
    c = calibration_report(run=run)["corrected"]
    assert c["target_n"] == 0 and c["p_obs"] is None
    assert c["rogan_gladen"] == {"refused": "no target claims (judge-labelled claims without gold)"}
    assert c["ppi"] == {"refused": "PPI needs at least 2 target claims, got 0"}


def test_the_split_chooses_the_gold_items(built):
    _, _, run = built
    dev = calibration_report(run=run, split="judge_dev")
    every = calibration_report(run=run, split="all")
    assert (dev["n"], dev["accuracy"]) == (3, pytest.approx(2 / 3))
    assert every["n"] == 13 and every["gold_items"] == 16
    assert dev["corrected"]["target_n"] == every["corrected"]["target_n"] == 7
    with pytest.raises(ValueError, match="split must be one of"):
        calibration_report(run=run, split="test")


def test_bias_checks_compare_pass_rates_by_group_with_gold(built):
    _, _, run = built
    bias = calibration_report(run=run)["bias"]
    baseline, verifier = bias["variant"]
    assert (baseline["group"], baseline["n"], baseline["gold_n"]) == ("baseline", 13, 10)
    assert baseline["pass_rate"] == pytest.approx(9 / 13)  # 6 of 10 on test, 3 of 3 on dev
    assert baseline["gold_pass_rate"] == pytest.approx(6 / 10)
    assert baseline["judge_pass_rate_on_gold"] == pytest.approx(6 / 10)
    assert (verifier["n"], verifier["pass_rate"], verifier["gold_n"]) == (8, 6 / 8, 0)
    answered, abstained = bias["abstention"]
    assert (answered["group"], answered["n"], abstained["n"]) == ("answered", 20, 1)
    assert abstained["pass_rate"] == 0.0
    assert sum(row["n"] for row in bias["answer_length"]) == 21
    # the judge cites p1 wherever it labels; gold evidence is p1 throughout
    assert bias["evidence_overlap"] == {"n": 10, "mean_jaccard": 1.0, "neither": 0}


def test_a_decision_that_changes_gold_moves_the_judge_s_accuracy(built, lead):
    project, answer_ids, run = built
    before = calibration_report(run=run)
    assert before["accuracy"] == pytest.approx(0.7)
    # item 5: gold supported, the judge said insufficient evidence; a lead now agrees with it
    answer = Answer.objects.get(project=project, answer_id=answer_ids[5])
    Decision.objects.create(
        answer=answer,
        claim=answer.claims.get(),
        field="support",
        value=I,
        rationale="Nothing in the passage decides it.",
        decided_by=lead,
    )
    after = calibration_report(run=run)
    assert after["accuracy"] == pytest.approx(0.8)
    assert after["confusion"]["matrix"] == [[5, 0, 0], [1, 1, 0], [0, 1, 2]]
    assert len(after["disagreements"]) == 2


def test_compare_two_runs_on_the_same_gold_items(built):
    project, answer_ids, run_a = built
    better = [it.judge for it in ITEMS]
    better[5], better[7] = S, C  # fixes two of A's three mistakes ...
    better[0] = C  # ... and makes a new one
    better[10] = S  # A's malformed item is scored for B, but not for A: not shared
    run_b = import_judge_run(
        lines=judge_lines(ITEMS, answer_ids, name="judge-b", judged=better), project=project
    ).run
    c = compare_runs(run_a=run_a, run_b=run_b)
    assert c["n"] == 10
    assert (c["a"]["scored_in_split"], c["b"]["scored_in_split"]) == (10, 11)
    assert (c["a"]["accuracy"], c["b"]["accuracy"]) == pytest.approx((0.7, 0.8))
    assert (c["both_right"], c["only_a_right"], c["only_b_right"], c["both_wrong"]) == (6, 1, 2, 1)
    assert c["mcnemar_p"] == pytest.approx(1.0)
    assert sorted((d["a"], d["b"]) for d in c["differences"]) == [(I, S), (S, C), (S, C)]
    assert c["a"]["kappa"] == pytest.approx(calibration_report(run=run_a)["kappa"])


def test_few_shot_examples_come_from_judge_dev_only(built):
    project, answer_ids, _ = built
    examples = few_shot_examples(project)
    dev_gold = {answer_ids[i] for i, it in enumerate(ITEMS) if it.split == "judge_dev" and it.gold}
    assert {e["answer_id"] for e in examples} == dev_gold
    assert all(judge_split(e["answer_id"].split("/")[0]) == "judge_dev" for e in examples)
    first = examples[0]
    assert set(first) >= {"question", "passages", "claim", "label", "quote", "rationale"}
    assert first["passages"] == [{"passage_id": "p1", "text": "The lab uses batch size 32."}]
    assert first["quote"] == "batch size 32"


@pytest.fixture
def demo(db, lead, reviewer_a, outsider):
    project = import_fixture("demo.jsonl", "demo")
    add_reviewers(project)
    add_member(project=project, username=lead.username, role=Role.LEAD)
    project = open_labelling(project=project)
    with open(FIXTURES / "demo_labels.jsonl", "rb") as stream:
        import_labels(lines=stream, project=project)
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        run = import_judge_run(lines=stream, project=project).run
    return project, run


def test_demo_run_against_scikit_learn_and_the_few_shot_split(demo):
    project, run = demo
    r = calibration_report(run=run)
    _, pairs = pairs_for_project(project)
    verdicts = {v.claim_id: v for v in Verdict.objects.filter(run=run, claim__isnull=False)}
    splits = {a.pk: judge_split(a.case.case_id) for a in Answer.objects.select_related("case")}
    # gold items: claims of doubly-labelled answers none of whose claims is in dispute
    disputed = {p.answer_id for p in pairs if p.gold["support_binary"] is None}
    scored = [
        (p.gold["support"], verdicts[p.claim_id].label)
        for p in pairs
        if p.answer_id not in disputed
        and p.gold["support"]
        and splits[p.answer_id] == "judge_test"
        and verdicts[p.claim_id].status == "ok"
    ]
    gold, judge = zip(*scored, strict=True)
    # n counts the items whose support_binary is decided; the three-way figures need the
    # subtype too (both reviewers may say unsupported in different words)
    binary = [
        p
        for p in pairs
        if p.answer_id not in disputed
        and splits[p.answer_id] == "judge_test"
        and verdicts[p.claim_id].status == "ok"
    ]
    assert r["n"] == len(binary) and r["scale_n"] == len(scored) < len(binary)
    assert (r["malformed"], r["timeouts"]) == (2, 1)
    assert r["kappa"] == pytest.approx(cohen_kappa_score(gold, judge, labels=list(SUPPORT)))
    assert r["confusion"]["matrix"] == confusion_matrix(gold, judge, labels=list(SUPPORT)).tolist()
    assert r["run"]["quotes_not_found"] == 4 and r["run"]["self_judged"] == 0

    examples = few_shot_examples(project)
    dev_gold = [p for p in pairs if p.gold["support"] and splits[p.answer_id] == "judge_dev"]
    assert len(examples) == len(dev_gold) == 20
    cases = {e["answer_id"].split("/")[0] for e in examples}
    assert all(judge_split(case) == "judge_dev" for case in cases)
    assert all(e["passages"] and e["question"] for e in examples)


def test_gold_derived_a_few_answers_at_a_time_gives_the_same_reports(
    demo, monkeypatch, django_assert_num_queries
):
    """load_gold folds the pairs into what the reports keep, chunk by chunk (a 100,000-claim
    project's pairs at once were most of a calibration's memory): cut into chunks of three
    answers, the reports come out the same."""
    from annotate.gold import imported

    project, run = demo
    whole = [
        calibration_report(run=run, split="all"),
        compare_runs(run_a=run, run_b=run, split="all"),
        few_shot_examples(project),
    ]
    monkeypatch.setattr(imported, "PAIR_CHUNK", 3)
    answers = project.answers.count()
    # answers, claims, reviewers' counts, and assignments, labels, decisions and imported
    # gold (none here: one query) a chunk
    with django_assert_num_queries(3 + 4 * math.ceil(answers / 3)):
        loaded = load_gold(project)
    assert [
        calibration_report(run=run, split="all", gold=loaded),
        compare_runs(run_a=run, run_b=run, split="all", gold=loaded),
        few_shot_examples(project, gold=loaded),
    ] == whole


def test_calibration_command_prints_the_spec_json(demo):
    out = io.StringIO()
    call_command("calibration", project="demo", judge="strict-judge-v2", json=True, stdout=out)
    data = json.loads(out.getvalue())
    spec_keys = {
        "judge",
        "split",
        "n",
        "malformed",
        "timeouts",
        "coverage",
        "accuracy",
        "kappa",
        "human_kappa",
        "tpr",
        "tnr",
        "confusion",
        "corrected",
    }
    assert spec_keys <= set(data)
    assert set(data["corrected"]) >= {
        "target_n",
        "p_obs",
        "rogan_gladen",
        "ppi",
        "excluded",
        "provisional",
    }
    assert set(data["corrected"]["excluded"]) == {"pending_dispute", "single_reviewer"}
    assert set(data["corrected"]["rogan_gladen"]) >= {"estimate", "ci95"}
    assert data["confusion"]["labels"] == list(SUPPORT)
    text = io.StringIO()
    call_command("calibration", project="demo", judge="strict-judge-v2", split="all", stdout=text)
    assert "split all" in text.getvalue() and "Rogan–Gladen" in text.getvalue()


# --- the pages -------------------------------------------------------------------------------


def _pages(project, run) -> list[str]:
    answer = Answer.objects.filter(project=project).first()
    kwargs = {"slug": project.slug}
    return [
        reverse("judges", kwargs=kwargs),
        reverse("judge_run", kwargs={**kwargs, "run_pk": run.pk}),
        reverse("judge_run_json", kwargs={**kwargs, "run_pk": run.pk}),
        reverse("judge_compare", kwargs=kwargs) + f"?a={run.pk}&b={run.pk}",
        reverse("judge_answer", kwargs={**kwargs, "run_pk": run.pk, "answer_pk": answer.pk}),
        reverse("judge_few_shot", kwargs=kwargs),
    ]


def test_only_the_lead_reaches_the_judge_pages(client, built, lead, reviewer_a, outsider):
    project, _, run = built
    for url in _pages(project, run):
        client.logout()
        assert client.get(url).status_code == 302, url  # to the login page
        for person, status in ((lead, 200), (reviewer_a, 404), (outsider, 404)):
            client.login(username=person.username, password=PASSWORD)
            assert client.get(url).status_code == status, (url, person.username)


def test_a_run_of_another_project_is_not_found(client, built, lead):
    project, _, run = built
    other = import_fixture("small.jsonl", "other")
    add_member(project=other, username=lead.username, role=Role.LEAD)
    client.login(username=lead.username, password=PASSWORD)
    assert client.get(f"/p/other/judges/{run.pk}/").status_code == 404
    answer = Answer.objects.filter(project=other).first()
    assert client.get(f"/p/built/judges/{run.pk}/answers/{answer.pk}/").status_code == 404


def test_the_calibration_page_shows_the_report_and_links_its_disagreements(client, demo, lead):
    project, run = demo
    client.login(username=lead.username, password=PASSWORD)
    response = client.get(reverse("judge_run", kwargs={"slug": "demo", "run_pk": run.pk}))
    body = response.content.decode()
    assert "Judge versus gold on <code>judge_test</code>" in body
    assert "Rogan–Gladen" in body and "PPI" in body and "By variant" in body
    r = response.context["r"]
    low, high = r["corrected"]["ppi"]["unclipped"]["ci95"]
    assert low < 0  # the demo's PPI interval starts below 0: shown from 0, saying so
    ppi_row = body.split('<tr id="ppi">', 1)[1].split("</tr>", 1)[0]
    own = r["corrected"]["ppi"]["unclipped"]["estimate"]
    assert "clipped" in ppi_row and f"unclipped {own:.3f}, {low:.3f} – {high:.3f}" in ppi_row
    for d in r["disagreements"]:
        assert d["url"] in body
        page = client.get(d["url"].split("#")[0])
        assert page.status_code == 200 and escape(d["claim"]) in page.content.decode()
    htmx = client.get(
        reverse("judge_run", kwargs={"slug": "demo", "run_pk": run.pk}) + "?split=all",
        headers={"HX-Request": "true"},
    )
    assert htmx.content.decode().lstrip().startswith('<div id="report">')


def test_the_few_shot_download_is_the_export(client, demo, lead):
    project, _ = demo
    client.login(username=lead.username, password=PASSWORD)
    response = client.get(reverse("judge_few_shot", kwargs={"slug": "demo"}))
    assert response["Content-Disposition"] == (
        'attachment; filename="demo-judge-dev-examples.jsonl"'
    )
    rows = [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert rows == few_shot_examples(project)


def test_the_calibration_page_makes_a_bounded_number_of_queries(
    client, demo, built, lead, django_assert_max_num_queries
):
    client.login(username=lead.username, password=PASSWORD)
    for project, run in (demo, built[::2]):
        url = reverse("judge_run", kwargs={"slug": project.slug, "run_pk": run.pk})
        client.get(url)  # warm the session
        with django_assert_max_num_queries(11):
            assert client.get(url).status_code == 200
    # the same bound holds for 84 claims and for 26: nothing is fetched per item
    assert Claim.objects.filter(answer__project=demo[0]).count() > 3 * len(ITEMS)


def test_the_compare_page_says_what_is_missing_or_wrong(client, built, lead):
    project, answer_ids, run_a = built
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("judge_compare", kwargs={"slug": project.slug})
    alone = client.get(url).content.decode()
    assert "Comparing needs two judge runs; this project has 1." in alone
    assert "<select" not in alone
    run_b = import_judge_run(lines=judge_lines(ITEMS, answer_ids, name="judge-b"), project=project)
    wrong = client.get(f"{url}?a={run_a.pk}&b=999999").content.decode()
    assert "Run B: Select a valid choice." in wrong
    assert client.get(f"{url}?a={run_a.pk}&b={run_b.run.pk}").context["c"] is not None


def test_an_unsupported_claim_whose_subtype_is_pending_is_listed_when_the_judge_passes_it(
    db, lead, reviewer_a, outsider
):
    """Both reviewers said unsupported, one 'contradicted', one 'insufficient evidence': the
    subtype waits for a lead, the binary gold does not, and the claim counts in TPR. When the
    judge calls it supported, it is among the disagreements a lead reads behind that TPR."""
    items = [
        Item("judge_test", (C, I), S),  # missed on the binary scale: listed
        Item("judge_test", (C, I), C),  # right on the binary scale: not listed
        Item("judge_test", S, S),
        Item("judge_test", S, C),  # a three-way disagreement as before
    ]
    project, answer_ids = build_project(items, slug="pending-subtype")
    run = import_judge_run(lines=judge_lines(items, answer_ids), project=project).run
    r = calibration_report(run=run)
    assert {(d["gold"], d["judge"]) for d in r["disagreements"]} == {
        ("unsupported", "supported"),
        ("supported", "contradicted"),
    }
