"""import_members: many people at once from a CSV, all or nothing with every problem by line,
in a fixed number of queries (100 reviewers in about the time of one), new accounts without
a password until one is set, and a password someone has never replaced."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotate.imports.lines import BundleInvalid
from annotate.members.services import (
    add_member,
    allow_adding_anyone,
    import_members,
    parse_member_rows,
)
from annotate.models import Membership, Role
from tests.conftest import FIXTURES, PASSWORD

User = get_user_model()


def csv_lines(text: str) -> list[bytes]:
    return [text.encode()]


def roles_of(project) -> dict[str, str]:
    return dict(project.memberships.values_list("user__username", "role"))


def errors_for(text: str, project) -> list[str]:
    with pytest.raises(BundleInvalid) as caught:
        import_members(lines=csv_lines(text), project=project)
    return [str(e) for e in caught.value.errors]


def hundred(role: str = "reviewer") -> str:
    return "username,role,email\n" + "".join(
        f"reviewer{i:03},{role},reviewer{i:03}@example.org\n" for i in range(100)
    )


@pytest.mark.django_db
def test_the_sample_file_adds_everyone_with_their_role_and_email(small_project):
    with open(FIXTURES / "members.csv", "rb") as stream:
        result = import_members(lines=stream, project=small_project)

    assert roles_of(small_project) == {
        "carol": "reviewer",
        "dana": "reviewer",
        "eli": "reviewer",
        "farah": "lead",
    }
    assert User.objects.get(username="dana").email == "dana@example.org"
    assert result.summary() == (
        "4 accounts created, 4 added to the project, 0 role(s) changed, 0 unchanged"
    )


@pytest.mark.django_db
def test_a_hundred_members_take_a_fixed_handful_of_queries_and_no_password_hashing(
    small_project, django_assert_max_num_queries, monkeypatch
):
    def no_hashing(*args, **kwargs):
        raise AssertionError("a password was hashed")

    monkeypatch.setattr("django.contrib.auth.hashers.PBKDF2PasswordHasher.encode", no_hashing)
    monkeypatch.setattr("django.contrib.auth.hashers.MD5PasswordHasher.encode", no_hashing)
    # Lock, read accounts and roles, insert accounts (two inserts on SQLite, which takes 999
    # parameters a statement), read their ids, insert memberships; and the savepoint pair.
    with django_assert_max_num_queries(9):
        result = import_members(lines=csv_lines(hundred()), project=small_project)
    assert len(result.created) == len(result.added) == 100
    assert small_project.memberships.filter(role=Role.REVIEWER).count() == 100
    assert not any(u.has_usable_password() for u in User.objects.all())

    # The same file again, now that everyone exists: still a handful, whatever the count.
    with django_assert_max_num_queries(5):
        again = import_members(lines=csv_lines(hundred()), project=small_project)
    assert len(again.unchanged) == 100 and not again.created


@pytest.mark.django_db
def test_counts_say_what_changed_for_whom(team, reviewer_a, reviewer_b, outsider):
    result = import_members(
        lines=csv_lines(
            f"{reviewer_a.username},lead\n{reviewer_b.username},reviewer\n"
            f"{outsider.username},reviewer\nnewbie,reviewer\n"
        ),
        project=team,
    )
    assert result.created == ["newbie"]
    assert result.added == [outsider.username, "newbie"]
    assert result.role_changed == [reviewer_a.username]
    assert result.unchanged == [reviewer_b.username]
    assert roles_of(team)[reviewer_a.username] == Role.LEAD


@pytest.mark.django_db
def test_the_header_is_optional_and_read_by_name_when_present():
    assert [(r.username, r.role, r.email) for r in parse_member_rows([b"gus,Reviewer\n"])] == [
        ("gus", "reviewer", "")
    ]
    rows = parse_member_rows([b"\xef\xbb\xbfemail,Username,role\r\nh@example.org,hana,lead\r\n"])
    assert [(r.username, r.role, r.email, r.line) for r in rows] == [
        ("hana", "lead", "h@example.org", 2)
    ]


@pytest.mark.django_db
def test_every_problem_is_reported_by_line_and_nobody_is_added(small_project):
    text = (
        "username,role,email\n"
        "ok,reviewer\n"
        ",reviewer\n"
        "bad name!,reviewer\n"
        "ivo,boss\n"
        "jo,\n"
        "ok,lead\n"
        "kim,reviewer,not-an-email\n"
        "lu,reviewer,lu@example.org,extra\n"
        f"{'x' * 151},reviewer\n"
    )
    assert errors_for(text, small_project) == [
        "line 3: the username is empty",
        "line 4: 'bad name!' is not a valid username (letters, digits and @ . + - _ only, at "
        "most 150 characters)",
        "line 5: unknown role 'boss': use one of reviewer, lead",
        "line 6: no role: use one of reviewer, lead",
        "line 7: 'ok' is named again (first on line 2): one role per person",
        "line 8: 'not-an-email' is not an email address",
        "line 9: 4 cells, but a line is username,role,email (a comma inside a name needs quotes)",
        f"line 10: '{'x' * 151}' is not a valid username (letters, digits and @ . + - _ only, "
        "at most 150 characters)",
    ]
    assert not Membership.objects.exists() and not User.objects.exists()


@pytest.mark.django_db
def test_demoting_the_last_lead_is_refused_on_its_line_but_a_new_lead_makes_it_fine(team, lead):
    errors = errors_for(f"newbie,reviewer\n{lead.username},reviewer\n", team)
    assert errors == [
        f"line 2: '{lead.username}' would no longer lead, and the project would have no lead: "
        "keep one lead (a project keeps one)"
    ]
    assert (
        roles_of(team)[lead.username] == Role.LEAD
        and not User.objects.filter(username="newbie").exists()
    )

    import_members(lines=csv_lines(f"newbie,lead\n{lead.username},reviewer\n"), project=team)
    assert roles_of(team)[lead.username] == Role.REVIEWER and roles_of(team)["newbie"] == "lead"


@pytest.mark.django_db
def test_an_existing_account_keeps_its_password_and_email(team, outsider):
    outsider.email = "oscar@example.org"
    outsider.save()
    result = import_members(
        lines=csv_lines(f"{outsider.username},reviewer,someone@else.org\n"),
        project=team,
        reset_password=True,
    )
    outsider.refresh_from_db()
    assert outsider.check_password(PASSWORD) and outsider.email == "oscar@example.org"
    assert result.email_kept == [outsider.username] and not result.passwords


@pytest.mark.django_db
def test_reset_password_gives_a_password_to_each_account_that_has_none(client, team):
    add_member(project=team, username="earlier", role=Role.REVIEWER)  # no password either
    result = import_members(
        lines=csv_lines("earlier,reviewer\nnewbie,reviewer\n"), project=team, reset_password=True
    )
    assert sorted(result.passwords) == ["earlier", "newbie"] and not result.without_password
    assert client.login(username="newbie", password=result.passwords["newbie"])


@pytest.mark.django_db
def test_import_members_command_prints_counts_and_passwords_once(small_project, tmp_path):
    out = io.StringIO()
    call_command(
        "import_members",
        str(FIXTURES / "members.csv"),
        "--project",
        small_project.slug,
        "--reset-password",
        stdout=out,
    )
    lines = out.getvalue().splitlines()
    assert lines[0] == (
        "Members of 'small': 4 accounts created, 4 added to the project, 0 role(s) changed, "
        "0 unchanged."
    )
    assert lines[1] == "New passwords, shown this once (username, password):"
    carol_password = lines[2].split("\t")[1]
    assert User.objects.get(username="carol").check_password(carol_password)

    out = io.StringIO()
    call_command("import_members", str(FIXTURES / "members.csv"), "--project", "small", stdout=out)
    assert "4 unchanged" in out.getvalue() and "password" not in out.getvalue()

    bad = tmp_path / "bad.csv"
    bad.write_text("x,boss\ny,boss\n")
    err = io.StringIO()
    with pytest.raises(CommandError, match="2 problem"):
        call_command("import_members", str(bad), "--project", "small", stderr=err)
    assert err.getvalue().startswith("lines 1 and 2: unknown role 'boss'")


@pytest.mark.django_db
def test_members_page_adds_many_from_a_csv(client, team, lead):
    allow_adding_anyone(user=lead)
    url = reverse("members", kwargs={"slug": team.slug})
    client.force_login(lead)
    assert "Add many (CSV)" in client.get(url).content.decode()

    response = client.post(
        url, {"action": "import", "file": SimpleUploadedFile("m.csv", hundred().encode())}
    )
    assert response.status_code == 302
    assert team.memberships.filter(user__username__startswith="reviewer").count() == 100
    page = client.get(url).content.decode()
    assert "100 accounts created" in page and "cannot log in yet" in page


@pytest.mark.django_db
def test_members_page_lists_every_line_problem_and_htmx_gets_the_panel(client, team, lead):
    allow_adding_anyone(user=lead)
    url = reverse("members", kwargs={"slug": team.slug})
    client.force_login(lead)
    bad = SimpleUploadedFile("m.csv", b"ok,reviewer\nivo,boss\n,lead\n")
    response = client.post(url, {"action": "import", "file": bad}, headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html and 'id="members-panel"' in html
    assert "2 problems found" in html
    assert (
        "line 2: unknown role &#x27;boss&#x27;" in html and "line 3: the username is empty" in html
    )
    assert not User.objects.filter(username="ok").exists()

    empty = client.post(url, {"action": "import"})
    assert empty.status_code == 400 and "Choose a CSV file to upload." in empty.content.decode()


@pytest.mark.django_db
def test_only_the_lead_can_add_many(client, team, reviewer_a, outsider):
    url = reverse("members", kwargs={"slug": team.slug})
    for person in (reviewer_a, outsider):
        client.force_login(person)
        csv_file = SimpleUploadedFile("m.csv", b"mallory,lead\n")
        assert client.post(url, {"action": "import", "file": csv_file}).status_code == 404
    assert not User.objects.filter(username="mallory").exists()
