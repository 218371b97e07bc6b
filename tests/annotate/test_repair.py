"""Issue #15, point 2: a project can always be repaired. A bad latency, cost or retrieval score
in an answer reviewers have labelled is corrected by a `replace` re-import: those fields are not
on the labelling screen, so the labels stay, and what changed is recorded. Anything reviewers
saw (text, claims, passages, abstained) still cannot change under their labels. And whatever
export_bundle writes imports again, into the project itself or into a new one."""

from __future__ import annotations

import io
import json
import math

import pytest
from django.core.management import call_command

from annotate.imports.bundle_export import bundle_rows
from annotate.imports.bundle_import import import_bundle
from annotate.imports.lines import BundleInvalid
from annotate.imports.records import content_hash
from annotate.models import (
    Answer,
    AnswerCorrection,
    Assignment,
    ClaimLabel,
    LabelRevision,
    RetrievedPassage,
)
from evaluation.reports.evaluation import evaluate
from tests import api as shared

demo = shared.demo  # fixture: the demo project, open, every answer labelled by two reviewers
pytestmark = pytest.mark.django_db


def exported(project) -> list[dict]:
    return list(bundle_rows(project))


def lines(rows) -> list[str]:
    return [json.dumps(row) for row in rows]


def labels_state():
    return (
        sorted(Assignment.objects.values_list("pk", "status", "revision", "relevance")),
        sorted(ClaimLabel.objects.values_list("pk", "support", "severity")),
        LabelRevision.objects.count(),
    )


def edit_answer(rows, answer_id, **fields):
    out = []
    for row in rows:
        if row.get("answer_id") == answer_id:
            row = {**row, **fields}
        out.append(row)
    return out


def labelled_answer(project) -> Answer:
    return (
        Answer.objects.filter(project=project, assignments__isnull=False, retrieved__isnull=False)
        .distinct()
        .order_by("answer_id")
        .first()
    )


def test_an_export_reimports_into_its_own_project_as_nothing_changed(demo):
    # Answers imported without claims are exported with the claims the app proposed: their
    # hash differs, their content does not.
    before = labels_state()
    result = import_bundle(lines=lines(exported(demo)), project_slug="demo")
    counts = {kind: +c for kind, c in result.counts.items() if kind != "claim"}  # +: no zeros
    assert counts == {
        kind: {"unchanged": n}
        for kind, n in (
            ("variant", 2),
            ("passage", demo.passages.count()),
            ("case", demo.cases.count()),
            ("answer", demo.answers.count()),
            ("judgment", result.counts["judgment"]["unchanged"]),
        )
    }
    assert labels_state() == before


def test_replace_corrects_latency_cost_and_scores_of_a_labelled_answer_and_keeps_labels(demo):
    answer = labelled_answer(demo)
    first = answer.retrieved.order_by("rank").first()
    rows = exported(demo)
    row = next(r for r in rows if r.get("answer_id") == answer.answer_id)
    retrieved = [dict(r) for r in row["retrieved"]]
    retrieved[0]["score"] = 0.25
    rows = edit_answer(
        rows, answer.answer_id, elapsed_ms=1234.5, request_cost=0.5, retrieved=retrieved
    )
    before = labels_state()
    scores = dict(RetrievedPassage.objects.values_list("pk", "score"))

    result = import_bundle(lines=lines(rows), project_slug="demo", replace=True)

    assert result.counts["answer"]["corrected"] == 1
    assert result.counts["answer"]["unchanged"] == demo.answers.count() - 1
    answer.refresh_from_db()
    assert (answer.elapsed_ms, answer.request_cost) == (1234.5, 0.5)
    assert dict(RetrievedPassage.objects.values_list("pk", "score")) == {
        **scores,
        first.pk: 0.25,  # that one passage of that one answer, no other
    }
    assert labels_state() == before  # the labels, their revisions and the task are kept
    correction = AnswerCorrection.objects.get()
    assert correction.answer == answer and correction.labelled
    assert correction.changes == {
        "elapsed_ms": {"old": row["elapsed_ms"], "new": 1234.5},
        "request_cost": {"old": row["request_cost"], "new": 0.5},
        f"retrieved[rank {first.rank}].score": {"old": row["retrieved"][0]["score"], "new": 0.25},
    }
    # importing the corrected file again changes nothing more
    again = import_bundle(lines=lines(rows), project_slug="demo", replace=True)
    assert again.counts["answer"]["corrected"] == 0 and AnswerCorrection.objects.count() == 1


def test_without_replace_a_correction_is_an_error_naming_the_fields(demo):
    answer = labelled_answer(demo)
    rows = edit_answer(exported(demo), answer.answer_id, elapsed_ms=1.0)
    with pytest.raises(BundleInvalid) as caught:
        import_bundle(lines=lines(rows), project_slug="demo")
    (error,) = caught.value.errors
    assert f"answer '{answer.answer_id}' already exists in this project with different " in str(
        error
    )
    assert "(elapsed_ms)" in str(error) and not AnswerCorrection.objects.exists()


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda row: {"text": row["text"] + " More."}, "text"),
        (lambda row: {"abstained": not row["abstained"]}, "abstained"),
        (lambda row: {"claims": row["claims"][:-1]}, "claims"),
        (
            lambda row: {
                "retrieved": [{**r, "in_prompt": not r["in_prompt"]} for r in row["retrieved"]]
            },
            "retrieved",
        ),
    ],
)
def test_what_reviewers_saw_still_cannot_change_under_their_labels(demo, change, field):
    answer = labelled_answer(demo)
    rows = exported(demo)
    row = next(r for r in rows if r.get("answer_id") == answer.answer_id)
    rows = edit_answer(rows, answer.answer_id, elapsed_ms=9.0, **change(row))
    before = labels_state()
    with pytest.raises(BundleInvalid) as caught:
        import_bundle(lines=lines(rows), project_slug="demo", replace=True)
    (error,) = caught.value.errors
    assert f"({field}) but labelling has used it; labelled items are never replaced" in str(error)
    assert labels_state() == before and not AnswerCorrection.objects.exists()
    answer.refresh_from_db()
    assert answer.elapsed_ms == row["elapsed_ms"]


def test_the_command_says_what_it_corrected(demo, tmp_path):
    answer = labelled_answer(demo)
    path = tmp_path / "fixed.jsonl"
    path.write_text("\n".join(lines(edit_answer(exported(demo), answer.answer_id, elapsed_ms=7))))
    out = io.StringIO()
    call_command("import_bundle", str(path), "--project", "demo", "--replace", stdout=out)
    assert "answers: 1 corrected" in out.getvalue()
    assert f"Corrected answer '{answer.answer_id}': elapsed_ms " in out.getvalue()
    assert "→ 7 (labelled: its labels are kept)" in out.getvalue()


@pytest.mark.postgres  # SQLite stores NaN as NULL; PostgreSQL's float8 keeps it
def test_a_project_broken_by_a_nan_from_before_is_repaired_by_a_replace_reimport(demo):
    # How the project of issue #15 looked: an elapsed_ms of NaN imported before imports
    # refused it (its content hash computed from a row holding NaN), and labelled since.
    answer = labelled_answer(demo)
    good = next(r for r in exported(demo) if r.get("answer_id") == answer.answer_id)
    Answer.objects.filter(pk=answer.pk).update(
        elapsed_ms=float("nan"), content_hash=content_hash({**good, "elapsed_ms": float("nan")})
    )
    with pytest.raises(ValueError, match="finite"):
        evaluate(demo)  # the evaluation page's 500
    broken = next(r for r in exported(demo) if r.get("answer_id") == answer.answer_id)
    assert math.isnan(broken["elapsed_ms"])  # export_bundle would write NaN: not JSON

    # The lead's fix: the answer's line with the figure it should have had, imported with
    # replace. Before, this was refused ("labelled items are never replaced").
    before = labels_state()
    result = import_bundle(
        lines=lines([exported(demo)[0], good]), project_slug="demo", replace=True
    )

    assert result.counts["answer"]["corrected"] == 1 and labels_state() == before
    assert AnswerCorrection.objects.get().changes == {
        "elapsed_ms": {"old": "NaN", "new": good["elapsed_ms"]}
    }
    assert evaluate(demo)["variants"]  # the evaluation page works again
    rows = exported(demo)
    copy = import_bundle(lines=lines(rows), project_slug="copy").project
    assert exported(copy)[1:] == rows[1:]


def test_an_export_imports_into_a_new_project_and_exports_identically(demo):
    rows = exported(demo)
    copy = import_bundle(lines=lines(rows), project_slug="copy").project
    assert exported(copy) == rows


def test_claims_the_app_proposed_reimport_as_unchanged(small_project):
    # a2-deadline/verifier came without claims; its export carries the proposed ones. Before,
    # re-importing the export into its own project was refused as "different content".
    rows = exported(small_project)
    assert "claims" in next(r for r in rows if r.get("answer_id") == "a2-deadline/verifier")
    result = import_bundle(lines=lines(rows), project_slug="small")
    assert +result.counts["answer"] == {"unchanged": 4}
