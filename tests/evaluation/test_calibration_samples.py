"""Calibration samples (SPEC.md "Calibration samples (design-based)"): drawn by the command,
the judge run's page and the API with the π the design says; the sampled answers first in the
reviewers' queue, which a reviewer cannot tell; the design's estimate equal to
evaluation.sampling_design's on the sample's gold, provisional while answers wait; the gold
export carrying π.

The world: the demo project with its reviewers' labels (40 of its 60 answers labelled), and a
judge run of the demo's verdicts with a confidence on every claim verdict."""

from __future__ import annotations

import io
import json
import re

import jsonschema
import numpy as np
import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotate.common import computed
from annotate.gold.exports import gold_rows
from annotate.imports.gold_import import import_gold
from annotate.imports.label_import import import_labels
from annotate.members.services import add_member
from annotate.models import Answer, Assignment, Role
from annotate.queue.services import next_task
from evaluation import sampling_design
from evaluation.judges.runs import import_judge_run
from evaluation.judges.samples import design_estimates, designs_of, draw_sample, frame_of
from evaluation.models import CalibrationDesign, CalibrationSample, Verdict
from tests.api import API, token_client
from tests.conftest import FIXTURES, PASSWORD, labelled_demo

UNSUPPORTED = ("contradicted", "insufficient_evidence", "unsupported")


def confident_run_lines(name: str = "confident") -> list[bytes]:
    """The demo's judge run with a confidence on each claim verdict: sure where the judge is
    (0.05 / 0.95), unsure (0.45 / 0.6) on every third line, so active sampling has something
    to prefer."""
    lines = []
    for number, raw in enumerate((FIXTURES / "demo_judge_run.jsonl").read_bytes().splitlines()):
        obj = json.loads(raw)
        if obj["type"] == "run":
            obj["judge"] = name
        elif "claim_index" in obj and obj.get("label"):
            unsure = number % 3 == 0
            if obj["label"] in UNSUPPORTED:
                obj["confidence"] = 0.6 if unsure else 0.95
            else:
                obj["confidence"] = 0.45 if unsure else 0.05
        lines.append(json.dumps(obj).encode() + b"\n")
    return lines


@pytest.fixture
def world(db, lead):
    project = labelled_demo(leads=(lead.username,), password=PASSWORD)
    run = import_judge_run(lines=confident_run_lines(), project=project).run
    return project, run


def label_lines(answers: list[Answer], reviewer: str) -> list[bytes]:
    """A reviewer's label set for each answer: every claim insufficient evidence (no evidence
    needed), so gold says unsupported once two reviewers have labelled it."""
    lines = []
    for answer in answers:
        claims = [
            {
                "index": claim.ordinal,
                "support": "insufficient_evidence",
                "severity": "minor",
                "requires_evidence": True,
                "evidence_ids": [],
                "evidence_quote": "",
                "citations": {
                    c.cited_id: "does_not_support"
                    for c in claim.citations.all()
                    if c.passage_id is not None
                },
                "note": "",
            }
            for claim in answer.claims.order_by("ordinal").prefetch_related("citations")
        ]
        line = {
            "answer_id": answer.answer_id,
            "reviewer": reviewer,
            "relevance": 1,
            "abstention": "appropriate" if answer.abstained else None,
            "failure_labels": [],
            "note": "",
            "claims": claims,
        }
        lines.append(json.dumps(line).encode() + b"\n")
    return lines


def sampled_answers(design: CalibrationDesign) -> list[Answer]:
    pks = CalibrationSample.objects.filter(design=design).values_list("answer_id", flat=True)
    return list(Answer.objects.filter(pk__in=pks).order_by("pk"))


# --- Drawing: the frame and π ---------------------------------------------------------------


def test_the_frame_is_the_judged_answers_nobody_labelled_and_uniform_pi_is_b_over_n(world):
    project, run = world
    labelled = set(
        Assignment.objects.filter(project=project, status="submitted").values_list(
            "answer_id", flat=True
        )
    )
    judged = set(
        Verdict.objects.filter(run=run, status="ok", claim__isnull=False).values_list(
            "answer_id", flat=True
        )
    )
    frame = frame_of(run)
    assert frame.answers == sorted(judged - labelled)
    assert len(frame.answers) == 20  # the demo's 60 answers, 40 of them labelled

    design = draw_sample(run=run, budget=8, design="uniform", seed=11)
    rows = list(CalibrationSample.objects.filter(design=design).values_list("answer_id", "pi"))
    assert {pi for _, pi in rows} == {8 / 20}
    assert (design.pi_min, design.pi_max, design.frame_answers) == (0.4, 0.4, 20)
    assert design.frame_claims == frame.claims
    assert design.frame_judge_unsupported == frame.judge_unsupported
    # The draw is sampling_design's Poisson draw with the stored seed, over the frame in order.
    mask = sampling_design.draw_sample(np.full(20, 0.4), seed=11)
    assert sorted(a for a, _ in rows) == [a for a, m in zip(frame.answers, mask, strict=True) if m]


def test_active_pi_follows_the_judge_s_uncertainty_as_sampling_design_computes_it(world):
    _, run = world
    frame = frame_of(run)
    design = draw_sample(run=run, budget=6, design="active", seed=3)
    assert design.kind == "active" and not design.fallback
    expected = sampling_design.inclusion_probabilities(
        design="active", budget=6, frame=frame.confidences
    ).pi
    pi = dict(CalibrationSample.objects.filter(design=design).values_list("answer_id", "pi"))
    by_answer = dict(zip(frame.answers, expected, strict=True))
    assert pi and all(value == pytest.approx(by_answer[a], abs=1e-12) for a, value in pi.items())
    assert (design.pi_min, design.pi_max) == (pytest.approx(expected.min()), expected.max())
    # Unsure answers are drawn more often: the highest π belongs to one with an unsure claim.
    unsure = {
        a
        for a, ps in zip(frame.answers, frame.confidences, strict=True)
        if any(0.3 < p < 0.7 for p in ps)
    }
    assert max(by_answer, key=by_answer.get) in unsure
    assert expected.min() >= 0.1 * 6 / 20 - 1e-12


def test_active_without_confidences_is_uniform_and_says_why(db, lead):
    project = labelled_demo(leads=(lead.username,))
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        run = import_judge_run(lines=stream, project=project).run
    design = draw_sample(run=run, budget=5, design="active", seed=1)
    assert (design.requested, design.kind) == ("active", "uniform")
    assert "have no confidence" in design.fallback
    assert set(CalibrationSample.objects.filter(design=design).values_list("pi", flat=True)) <= {
        5 / 20
    }


# --- The command ------------------------------------------------------------------------------


def test_the_command_prints_the_design_as_spec_says_and_refuses_bad_input(world):
    project, run = world
    out = io.StringIO()
    call_command(
        "sample_for_calibration",
        "--project=demo",
        f"--judge={run.name}",
        "--answers=10",
        "--seed=5",
        "--json",
        stdout=out,
    )
    printed = json.loads(out.getvalue())
    design = CalibrationDesign.objects.get()
    assert (printed["design"], printed["frame"], printed["expected"]) == (design.pk, 20, 10.0)
    stored = dict(
        CalibrationSample.objects.filter(design=design).values_list("answer__answer_id", "pi")
    )
    assert {row["answer_id"]: row["pi"] for row in printed["sampled"]} == stored
    assert all(row["pi"] == 0.5 for row in printed["sampled"])

    text = io.StringIO()
    call_command(
        "sample_for_calibration",
        "--project=demo",
        f"--judge={run.name}",
        "--answers=4",
        stdout=text,
    )
    assert re.search(
        r"frame 20 answers \(\d+ judged claims\), expected 4, sampled \d+", text.getvalue()
    )

    with pytest.raises(CommandError, match="exceeds the frame of 20"):
        call_command(
            "sample_for_calibration", "--project=demo", f"--judge={run.name}", "--answers=21"
        )
    with pytest.raises(CommandError, match="answers: must be a positive number"):
        call_command(
            "sample_for_calibration", "--project=demo", f"--judge={run.name}", "--answers=0"
        )
    with pytest.raises(CommandError, match="No judge run 'nope'"):
        call_command("sample_for_calibration", "--project=demo", "--judge=nope", "--answers=2")
    assert CalibrationDesign.objects.count() == 2


# --- The queue --------------------------------------------------------------------------------


def test_the_queue_serves_the_sampled_answers_first_two_reviewers_each(world):
    project, run = world
    design = draw_sample(run=run, budget=5, design="uniform", seed=2)
    sampled = {a.pk for a in sampled_answers(design)}
    assert sampled
    reviewers = [
        add_member(project=project, username=f"r{i}", role=Role.REVIEWER).user
        for i in range(2 * len(sampled))
    ]
    taken = [next_task(project=project, reviewer=r).answer_id for r in reviewers]
    assert set(taken) == sampled
    assert all(taken.count(a) == 2 for a in sampled)  # overlap 2: each twice, then full
    # Then the rest of the queue, as before.
    extra = add_member(project=project, username="after", role=Role.REVIEWER).user
    assert next_task(project=project, reviewer=extra).answer_id not in sampled


def test_a_reviewer_cannot_tell_a_sampled_answer_from_another(world, client):
    """The task page and the API's task carry the same fields for a sampled answer as for any
    other: nothing names the sample, its design or π, and the queue key is never shown."""
    project, run = world
    design = draw_sample(run=run, budget=3, design="uniform", seed=9)
    sampled = sampled_answers(design)
    alice = project.memberships.get(user__username="alice").user
    task = next_task(project=project, reviewer=alice)
    assert task.answer_id in {a.pk for a in sampled}
    answer = Answer.objects.get(pk=task.answer_id)
    client.login(username="alice", password=PASSWORD)
    page = client.get(reverse("task", args=[project.slug, answer.task_number])).content.decode()
    api = token_client(alice).get(f"{API}/projects/demo/tasks/{answer.task_number}/").json()
    # An answer nobody sampled, served to another reviewer once the sampled ones are full.
    sampled_api = json.dumps(api)
    for word in ("calibration", "sample", "design", "π", "pi", str(answer.queue_key)):
        assert not re.search(rf"\b{re.escape(word)}\b", sampled_api, re.IGNORECASE), word
    for word in ("calibration", "Calibration", "inclusion probabilit", str(answer.queue_key)):
        assert word not in page
    CalibrationSample.objects.all().delete()  # the same answer, drawn by no sample
    Answer.objects.filter(pk=answer.pk).update(queue_key=answer.queue_key + 1)
    unsampled = token_client(alice).get(f"{API}/projects/demo/tasks/{answer.task_number}/").json()
    assert unsampled.keys() == api.keys()
    assert unsampled == api


# --- The estimate -------------------------------------------------------------------------------


def _expected_estimate(design: CalibrationDesign, decided: set[int]):
    """sampling_design.design_estimate on the sample as the test computes it: every claim of
    a decided answer is gold-unsupported (label_lines), the judge's calls from its verdicts."""
    pis, residuals = [], []
    for answer_pk, pi in (
        CalibrationSample.objects.filter(design=design)
        .order_by("answer_id")
        .values_list("answer_id", "pi")
    ):
        labels = list(
            Verdict.objects.filter(
                run=design.run, answer_id=answer_pk, status="ok", claim__isnull=False
            ).values_list("label", flat=True)
        )
        pis.append(pi)
        residuals.append(
            sum(1 for _ in labels) - sum(label in UNSUPPORTED for label in labels)
            if answer_pk in decided
            else None
        )
    return sampling_design.design_estimate(
        frame_claims=design.frame_claims,
        frame_judge_unsupported=design.frame_judge_unsupported,
        sampled_pi=pis,
        sampled_residuals=residuals,
    )


def test_the_estimate_is_sampling_design_s_and_provisional_while_answers_wait(world):
    project, run = world
    design = draw_sample(run=run, budget=8, design="active", seed=4)
    sampled = sampled_answers(design)
    assert len(sampled) >= 3

    [report] = design_estimates(designs_of(run))
    assert (report.sampled, report.decided, report.waiting) == (len(sampled), 0, len(sampled))
    assert report.estimate.provisional
    # Nothing labelled yet: the judge's own share of the frame.
    assert report.estimate.share.estimate == pytest.approx(
        design.frame_judge_unsupported / design.frame_claims
    )

    # Both reviewers label all but the last sampled answer; alice alone labels the last.
    done, last = sampled[:-1], sampled[-1]
    import_labels(lines=label_lines(done, "alice") + label_lines(done, "bob"), project=project)
    import_labels(lines=label_lines([last], "alice"), project=project)
    [report] = design_estimates(designs_of(run))
    assert (report.decided, report.waiting) == (len(done), 1)
    expected = _expected_estimate(design, {a.pk for a in done})
    assert report.estimate.provisional and "1 sampled answer still waits" in (
        report.estimate.provisional_reason
    )
    assert report.estimate.share == expected.share
    assert report.estimate.variance == pytest.approx(expected.variance, abs=1e-15)

    # The last one's second reviewer: the sample is adjudicated, nothing is provisional.
    import_labels(lines=label_lines([last], "bob"), project=project)
    [report] = design_estimates(designs_of(run))
    expected = _expected_estimate(design, {a.pk for a in sampled})
    assert (report.decided, report.waiting, report.estimate.provisional) == (len(sampled), 0, False)
    assert report.estimate.share == expected.share
    assert report.estimate.share.estimate > design.frame_judge_unsupported / design.frame_claims

    out = io.StringIO()
    call_command(
        "calibration",
        "--project=demo",
        f"--judge={run.name}",
        f"--design={design.pk}",
        "--json",
        stdout=out,
    )
    block = json.loads(out.getvalue())["design"]
    assert block["id"] == design.pk and block["kind"] == "active"
    assert block["frame_claims"] == design.frame_claims
    assert block["answers_sampled"] == len(sampled) and block["provisional"] is False
    assert block["estimate"] == pytest.approx(expected.share.estimate)
    assert block["ci95"] == pytest.approx(list(expected.share.ci95))
    with pytest.raises(CommandError, match="No calibration sample 999999"):
        call_command("calibration", "--project=demo", f"--judge={run.name}", "--design=999999")


def test_imported_gold_decides_a_sampled_answer_too(world):
    project, run = world
    design = draw_sample(run=run, budget=4, design="uniform", seed=8)
    sampled = sampled_answers(design)
    from tests.conftest import gold_for_every_answer

    ids = {a.answer_id for a in sampled}
    lines = [
        line for line in gold_for_every_answer(project) if json.loads(line)["answer_id"] in ids
    ]
    import_gold(lines=lines, project=project, source="elsewhere", file_name="g.jsonl")
    [report] = design_estimates(designs_of(run))
    assert (report.decided, report.waiting) == (len(sampled), 0)
    assert report.estimate.share == _expected_estimate(design, {a.pk for a in sampled}).share


# --- The gold export ------------------------------------------------------------------------------


def test_the_gold_export_carries_pi_on_the_sampled_answers_rows_only(world):
    project, run = world
    design = draw_sample(run=run, budget=6, design="active", seed=4)
    sampled = sampled_answers(design)
    import_labels(
        lines=label_lines(sampled, "alice") + label_lines(sampled, "bob"), project=project
    )
    pi = dict(
        CalibrationSample.objects.filter(design=design).values_list("answer__answer_id", "pi")
    )
    rows = list(gold_rows(project))
    marked = [r for r in rows if "calibration" in r]
    assert {r["answer_id"] for r in marked} == set(pi)
    assert {r["item"] for r in marked} == {"claim", "answer"}
    for row in marked:
        [entry] = row["calibration"]
        assert entry == {
            "design": design.pk,
            "judge": run.name,
            "kind": "active",
            "pi": pi[row["answer_id"]],
            "expected": 6.0,
            "frame_answers": 20,
            "seed": 4,
        }
        assert json.loads(row.line)["calibration"] == [entry]
        schema = json.loads((FIXTURES.parent / "docs" / "gold-export.schema.json").read_text())
        jsonschema.Draft202012Validator(schema).validate(json.loads(row.line))
    # Without the sample, the same rows but for the field: the others' hashes do not move.
    CalibrationSample.objects.all().delete()
    plain = {(r["item"], r["answer_id"], r.get("claim_index")): r for r in gold_rows(project)}
    for row in rows:
        other = plain[(row["item"], row["answer_id"], row.get("claim_index"))]
        if "calibration" in row:
            assert {k: v for k, v in row.items() if k not in ("calibration", "content_hash")} == {
                k: v for k, v in other.items() if k != "content_hash"
            }
        else:
            assert row["content_hash"] == other["content_hash"]


# --- The API ------------------------------------------------------------------------------------


def test_the_api_draws_lists_and_refuses_with_field_paths(world, lead):
    project, run = world
    client = token_client(lead)
    url = f"{API}/projects/demo/judge-runs/{run.pk}/samples/"
    created = client.post(url, {"answers": 5, "design": "uniform", "seed": 7}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    design = CalibrationDesign.objects.get()
    assert (body["id"], body["kind"], body["seed"], body["frame_answers"]) == (
        design.pk,
        "uniform",
        7,
        20,
    )
    assert body["created_by"] == lead.username
    assert {row["pi"] for row in body["sampled"]} == {0.25}
    assert body["provisional"] is True and body["waiting"] == len(body["sampled"])
    listed = client.get(url).json()
    assert [d["id"] for d in listed] == [design.pk]
    detail = client.get(f"{url}{design.pk}/").json()
    assert detail["sampled"] == body["sampled"]
    assert client.get(f"{url}999999/").status_code == 404

    bad = client.post(url, {"answers": -1, "design": "greedy", "seed": "x"}, format="json")
    assert bad.status_code == 400
    assert set(bad.json()) == {"answers", "design", "seed"}
    too_many = client.post(url, {"answers": 50}, format="json")
    assert too_many.status_code == 400
    assert "exceeds the frame of 20" in too_many.json()["answers"][0]
    assert CalibrationDesign.objects.count() == 1
    # Reviewers may not.
    alice = project.memberships.get(user__username="alice").user
    assert token_client(alice).post(url, {"answers": 2}, format="json").status_code == 403
    assert token_client(alice).get(url).status_code == 403


# --- The page -------------------------------------------------------------------------------------


def _cell(page: str, design_pk: int, field: str) -> str:
    row = re.search(rf'<tr id="sample-{design_pk}">(.*?)</tr>', page, re.S).group(1)
    cell = re.search(rf'data-field="{field}">(.*?)</td>', row, re.S).group(1)
    return re.sub(r"<[^>]+>", "", cell).strip()


def test_the_run_page_draws_a_sample_and_shows_its_design_and_estimate(world, client, lead):
    project, run = world
    client.login(username=lead.username, password=PASSWORD)
    page_url = reverse("judge_run", kwargs={"slug": "demo", "run_pk": run.pk})
    computed.refresh(project_id=project.pk, kind="calibration", key=f"{run.pk}:judge_test")
    assert 'id="no-samples"' in client.get(page_url).content.decode()
    post = reverse("judge_run_sample", kwargs={"slug": "demo", "run_pk": run.pk})
    answer = client.post(post, {"answers": "6", "design": "active", "seed": "4"}, follow=True)
    design = CalibrationDesign.objects.get()
    page = answer.content.decode()
    assert f"Calibration sample {design.pk} of judge" in page  # the notice
    sampled = sampled_answers(design)
    assert _cell(page, design.pk, "frame") == "20"
    assert _cell(page, design.pk, "sampled") == str(len(sampled))
    assert _cell(page, design.pk, "seed") == "4"
    assert _cell(page, design.pk, "waiting") == str(len(sampled))
    assert "provisional" in _cell(page, design.pk, "estimate")

    import_labels(
        lines=label_lines(sampled, "alice") + label_lines(sampled, "bob"), project=project
    )
    page = client.get(page_url).content.decode()
    expected = _expected_estimate(design, {a.pk for a in sampled})
    assert _cell(page, design.pk, "decided") == str(len(sampled))
    assert _cell(page, design.pk, "waiting") == "0"
    shown = _cell(page, design.pk, "estimate").split()
    assert shown[0] == f"{expected.share.estimate:.3f}"
    assert ("clipped" in shown) == expected.share.clipped  # an interval past 1 says so
    assert "provisional" not in shown
    low, high = expected.share.ci95
    assert _cell(page, design.pk, "ci95") == f"{low:.3f} – {high:.3f}"
    lo, hi = design.pi_min, design.pi_max
    assert _cell(page, design.pk, "pi") == f"{lo:.4f} – {hi:.4f}"

    refused = client.post(post, {"answers": "0", "design": "uniform"}, follow=True).content.decode()
    assert "answers: Draw at least some answers" in refused
    refused = client.post(
        post, {"answers": "99", "design": "uniform"}, follow=True
    ).content.decode()
    # The frame shrank by the answers just labelled.
    assert f"exceeds the frame of {20 - len(sampled)} unlabelled answers" in refused
    assert CalibrationDesign.objects.count() == 1
    alice = client.login(username="alice", password=PASSWORD)
    assert alice
    # A reviewer is not shown the lead's pages at all (project_view: 404, as for any of them).
    assert client.post(post, {"answers": "2"}).status_code == 404
    assert CalibrationDesign.objects.count() == 1


# --- The judge-run file's confidence ----------------------------------------------------------


def test_a_confidence_outside_0_1_or_on_an_answer_verdict_is_an_error_by_line_and_field(world):
    from annotate.imports.lines import BundleInvalid

    project, _ = world
    lines = confident_run_lines("bad")
    objs = [json.loads(line) for line in lines]
    claim_lines = [i for i, o in enumerate(objs) if "claim_index" in o]
    answer_lines = [
        i for i, o in enumerate(objs) if o["type"] == "verdict" and "claim_index" not in o
    ]
    objs[claim_lines[0]]["confidence"] = 1.5
    objs[claim_lines[1]]["confidence"] = "high"
    objs[answer_lines[0]]["confidence"] = 0.5
    with pytest.raises(BundleInvalid) as refused:
        import_judge_run(lines=[json.dumps(o).encode() + b"\n" for o in objs], project=project)
    messages = [str(e) for e in refused.value.errors]
    assert f"line {claim_lines[0] + 1}: confidence: must lie in [0, 1]" in "\n".join(messages)
    assert f"line {claim_lines[1] + 1}: confidence: must be a number, got a string" in "\n".join(
        messages
    ) or f"line {claim_lines[1] + 1}: confidence: must be a number" in "\n".join(messages)
    assert f"line {answer_lines[0] + 1}: confidence: it is the probability" in "\n".join(messages)
    assert len(messages) == 3


def test_confidences_are_stored_with_the_verdicts(world):
    _, run = world
    stored = list(
        Verdict.objects.filter(run=run, claim__isnull=False, status="ok").values_list(
            "label", "confidence"
        )
    )
    assert stored and all(c is not None for _, c in stored)
    assert all((c > 0.5) == (label in UNSUPPORTED) for label, c in stored)
    assert not Verdict.objects.filter(
        run=run, claim__isnull=True, confidence__isnull=False
    ).exists()


def test_the_run_page_s_samples_cost_the_same_queries_however_many(
    world, client, lead, django_assert_num_queries
):
    """The samples' estimates are computed on the page from their gold, for all of them at
    once: one sample or three, the same queries (the designs, their answers, their verdicts,
    their gold)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    project, run = world
    computed.refresh(project_id=project.pk, kind="calibration", key=f"{run.pk}:judge_test")
    client.login(username=lead.username, password=PASSWORD)
    url = reverse("judge_run", kwargs={"slug": "demo", "run_pk": run.pk})
    client.get(url)
    with CaptureQueriesContext(connection) as none:
        client.get(url)
    without_samples = len(none)  # counted now: the next request clears the query log
    draw_sample(run=run, budget=4, design="uniform", seed=1)
    client.get(url)
    with CaptureQueriesContext(connection) as one:
        client.get(url)
    with_one = len(one)
    draw_sample(run=run, budget=4, design="active", seed=2)
    draw_sample(run=run, budget=6, design="uniform", seed=3)
    client.get(url)  # the budget planner's plan names the newest sample: computed once
    with django_assert_num_queries(with_one):
        page = client.get(url).content.decode()
    assert page.count('<tr id="sample-') == 3
    # With samples: their answers, verdicts and gold (pairs: 3, imported: 1) on top of the
    # designs' query, which is all a run without samples pays.
    assert with_one - without_samples == 6


def test_drawing_a_sample_changes_the_gold_export_id_and_moves_the_revision(world):
    """A gold export of unchanged labels is reused (annotate.gold.exports.start_gold_export,
    by the export id): drawing a sample adds π to rows already gold, so the id must change,
    and reports that read the designs must be stale."""
    from annotate.common import computed
    from annotate.gold.exports import gold_fingerprint

    project, run = world
    export_id, _ = gold_fingerprint(project)
    revision = computed.revisions(project)[0]
    draw_sample(run=run, budget=6, design="uniform", seed=2)
    assert gold_fingerprint(project)[0] != export_id
    assert computed.revisions(project)[0] == revision + 1
    again = gold_fingerprint(project)[0]
    assert gold_fingerprint(project)[0] == again  # and it derives from the data alone
