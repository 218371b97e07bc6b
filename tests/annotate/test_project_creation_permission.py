"""Creating a project is for staff and for users given the permission (or for everyone when
CLAIMDESK_ANYONE_CAN_CREATE_PROJECTS is on): the New project link, the page and the API agree,
for a reviewer, a lead, an outsider and staff alike. The demo's lead may create projects."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from annotate.models import Membership, Project, Role
from annotate.projects.access import may_create_projects as may
from tests.api import API, JSONL, finished_job, token_client
from tests.conftest import FIXTURES, PASSWORD, may_create_projects

pytestmark = pytest.mark.django_db
SMALL = (FIXTURES / "small.jsonl").read_bytes()


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user(username="stella", password=PASSWORD, is_staff=True)


def person(request, who):
    return request.getfixturevalue(who)


def page_post(client, slug):
    return client.post(
        reverse("project_new"), {"slug": slug, "file": SimpleUploadedFile("b.jsonl", SMALL)}
    )


@pytest.mark.parametrize("who", ["reviewer_a", "lead", "outsider"])
def test_without_the_permission_there_is_no_link_and_the_page_and_api_say_403(
    client, team, request, who
):
    user = person(request, who)
    client.login(username=user.username, password=PASSWORD)
    home = client.get(reverse("home")).content.decode()
    assert reverse("project_new") not in home and "New project" not in home
    assert client.get(reverse("project_new")).status_code == 403
    assert page_post(client, "mine").status_code == 403
    api = token_client(user).post(
        f"{API}/projects/", {"slug": "mine", "file": SimpleUploadedFile("b.jsonl", SMALL)}
    )
    assert api.status_code == 403
    assert not Project.objects.filter(slug="mine").exists()


@pytest.mark.parametrize("who", ["staff", "outsider"])
def test_staff_and_permitted_users_see_the_link_and_create_projects(client, request, who):
    user = person(request, who)
    if who == "outsider":
        may_create_projects(user)
    client.login(username=user.username, password=PASSWORD)
    assert reverse("project_new") in client.get(reverse("home")).content.decode()
    assert client.get(reverse("project_new")).status_code == 200
    assert page_post(client, "by-page").status_code == 302
    client = token_client(user)
    api = client.post(f"{API}/projects/?slug=by-api", SMALL, content_type=JSONL)
    assert finished_job(client, api)["status"] == "succeeded"
    for slug in ("by-page", "by-api"):
        assert Membership.objects.get(project__slug=slug, user=user).role == Role.LEAD


def test_the_setting_lets_every_signed_in_user_create_projects(client, outsider, settings):
    settings.CLAIMDESK_ANYONE_CAN_CREATE_PROJECTS = True
    client.login(username=outsider.username, password=PASSWORD)
    assert client.get(reverse("project_new")).status_code == 200
    assert page_post(client, "open-door").status_code == 302
    settings.CLAIMDESK_ANYONE_CAN_CREATE_PROJECTS = False
    assert client.get(reverse("project_new")).status_code == 403


def test_a_lead_reimports_through_the_api_into_their_project_without_the_permission(team, lead):
    client = token_client(lead)
    response = client.post(f"{API}/projects/?slug={team.slug}", SMALL, content_type=JSONL)
    job = finished_job(client, response)  # their own project: an ordinary re-import
    assert job["status"] == "succeeded" and not job["result"]["created_project"]


def test_anonymous_visitors_are_sent_to_log_in_and_inactive_users_may_not(client, outsider):
    response = client.get(reverse("project_new"))
    assert response.status_code == 302 and "/login/" in response["Location"]
    outsider.is_active = False
    assert not may(outsider)


def test_the_demo_lead_may_create_projects(db):
    call_command("load_demo", stdout=io.StringIO())
    demo_lead = get_user_model().objects.get(username="lead")
    assert may(demo_lead)
    assert not may(get_user_model().objects.get(username="alice"))
    # Loaded again (an older demo database): still allowed, nothing duplicated.
    call_command("load_demo", stdout=io.StringIO())
    assert may(get_user_model().objects.get(username="lead"))


def test_a_permission_granted_shows_on_the_user_the_service_returns(lead, settings):
    """Django caches a user's permissions on the instance that checked them: a permission
    granted afterwards shows on the user read again from the database, which the services
    return (Django's documented way; they cleared the instance's private cache before)."""
    from annotate.members.services import allow_adding_anyone
    from annotate.projects.access import may_add_anyone
    from annotate.projects.services import allow_creating_projects

    settings.CLAIMDESK_ANYONE_CAN_CREATE_PROJECTS = False
    assert not may(lead) and not may_add_anyone(lead)  # cached on `lead` now
    assert may(allow_creating_projects(user=lead))
    assert may_add_anyone(allow_adding_anyone(user=lead))
    assert not may(lead)  # the instance checked before keeps what it cached
