"""CLAIMDESK_OIDC_ROLES: which claim of the provider gives people their roles, and how each of
its values maps to roles in projects. Pure (no Django model): config/settings.py parses and
checks it at start-up, so a mistake stops the server instead of a login.

    {"claim": "groups",
     "map": {"eval-leads": {"demo": "lead"},
             "eval-reviewers": {"demo": "reviewer", "faq-bot": "reviewer"}}}

A person's role in a project is the highest any of their claim's values grants (lead over
reviewer). The mapping owns the projects it names, and only those: at each login a person's
role in an owned project becomes the one their claim grants, or they leave it when it grants
none (sso.roles). Roles in projects the mapping does not name are left as a lead set them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

# annotate.models.Role's values, lowest first (tests/sso/test_mapping.py checks they agree).
ROLES = ("reviewer", "lead")
_SLUG = re.compile(r"^[-a-zA-Z0-9_]+\Z")  # Django's validate_slug, as Project.slug uses it
_KEYS = ("claim", "map")


@dataclass(frozen=True)
class RoleMapping:
    claim: str = "groups"
    # claim value -> {project slug: role}
    grants: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @property
    def owned(self) -> frozenset[str]:
        """The projects whose roles the mapping decides: every slug it names."""
        return frozenset(slug for projects in self.grants.values() for slug in projects)

    def roles_for(self, claims: Mapping[str, object]) -> dict[str, str]:
        """{project slug: role} that these claims grant: for each project the highest role
        any of the claim's values grants. A claim that is missing grants nothing; one that is
        a single string counts as a list of one."""
        values = claims.get(self.claim)
        if isinstance(values, str):
            values = [values]
        if not isinstance(values, list | tuple):
            return {}
        roles: dict[str, str] = {}
        for value in values:
            if not isinstance(value, str):
                continue
            for slug, role in self.grants.get(value, {}).items():
                if slug not in roles or ROLES.index(role) > ROLES.index(roles[slug]):
                    roles[slug] = role
        return roles


class MappingInvalid(ValueError):
    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def parse_role_mapping(text: str) -> RoleMapping:
    """The mapping in `text` (JSON, as above); an empty text is no mapping (nobody gets a role
    from the provider). Raises MappingInvalid with every problem, each with its path."""
    if not text.strip():
        return RoleMapping()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MappingInvalid([f"not JSON ({exc})"]) from exc
    if not isinstance(data, dict):
        raise MappingInvalid(['a JSON object is expected: {"claim": "groups", "map": {...}}'])
    problems = [
        f"{key}: unknown key (use {' and '.join(_KEYS)})" for key in data if key not in _KEYS
    ]
    claim = data.get("claim", "groups")
    if not isinstance(claim, str) or not claim:
        problems.append("claim: the name of a claim is expected, such as groups")
    grants = data.get("map")
    if not isinstance(grants, dict):
        problems.append('map: an object is expected, {"claim value": {"project slug": "role"}}')
        grants = {}
    for value, projects in grants.items():
        if not isinstance(projects, dict):
            problems.append(f'map.{value}: an object is expected, {{"project slug": "role"}}')
            continue
        for slug, role in projects.items():
            if not _SLUG.match(slug):
                problems.append(f"map.{value}.{slug}: not a project slug")
            if role not in ROLES:
                problems.append(f"map.{value}.{slug}: unknown role {role!r} (use reviewer or lead)")
    if problems:
        raise MappingInvalid(problems)
    return RoleMapping(claim=claim, grants=grants)
