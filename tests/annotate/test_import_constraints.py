"""Issue #15: every database constraint an import could break is checked first and reported
with its line (or, for the command's own arguments, as a plain error): never an
IntegrityError or a DataError, and nothing written."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotate.imports.bundle_import import import_bundle
from annotate.imports.lines import BundleInvalid
from annotate.models import Answer, Project
from tests.annotate.test_import import SMALL, lines_of

pytestmark = pytest.mark.django_db

ANSWER = json.loads(SMALL[8])  # a2-deadline/baseline: case a2-deadline, variant baseline, sample 0


def counts() -> dict[str, int]:
    return {
        "projects": Project.objects.count(),
        "answers": Answer.objects.count(),
        "hashes": sorted(Answer.objects.values_list("content_hash", flat=True)),
    }


def test_a_new_answer_id_for_a_generation_the_project_holds_is_a_line_error():
    # The same (case, variant, sample) under another answer_id, the first answer being in the
    # database already: once an IntegrityError (a 500), now the line that would break it.
    import_bundle(lines=SMALL, project_slug="t")
    before = counts()
    twin = {**ANSWER, "answer_id": "a2-deadline/baseline-rerun"}
    with pytest.raises(BundleInvalid) as caught:
        import_bundle(lines=[SMALL[0], json.dumps(twin)], project_slug="t")
    assert [str(e) for e in caught.value.errors] == [
        "line 2: case 'a2-deadline', variant 'baseline', sample 0 is already answered by "
        "'a2-deadline/baseline' in this project (one generation, one answer_id): give this "
        "answer another sample number, or the answer_id 'a2-deadline/baseline'"
    ]
    assert counts() == before


def test_another_sample_number_is_a_new_generation():
    import_bundle(lines=SMALL, project_slug="t")
    rerun = {**ANSWER, "answer_id": "a2-deadline/baseline-rerun", "sample": 1}
    import_bundle(lines=[SMALL[0], json.dumps(rerun)], project_slug="t")
    assert Answer.objects.filter(case__case_id="a2-deadline", variant__name="baseline").count() == 2


def test_a_replaced_answer_frees_its_generation_for_another_id():
    # Replace moves a2-deadline/baseline to sample 1 and gives sample 0 to a new id: the
    # freed key is not held against the new answer.
    import_bundle(lines=SMALL, project_slug="t")
    moved = {**ANSWER, "sample": 1}
    newcomer = {**ANSWER, "answer_id": "a2-deadline/baseline-0"}
    import_bundle(
        lines=[SMALL[0], json.dumps(moved), json.dumps(newcomer)],
        project_slug="t",
        replace=True,
        confirm_deletions=True,
    )
    samples = dict(
        Answer.objects.filter(case__case_id="a2-deadline", variant__name="baseline").values_list(
            "answer_id", "sample"
        )
    )
    assert samples == {"a2-deadline/baseline": 1, "a2-deadline/baseline-0": 0}


@pytest.mark.parametrize(
    "slug, name, message",
    [
        ("s" * 81, None, "the project slug is longer than 80 characters"),
        ("has space", None, "the project slug may hold only letters, digits, hyphens and"),
        ("ok", "n" * 201, "the project name is longer than 200 characters"),
        ("ok", "bell\x07", "the project name: control character U+0007 at character 4"),
    ],
)
def test_a_new_projects_slug_and_name_are_checked_like_the_apis(slug, name, message):
    # The command passes them straight through: once a DataError on PostgreSQL.
    with pytest.raises(BundleInvalid) as caught:
        import_bundle(lines=SMALL, project_slug=slug, name=name)
    assert str(caught.value.errors[0]).startswith(message)
    assert counts()["projects"] == 0


def test_the_command_reports_a_bad_slug_as_an_error_and_writes_nothing(tmp_path, capsys):
    path = tmp_path / "small.jsonl"
    path.write_text("\n".join(lines_of()) + "\n")
    with pytest.raises(CommandError):
        call_command("import_bundle", str(path), "--project", "x" * 81)
    assert "the project slug is longer than 80 characters" in capsys.readouterr().err
    assert counts()["projects"] == 0


# --- What changed while the file was read -------------------------------------------------


def _during_parsing(action):
    """A progress callback that acts once the file is parsed: as a reviewer or a lead would,
    between the import's unlocked plan and its locked writes."""
    done = []

    def progress(stage, count):
        if stage == "parsed" and not done:
            done.append(action())

    return progress


def test_a_replace_refuses_when_a_reviewer_took_an_answer_it_deletes_meanwhile(
    reviewer_a, monkeypatch
):
    from annotate.common.errors import ServiceError
    from annotate.members.services import add_member
    from annotate.models import Assignment
    from annotate.projects.opening import open_labelling

    import_bundle(lines=SMALL, project_slug="t")
    project = Project.objects.get(slug="t")
    add_member(project=project, username=reviewer_a.username, role="reviewer")
    project = open_labelling(project=project)
    answer = Answer.objects.get(project=project, answer_id="a2-deadline/baseline")
    before = counts()

    from annotate.imports import bundle_import

    planned = bundle_import.plan_import

    def plan_then_take(*args, **kwargs):
        # The reviewer takes the answer right after the import has planned to replace it
        # (the plan read who holds what without locks), before its transaction begins.
        plan = planned(*args, **kwargs)
        Assignment.objects.create(project=project, answer=answer, reviewer=reviewer_a)
        return plan

    monkeypatch.setattr(bundle_import, "plan_import", plan_then_take)
    with pytest.raises(ServiceError, match="A reviewer took a2-deadline/baseline"):
        import_bundle(
            lines=[SMALL[0], json.dumps({**ANSWER, "sample": 1})],
            project_slug="t",
            replace=True,
            confirm_deletions=True,
        )
    assert counts() == before
    assert Assignment.objects.filter(answer=answer, reviewer=reviewer_a).exists()


def test_an_import_refuses_when_labelling_opened_while_it_was_read(reviewer_a):
    from annotate.common.errors import ServiceError
    from annotate.members.services import add_member
    from annotate.projects.opening import open_labelling

    import_bundle(lines=SMALL, project_slug="t")
    project = Project.objects.get(slug="t")
    add_member(project=project, username=reviewer_a.username, role="reviewer")
    before = counts()
    with pytest.raises(ServiceError, match="changed from draft to open"):
        import_bundle(
            lines=[SMALL[0], json.dumps({**ANSWER, "sample": 1})],
            project_slug="t",
            replace=True,
            confirm_deletions=True,
            progress=_during_parsing(lambda: open_labelling(project=project)),
        )
    assert counts() == before
