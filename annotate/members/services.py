"""Who may do what in a project: adding people (one, or many from a CSV), changing roles,
removing them."""

from __future__ import annotations

import csv
import io
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import Permission
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from annotate.common.errors import ServiceError
from annotate.imports.lines import BundleError, BundleInvalid
from annotate.models import Membership, Project, Role
from annotate.projects.access import may_add_anyone


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


# Said alike whether the account exists or not: the refusal must not tell which.
NOT_YOURS = (
    "You can add people who are already in a project you lead. Anyone else is added by an "
    "administrator, or by a lead given the permission to add anyone."
)


def _out_of_reach(by, usernames: Iterable[str]) -> set[str]:
    """The usernames ``by`` may not add (annotate.projects.access): those in no project they lead,
    whether the account exists or not; none for those who may add anyone."""
    usernames = set(usernames)
    if may_add_anyone(by):
        return set()
    reachable = Membership.objects.filter(
        project__in=Project.objects.led_by(by), user__username__in=usernames
    ).values_list("user__username", flat=True)
    return usernames - set(reachable)


@transaction.atomic
def allow_adding_anyone(*, user):
    """Give ``user`` the permission to add any account to the projects they lead, creating it
    when needed (annotate.projects.access.ADD_ANYONE). Returns the user read again from the
    database, which has the permission (Django caches permissions on the instance that
    checked them; fetching the user again is its documented way round)."""
    permission = Permission.objects.get(
        content_type__app_label="annotate", codename="add_membership"
    )
    user.user_permissions.add(permission)
    return get_user_model().objects.get(pk=user.pk)


def _lead_count(project: Project) -> int:
    # Locking every lead row serialises two leads who demote or remove each other at once.
    return len(Membership.objects.select_for_update().filter(project=project, role=Role.LEAD))


@transaction.atomic
def add_project_member(
    *, project: Project, username: str, role: str, by, password: str | None = None
) -> Membership:
    """services.add_member for the members page and the API, with three extra rules: ``by``
    (the lead adding) adds only people already in a project they lead, unless they may add
    anyone (annotate.projects.access: NOT_YOURS otherwise, whether the account exists or not); a
    password is set only on a new account (a lead must not be able to take over someone's
    existing login); and the project keeps at least one lead.

    The answer does not say whether the username already had an account. So a password is
    checked against the password rules whether or not it will be used, an existing account
    silently keeps its own, and the password is hashed either way, so that neither the words
    nor the time taken tell."""
    User = get_user_model()
    if password:
        try:
            validate_password(password, User(username=username))
        except ValidationError as exc:
            raise MemberError(" ".join(exc.messages), field="password") from exc
    if _out_of_reach(by, [username]):
        raise MemberError(NOT_YOURS, field="username")
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


# --- Many members at once ----------------------------------------------------------------------

MEMBER_COLUMNS = ("username", "role", "email")


@dataclass(frozen=True, slots=True)
class MemberRow:
    line: int
    username: str
    role: str
    email: str = ""


@dataclass
class MembersImportResult:
    project: Project
    created: list[str] = field(default_factory=list)  # new accounts (also in `added`)
    added: list[str] = field(default_factory=list)  # new to the project
    role_changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    # With reset_password: the passwords generated for accounts that had none, shown once.
    passwords: dict[str, str] = field(default_factory=dict)
    # Listed accounts that still have no usable password after the import.
    without_password: list[str] = field(default_factory=list)
    # Existing accounts whose email differs from the file's: an account's email is its own.
    email_kept: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{_count(self.created, 'account')} created, {len(self.added)} added to the "
            f"project, {len(self.role_changed)} role(s) changed, {len(self.unchanged)} unchanged"
        )


def _count(items, noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def parse_member_rows(lines: Iterable[bytes | str]) -> list[MemberRow]:
    """`username,role[,email]` rows of a CSV, a header row optional (recognised by its
    `username` column, and then read by name in any order). Raises BundleInvalid with every
    problem by line: an unknown role, an empty or invalid username, one named twice."""
    rows, errors = _member_rows(lines)
    if errors:
        raise BundleInvalid(errors)
    return rows


def _member_rows(lines: Iterable[bytes | str]) -> tuple[list[MemberRow], list[BundleError]]:
    errors: list[BundleError] = []
    raw = b"".join(x if isinstance(x, bytes) else x.encode("utf-8") for x in lines)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return [], [BundleError(line, f"not UTF-8 ({exc.reason})")]
    reader = csv.reader(io.StringIO(text, newline=""))
    columns: tuple[str, ...] = MEMBER_COLUMNS
    rows: list[MemberRow] = []
    first_line: dict[str, int] = {}
    seen_any = False
    try:
        for cells in reader:
            line = reader.line_num
            cells = [cell.strip() for cell in cells]
            while cells and not cells[-1]:
                cells.pop()
            if not cells:
                continue
            if not seen_any:
                seen_any = True
                if "username" in (cell.lower() for cell in cells):
                    columns = _member_header(line, cells, errors)
                    continue
            row = _member_row(line, cells, columns, errors)
            if row is None:
                continue
            if row.username in first_line:
                errors.append(
                    BundleError(
                        line,
                        f"'{row.username}' is named again (first on line "
                        f"{first_line[row.username]}): one role per person",
                    )
                )
                continue
            first_line[row.username] = line
            rows.append(row)
    except csv.Error as exc:
        errors.append(BundleError(reader.line_num, f"not readable as CSV ({exc})"))
    if not rows and not errors:
        errors.append(BundleError(0, "the file names nobody: one 'username,role[,email]' a line"))
    return rows, errors


def _member_header(line: int, cells: list[str], errors: list[BundleError]) -> tuple[str, ...]:
    names = tuple(cell.lower() for cell in cells)
    for name in names:
        if name not in MEMBER_COLUMNS:
            errors.append(
                BundleError(line, f"unknown column '{name}' (use {', '.join(MEMBER_COLUMNS)})")
            )
    if "role" not in names:
        errors.append(BundleError(line, "the header names no 'role' column"))
    for name in sorted({n for n in names if names.count(n) > 1}):
        errors.append(BundleError(line, f"column '{name}' appears twice in the header"))
    return names


_USERNAME = UnicodeUsernameValidator()


def _member_row(line, cells, columns, errors) -> MemberRow | None:
    if len(cells) > len(columns):
        errors.append(
            BundleError(
                line,
                f"{len(cells)} cells, but a line is {','.join(columns)}"
                " (a comma inside a name needs quotes)",
            )
        )
        return None
    values = dict(zip(columns, cells, strict=False))
    username, role = values.get("username", ""), values.get("role", "").lower()
    email = values.get("email", "")
    problems = []
    if not username:
        problems.append("the username is empty")
    else:
        try:
            _USERNAME(username)
            if len(username) > 150:
                raise ValidationError("too long")
        except ValidationError:
            problems.append(
                f"'{username}' is not a valid username (letters, digits and @ . + - _ only, "
                "at most 150 characters)"
            )
    if role not in Role.values:
        got = f"unknown role '{values.get('role', '')}'" if role else "no role"
        problems.append(f"{got}: use one of {', '.join(Role.values)}")
    if email:
        try:
            validate_email(email)
        except ValidationError:
            problems.append(f"'{email}' is not an email address")
    errors.extend(BundleError(line, problem) for problem in problems)
    return None if problems else MemberRow(line, username, role, email)


@transaction.atomic
def import_members(
    *,
    lines: Iterable[bytes | str],
    project: Project,
    reset_password: bool = False,
    by=None,
) -> MembersImportResult:
    """Give everyone a CSV lists their role in the project, creating accounts as needed; all
    or nothing (BundleInvalid with every problem by line). New accounts get no usable password,
    so no password is hashed per row: an administrator sets it, or `reset_password` generates
    one for each listed account that has none. A password someone has is never replaced here.
    ``by``: the lead importing from the members page, who adds only people already in a
    project they lead unless they may add anyone (add_project_member); None for the
    management command, which is the server operator's.

    A fixed number of queries whatever the number of people (plus, with reset_password, one
    save per generated password: hashing dominates that path anyway)."""
    rows, errors = _member_rows(lines)
    project = Project.objects.select_for_update().get(pk=project.pk)
    User = get_user_model()
    names = [row.username for row in rows]
    users = {u.username: u for u in User.objects.filter(username__in=names)}
    roles = {
        username: (pk, role)
        for pk, username, role in Membership.objects.filter(project=project).values_list(
            "pk", "user__username", "role"
        )
    }
    errors.extend(_demotions_leaving_no_lead(rows, roles))
    if by is not None:
        refused = _out_of_reach(by, names)
        errors.extend(
            BundleError(row.line, f"'{row.username}': {NOT_YOURS}")
            for row in rows
            if row.username in refused
        )
        errors.sort(key=lambda error: error.line)
    if errors:
        raise BundleInvalid(errors)

    result = MembersImportResult(project=project)
    new_accounts = [
        User(username=row.username, email=row.email, password=make_password(None))
        for row in rows
        if row.username not in users
    ]
    User.objects.bulk_create(new_accounts, ignore_conflicts=True)
    result.created = [user.username for user in new_accounts]
    new_names = set(result.created)
    if new_accounts:
        users.update(
            User.objects.filter(username__in=result.created).in_bulk(field_name="username")
        )

    additions, changes = [], {}
    for row in rows:
        user = users[row.username]
        if row.email and row.username not in new_names and row.email != user.email:
            result.email_kept.append(row.username)
        held = roles.get(row.username)
        if held is None:
            additions.append(Membership(project=project, user=user, role=row.role))
            result.added.append(row.username)
        elif held[1] != row.role:
            changes.setdefault(row.role, []).append(held[0])
            result.role_changed.append(row.username)
        else:
            result.unchanged.append(row.username)
    Membership.objects.bulk_create(additions)
    for role, pks in changes.items():
        Membership.objects.filter(pk__in=pks).update(role=role)

    for row in rows:
        user = users[row.username]
        if user.has_usable_password():
            continue
        if reset_password:
            password = secrets.token_urlsafe(12)
            user.set_password(password)
            user.save(update_fields=["password"])
            result.passwords[row.username] = password
        else:
            result.without_password.append(row.username)
    return result


def _demotions_leaving_no_lead(
    rows: list[MemberRow], roles: dict[str, tuple[int, str]]
) -> list[BundleError]:
    """A project keeps a lead: the lines that would demote its last one(s)."""
    leads = {name for name, (_, role) in roles.items() if role == Role.LEAD}
    listed = {row.username: row.role for row in rows}
    if not leads or any(role == Role.LEAD for role in listed.values()):
        return []
    if any(name not in listed for name in leads):
        return []
    return [
        BundleError(
            row.line,
            f"'{row.username}' would no longer lead, and the project would have no lead: "
            "keep one lead (a project keeps one)",
        )
        for row in rows
        if row.username in leads
    ]
