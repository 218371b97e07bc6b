"""Who may do what in a project: adding people, changing roles, removing them."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from annotate.models import (
    Membership,
    Project,
    Role,
)
from annotate.services.base import ServiceError


@transaction.atomic
def add_member(
    *,
    project: Project,
    username: str,
    role: str,
    password: str | None = None,
    reset_password: bool = False,
):
    """Give a person a role in a project, creating the user when needed. A password is set
    for a new account; an existing account keeps its password unless reset_password, so
    adding someone to a second project never replaces the login they use."""
    if role not in Role.values:
        raise ServiceError(f"Unknown role '{role}': use one of {', '.join(Role.values)}.")
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username)
    if password and (created or reset_password):
        user.set_password(password)
        user.save(update_fields=["password"])
    elif created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    membership, _ = Membership.objects.update_or_create(
        project=project, user=user, defaults={"role": role}
    )
    return membership


# --- Members ---------------------------------------------------------------------------------


_LAST_LEAD = "This is the project's only lead: add another lead first (a project keeps one)."


class MemberError(ServiceError):
    """A refused membership change, with the form field it concerns (None: the whole form)."""

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.field = field


def _lead_count(project: Project) -> int:
    # Locking every lead row serialises two leads who demote or remove each other at once.
    return len(Membership.objects.select_for_update().filter(project=project, role=Role.LEAD))


@transaction.atomic
def add_project_member(
    *, project: Project, username: str, role: str, password: str | None = None
) -> Membership:
    """services.add_member for the members page and the API, with two extra rules: a password
    is set only on a new account (a lead must not be able to take over someone's existing
    login), and the project keeps at least one lead.

    The answer does not say whether the username already had an account: a lead learns
    which accounts exist only by adding them. So a password is checked against the password
    rules whether or not it will be used, an existing account silently keeps its own, and
    the password is hashed either way, so that neither the words nor the time taken tell."""
    User = get_user_model()
    if password:
        try:
            validate_password(password, User(username=username))
        except ValidationError as exc:
            raise MemberError(" ".join(exc.messages), field="password") from exc
    user = User.objects.filter(username=username).first()
    if user is not None and role != Role.LEAD:
        membership = Membership.objects.filter(project=project, user=user).first()
        if membership and membership.role == Role.LEAD and _lead_count(project) <= 1:
            raise MemberError(_LAST_LEAD, field="role")
    if user is not None and password:
        make_password(password)  # the time a new account's password takes; the hash is unused
        password = None
    return add_member(project=project, username=username, role=role, password=password)


ADDED_MEMBER = (
    "{username} is now a {role} of this project. A password given here is set only on a new "
    "account; an existing account keeps its own, and a new one without a password can log in "
    "once an administrator sets one."
)


@transaction.atomic
def change_member_role(*, membership: Membership, role: str) -> Membership:
    if role not in Role.values:
        raise ServiceError(f"Unknown role '{role}': use one of {', '.join(Role.values)}.")
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    demoted = membership.role == Role.LEAD and role != Role.LEAD
    if demoted and _lead_count(membership.project) <= 1:
        raise ServiceError(_LAST_LEAD)
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def remove_member(*, membership: Membership) -> None:
    """Remove a person from the project. Their account stays; so do any labels they already
    submitted (assignments belong to the project, not to the membership)."""
    membership = Membership.objects.select_for_update().get(pk=membership.pk)
    if membership.role == Role.LEAD and _lead_count(membership.project) <= 1:
        raise ServiceError(_LAST_LEAD)
    membership.delete()
