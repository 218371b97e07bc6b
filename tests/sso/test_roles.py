"""sync_roles (sso.roles) on its own: what it changes, in which projects, and what it never
does. The same rules through a real provider are in test_sign_in.py."""

from __future__ import annotations

import pytest

from annotate.members.services import add_member
from annotate.models import Membership, Role
from sso.roles import sync_roles
from tests.conftest import import_fixture

pytestmark = pytest.mark.django_db


@pytest.fixture
def projects(lead):
    made = {
        slug: import_fixture(name, slug)
        for slug, name in (("demo", "demo.jsonl"), ("small", "small.jsonl"))
    }
    for project in made.values():
        add_member(project=project, username=lead.username, role=Role.LEAD)
    return made


def roles(user) -> dict[str, str]:
    return dict(Membership.objects.filter(user=user).values_list("project__slug", "role"))


def test_roles_are_added_changed_and_removed_in_owned_projects_only(projects, reviewer_a):
    add_member(project=projects["small"], username="alice", role=Role.LEAD)
    changes = sync_roles(
        user=reviewer_a, roles={"demo": "reviewer", "small": "lead"}, owned=frozenset({"demo"})
    )
    assert changes == [("demo", None, "reviewer")]
    assert roles(reviewer_a) == {"demo": "reviewer", "small": "lead"}  # small is not owned

    assert sync_roles(user=reviewer_a, roles={"demo": "lead"}, owned=frozenset({"demo"})) == [
        ("demo", "reviewer", "lead")
    ]
    assert sync_roles(user=reviewer_a, roles={}, owned=frozenset({"demo", "small"})) == [
        ("demo", "lead", None),
        ("small", "lead", None),
    ]
    assert roles(reviewer_a) == {}


def test_nothing_changes_when_the_claim_grants_what_is_held(projects, reviewer_a):
    sync_roles(user=reviewer_a, roles={"demo": "reviewer"}, owned=frozenset({"demo"}))
    assert sync_roles(user=reviewer_a, roles={"demo": "reviewer"}, owned=frozenset({"demo"})) == []


def test_slugs_that_name_no_project_are_skipped(projects, reviewer_a):
    owned = frozenset({"demo", "not-made-yet"})
    changes = sync_roles(
        user=reviewer_a, roles={"demo": "reviewer", "not-made-yet": "lead"}, owned=owned
    )
    assert changes == [("demo", None, "reviewer")]


def test_the_only_lead_of_a_project_stays_its_lead(projects, lead):
    assert sync_roles(user=lead, roles={"demo": "reviewer"}, owned=frozenset({"demo"})) == []
    assert roles(lead)["demo"] == Role.LEAD
