"""`make run` loads the demo once: the project, its people, open labelling and two reviewers'
labels, so every page has real data."""

import io

import pytest
from django.core.management import call_command

from annotate.models import Assignment, Membership, Project


@pytest.mark.django_db
def test_load_demo_loads_once_and_prints_the_logins():
    out = io.StringIO()
    call_command("load_demo", stdout=out)
    call_command("load_demo", stdout=out)
    project = Project.objects.get(slug="demo")
    assert project.state == "open" and project.guidelines
    # its labels under guidelines v1, the guidelines since at v2: the re-audit has data
    assert project.guidelines_version == 2
    versions = set(Assignment.objects.filter(project=project).values_list("guideline_version"))
    assert versions == {(1,)}
    assert project.answers.count() == 60 and project.cases.count() == 30
    assert Assignment.objects.filter(project=project, status="submitted").count() == 80
    roles = dict(Membership.objects.filter(project=project).values_list("user__username", "role"))
    assert roles == {"lead": "lead", "alice": "reviewer", "bob": "reviewer", "carol": "reviewer"}
    assert "already loaded" in out.getvalue() and "claimdesk-demo" in out.getvalue()
