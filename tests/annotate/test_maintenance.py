"""After their bulk writes commit, imports and open_labelling refresh the planner's statistics
and clear the dead rows they left (issue #12: autovacuum is off on some servers, and an
open_labelling left the answers table with 20,000 dead rows until a manual VACUUM)."""

from __future__ import annotations

import pytest
from django.db import connection

from annotate.imports.bundle_import import import_bundle
from annotate.projects.opening import open_labelling
from evaluation.judges.runs import import_judge_run
from tests.conftest import FIXTURES

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def table_stats(table: str) -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT n_dead_tup, vacuum_count, analyze_count FROM pg_stat_user_tables "
            "WHERE relname = %s",
            [table],
        )
        dead, vacuums, analyzes = cursor.fetchone()
    return {"dead": dead, "vacuums": vacuums, "analyzes": analyzes}


def all_visible(table: str) -> tuple[int, int]:
    """(pages, pages marked all-visible) as the last VACUUM left them."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT relpages, relallvisible FROM pg_class WHERE relname = %s", [table])
        return cursor.fetchone()


def test_open_labelling_vacuums_the_answers_it_rewrote_and_a_no_op_import_touches_nothing():
    answers_before = table_stats("annotate_answer")
    with open(FIXTURES / "demo.jsonl", "rb") as stream:
        project = import_bundle(lines=stream, project_slug="maint").project
    imported = table_stats("annotate_claim")
    assert imported["analyzes"] >= 1  # the tables it filled were analysed after commit
    # The new answers are vacuumed too: only a vacuum marks their pages all-visible, which the
    # open-queue count's index-only scan needs (else it reads every open answer's row).
    assert table_stats("annotate_answer")["vacuums"] == answers_before["vacuums"] + 1
    pages, visible = all_visible("annotate_answer")
    assert pages >= 1 and visible == pages
    before = table_stats("annotate_answer")
    open_labelling(project=project)
    after = table_stats("annotate_answer")
    assert after["vacuums"] == before["vacuums"] + 1
    assert after["dead"] == 0
    # the same file again writes nothing, so nothing is analysed either
    with open(FIXTURES / "demo.jsonl", "rb") as stream:
        again = import_bundle(lines=stream, project_slug="maint")
    assert again.counts["answer"]["unchanged"] == 60
    assert table_stats("annotate_claim")["analyzes"] == imported["analyzes"]


def test_a_judge_run_import_analyses_the_verdicts_it_wrote():
    with open(FIXTURES / "demo.jsonl", "rb") as stream:
        project = import_bundle(lines=stream, project_slug="maint").project
    before = table_stats("evaluation_verdict")
    with open(FIXTURES / "demo_judge_run.jsonl", "rb") as stream:
        run = import_judge_run(lines=stream, project=project).run
    assert run.verdicts.count() > 0
    assert table_stats("evaluation_verdict")["analyzes"] == before["analyzes"] + 1
