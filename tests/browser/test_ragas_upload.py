"""The New project page in a real browser: the variant and label schema fields appear only
when the file is a Ragas dataset, and a Ragas CSV becomes a project the uploader leads, with
the schema given."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotate.models import Membership, Project, Role
from tests.conftest import FIXTURES, login, may_create_projects

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_ragas_csv_uploads_with_its_variant_into_a_new_project(page, outsider):
    may_create_projects(outsider)
    login(page, outsider)
    page.goto("/projects/new/")
    variant = page.get_by_label("Variant")
    schema = page.get_by_label("Label schema")
    expect(variant).to_be_hidden()
    expect(schema).to_be_hidden()  # a bundle gives its schema in its header

    page.get_by_label("Ragas evaluation dataset (JSONL or CSV)").check()
    expect(variant).to_be_visible()
    expect(schema).to_be_visible()
    page.get_by_label("Slug").fill("ragas-sample")
    variant.fill("baseline")
    schema.fill('{"support": "binary", "claim_fields": [], "answer_fields": []}')
    page.get_by_label("File", exact=True).set_input_files(FIXTURES / "ragas" / "baseline.csv")
    page.get_by_role("button", name="Create project").click()

    expect(page).to_have_url("/p/ragas-sample/setup/")
    project = Project.objects.get(slug="ragas-sample")
    assert Membership.objects.get(project=project, user=outsider).role == Role.LEAD
    assert project.answers.filter(variant__name="baseline").count() == 4
    assert project.schema.binary and not project.schema.claim_fields
