"""CLAIMDESK_OIDC_ROLES: read, checked with every problem named by its path, and the roles a
person's claims grant (sso.mapping). No database."""

from __future__ import annotations

import json

import pytest

from annotate.models import Role
from sso.mapping import ROLES, MappingInvalid, RoleMapping, parse_role_mapping

MAPPING = {
    "claim": "groups",
    "map": {
        "eval-leads": {"demo": "lead"},
        "eval-reviewers": {"demo": "reviewer", "small": "reviewer"},
    },
}


def parse(data) -> RoleMapping:
    return parse_role_mapping(json.dumps(data))


def problems(data) -> list[str]:
    with pytest.raises(MappingInvalid) as caught:
        parse_role_mapping(data if isinstance(data, str) else json.dumps(data))
    return caught.value.problems


def test_the_roles_are_the_projects_roles_lowest_first():
    assert list(ROLES) == [Role.REVIEWER, Role.LEAD]


def test_each_project_gets_the_highest_role_any_value_grants():
    mapping = parse(MAPPING)
    assert mapping.roles_for({"groups": ["eval-reviewers", "eval-leads"]}) == {
        "demo": "lead",
        "small": "reviewer",
    }
    # The order of the claim's values does not matter.
    assert mapping.roles_for({"groups": ["eval-leads", "eval-reviewers"]})["demo"] == "lead"
    assert mapping.roles_for({"groups": ["eval-reviewers"]}) == {
        "demo": "reviewer",
        "small": "reviewer",
    }


def test_values_the_mapping_does_not_name_grant_nothing():
    mapping = parse(MAPPING)
    assert mapping.roles_for({"groups": ["marketing", "eval-readers"]}) == {}
    assert mapping.roles_for({}) == {}  # no such claim
    assert mapping.roles_for({"groups": None}) == {}
    assert mapping.roles_for({"groups": [None, 3, {"x": 1}, "eval-leads"]}) == {"demo": "lead"}


def test_a_single_string_counts_as_one_value():
    assert parse(MAPPING).roles_for({"groups": "eval-leads"}) == {"demo": "lead"}


def test_the_claim_is_the_one_named():
    mapping = parse({"claim": "roles", "map": {"qa": {"demo": "reviewer"}}})
    assert mapping.roles_for({"roles": ["qa"], "groups": ["eval-leads"]}) == {"demo": "reviewer"}
    assert parse({"map": {}}).claim == "groups"  # the default


def test_the_mapping_owns_every_project_it_names_and_no_other():
    assert parse(MAPPING).owned == {"demo", "small"}
    assert parse_role_mapping("").owned == frozenset()
    assert parse_role_mapping("  \n").roles_for({"groups": ["eval-leads"]}) == {}


def test_every_problem_is_named_by_its_path():
    found = problems(
        {
            "claim": "",
            "maps": {},
            "map": {
                "eval-leads": {"demo": "admin", "bad slug!": "lead"},
                "eval-reviewers": ["demo"],
            },
        }
    )
    assert found == [
        "maps: unknown key (use claim and map)",
        "claim: the name of a claim is expected, such as groups",
        "map.eval-leads.demo: unknown role 'admin' (use reviewer or lead)",
        "map.eval-leads.bad slug!: not a project slug",
        'map.eval-reviewers: an object is expected, {"project slug": "role"}',
    ]


def test_what_is_not_a_mapping_at_all():
    assert problems("{'claim': 'groups'}")[0].startswith("not JSON (")
    assert problems([MAPPING]) == ['a JSON object is expected: {"claim": "groups", "map": {...}}']
    assert problems({"claim": "groups"}) == [
        'map: an object is expected, {"claim value": {"project slug": "role"}}'
    ]
