"""The lead's set-up pages: only the project's lead sees them; uploads are all or nothing and
list every problem; members keep a lead; claim boundaries are edited in draft only; the
dashboard and the boundary list cost a fixed number of queries."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotate.common import computed
from annotate.members.services import add_member, allow_adding_anyone
from annotate.models import Answer, Assignment, Case, Claim, Membership, Passage, Project, Role
from annotate.projects.opening import open_labelling
from tests.conftest import FIXTURES, PASSWORD, import_fixture, may_create_projects

SMALL = (FIXTURES / "small.jsonl").read_bytes()
VERIFIER = "a2-deadline/verifier"


def bundle(name: str = "small.jsonl", content: bytes = SMALL) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/jsonl")


def defective() -> bytes:
    """small.jsonl with two broken lines: a passage without text (line 3) and an answer
    naming a case that does not exist (line 9)."""
    lines = SMALL.decode().splitlines()
    passage = json.loads(lines[2])
    del passage["text"]
    lines[2] = json.dumps(passage)
    answer = json.loads(lines[8])
    answer["case_id"] = "no-such-case"
    lines[8] = json.dumps(answer)
    return "\n".join(lines).encode()


def flashes(response) -> list[str]:
    """The messages this request added (earlier, unread ones are still in the cookie)."""
    return [str(m) for m in get_messages(response.wsgi_request)._queued_messages]


def login(client, user):
    client.force_login(user)
    return client


def verifier_pk() -> int:
    return Answer.objects.get(answer_id=VERIFIER).pk


LEAD_PAGES = ["project_setup", "project_upload", "members", "guidelines", "boundaries"]


def page_url(name: str, project) -> str:
    if name == "boundary_edit":
        return reverse(name, kwargs={"slug": project.slug, "answer_pk": verifier_pk()})
    return reverse(name, kwargs={"slug": project.slug})


# --- Access ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [*LEAD_PAGES, "boundary_edit"])
@pytest.mark.django_db
def test_lead_pages_are_for_the_projects_lead_only(client, team, lead, reviewer_a, outsider, name):
    url = page_url(name, team)
    assert login(client, lead).get(url).status_code == 200
    assert login(client, reviewer_a).get(url).status_code == 404
    assert login(client, outsider).get(url).status_code == 404


@pytest.mark.parametrize("name", [*LEAD_PAGES, "boundary_edit"])
@pytest.mark.django_db
def test_lead_pages_send_anonymous_visitors_to_login(client, team, name):
    response = client.get(page_url(name, team))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.django_db
def test_lead_pages_404_for_a_project_that_does_not_exist(client, lead):
    response = login(client, lead).get(reverse("project_setup", kwargs={"slug": "nope"}))
    assert response.status_code == 404


@pytest.mark.django_db
def test_opening_is_refused_to_everyone_but_the_lead(client, team, reviewer_a, outsider):
    url = reverse("open_labelling", kwargs={"slug": team.slug})
    assert client.post(url).status_code == 302  # to login
    assert login(client, reviewer_a).post(url).status_code == 404
    assert login(client, outsider).post(url).status_code == 404
    team.refresh_from_db()
    assert team.state == Project.State.DRAFT


@pytest.mark.django_db
def test_an_answer_of_another_project_is_404_on_the_boundary_editor(client, team, lead):
    other = import_fixture("small.jsonl", "other")
    foreign = Answer.objects.get(project=other, answer_id=VERIFIER)
    url = reverse("boundary_edit", kwargs={"slug": team.slug, "answer_pk": foreign.pk})
    assert login(client, lead).get(url).status_code == 404
    assert login(client, lead).post(url, {"action": "accept"}).status_code == 404
    assert foreign.claims.filter(proposed=True).count() == 2


@pytest.mark.django_db
def test_new_project_page_needs_a_login_and_the_permission(client, outsider):
    url = reverse("project_new")
    assert client.get(url).status_code == 302
    assert login(client, outsider).get(url).status_code == 403
    may_create_projects(outsider)
    assert client.get(url).status_code == 200


# --- New project and upload ------------------------------------------------------------------


@pytest.mark.django_db
def test_uploading_small_bundle_creates_a_project_led_by_the_uploader(client, outsider):
    may_create_projects(outsider)
    response = login(client, outsider).post(
        reverse("project_new"), {"slug": "course", "name": "Course notes", "file": bundle()}
    )

    assert response.status_code == 302
    assert response["Location"] == reverse("project_setup", kwargs={"slug": "course"})
    project = Project.objects.get(slug="course")
    assert project.name == "Course notes"
    assert project.corpus_version == "course-notes-v1"
    assert Membership.objects.get(project=project, user=outsider).role == Role.LEAD
    assert project.answers.count() == 4
    (message, proposed) = flashes(response)
    assert "answers: 4 created" in message
    assert "passages: 3 created" in message
    assert "2 claims were proposed" in proposed
    assert client.get(response["Location"]).status_code == 200


@pytest.mark.django_db
def test_new_project_without_a_name_takes_the_bundles(client, outsider):
    may_create_projects(outsider)
    login(client, outsider).post(reverse("project_new"), {"slug": "course", "file": bundle()})
    assert Project.objects.get(slug="course").name == "Small sample"


@pytest.mark.django_db
def test_a_taken_slug_is_refused_without_revealing_the_project(client, team, outsider):
    may_create_projects(outsider)
    response = login(client, outsider).post(
        reverse("project_new"), {"slug": team.slug, "name": "Mine", "file": bundle()}
    )

    assert response.status_code == 400
    body = response.content.decode()
    assert "This slug is not available" in body
    assert team.name not in body and "course-notes-v1" not in body
    assert not Membership.objects.filter(project=team, user=outsider).exists()
    team.refresh_from_db()
    assert team.name == "Small sample"


@pytest.mark.django_db
def test_the_new_project_page_sends_the_lead_of_a_taken_slug_to_its_upload_page(client, team, lead):
    """Re-importing is the Upload page's job: 'New project' must not quietly update a live
    project (the API still re-imports for pipelines)."""
    may_create_projects(lead)
    passages = Passage.objects.filter(project=team).count()
    response = login(client, lead).post(
        reverse("project_new"),
        {
            "slug": team.slug,
            "file": bundle(content=SMALL + b'{"type": "passage", "passage_id": "n", "text": "N."}'),
        },
    )
    assert response.status_code == 400
    assert f"use its Upload page (/p/{team.slug}/upload/)" in response.content.decode()
    assert Passage.objects.filter(project=team).count() == passages


@pytest.mark.django_db
def test_a_defective_bundle_lists_every_line_problem_and_writes_nothing(client, outsider):
    may_create_projects(outsider)
    response = login(client, outsider).post(
        reverse("project_new"), {"slug": "course", "file": bundle(content=defective())}
    )

    assert response.status_code == 400
    body = response.content.decode()
    assert "2 problems found" in body
    assert "line 3: " in body and "text" in body
    assert "line 9: " in body and "no-such-case" in body
    assert not Project.objects.exists()
    assert not Passage.objects.exists() and not Case.objects.exists()


@pytest.mark.django_db
def test_a_defective_upload_into_a_project_writes_nothing(client, team, lead):
    extra = (
        SMALL + b'{"type": "passage", "passage_id": "new-1", "text": "New."}\n{"type": "case"}\n'
    )
    response = login(client, lead).post(
        reverse("project_upload", kwargs={"slug": team.slug}), {"file": bundle(content=extra)}
    )
    assert response.status_code == 400
    assert "line 18: " in response.content.decode()
    assert not Passage.objects.filter(passage_id="new-1").exists()


@pytest.mark.django_db
def test_upload_adds_new_rows_and_reports_counts(client, team, lead):
    extra = SMALL + b'{"type": "passage", "passage_id": "new-1", "text": "New."}\n'
    response = login(client, lead).post(
        reverse("project_upload", kwargs={"slug": team.slug}), {"file": bundle(content=extra)}
    )
    assert response.status_code == 302
    assert "passages: 1 created, 3 unchanged" in flashes(response)[0]
    assert team.passages.filter(passage_id="new-1").exists()


@pytest.mark.django_db
def test_changed_content_needs_the_replace_checkbox(client, team, lead):
    changed = SMALL.replace(b"Assignment 2 contributes 20%", b"Assignment 2 contributes 25%")
    url = reverse("project_upload", kwargs={"slug": team.slug})
    refused = login(client, lead).post(url, {"file": bundle(content=changed)})
    assert refused.status_code == 400
    assert "import with replace" in refused.content.decode()

    replaced = client.post(url, {"file": bundle(content=changed), "replace": "on"})
    assert replaced.status_code == 302
    assert "25%" in team.passages.get(passage_id="notes-18").text


@pytest.mark.django_db
def test_htmx_upload_redirects_the_browser_or_swaps_in_the_errors(client, team, lead):
    url = reverse("project_upload", kwargs={"slug": team.slug})
    login(client, lead)
    bad = client.post(url, {"file": bundle(content=defective())}, headers={"HX-Request": "true"})
    assert bad.status_code == 200  # htmx swaps 2xx only
    body = bad.content.decode()
    assert "<html" not in body and 'id="upload-form"' in body and "line 9: " in body

    good = client.post(url, {"file": bundle()}, headers={"HX-Request": "true"})
    assert good["HX-Redirect"] == reverse("project_setup", kwargs={"slug": team.slug})


@pytest.mark.django_db
def test_upload_page_has_a_progress_bar_and_works_without_javascript(client, team, lead):
    body = login(client, lead).get(reverse("project_upload", kwargs={"slug": team.slug}))
    html = body.content.decode()
    assert 'enctype="multipart/form-data"' in html and 'method="post"' in html
    assert 'hx-encoding="multipart/form-data"' in html
    assert "<progress" in html and "upload.js" in html
    assert 'name="replace"' in html


@pytest.mark.django_db
def test_upload_without_a_file_shows_the_error_next_to_the_field(client, team, lead):
    response = login(client, lead).post(reverse("project_upload", kwargs={"slug": team.slug}))
    assert response.status_code == 400
    assert "Choose a bundle file" in response.content.decode()


# --- Set-up dashboard and opening --------------------------------------------------------------


@pytest.mark.django_db
def test_setup_shows_counts_by_slice_and_what_is_left_to_do(client, team, lead):
    html = login(client, lead).get(reverse("project_setup", kwargs={"slug": team.slug}))
    html = html.content.decode()
    assert "course-notes-v1" in html and "Draft" in html
    assert "answerable 1 · unanswerable 1 · adversarial 1" in html
    assert "Proposed claims not yet reviewed" in html
    assert "Open for labelling" in html and "claims lock" in html.lower()
    for name in ("members", "guidelines", "project_upload", "boundaries"):
        assert reverse(name, kwargs={"slug": team.slug}) in html


@pytest.mark.django_db
def test_opening_via_the_button_locks_claims_and_queues_every_answer(client, team, lead):
    response = login(client, lead).post(reverse("open_labelling", kwargs={"slug": team.slug}))

    assert response.status_code == 302
    assert flashes(response) == ["Open for labelling: 4 answers in the queue"]
    team.refresh_from_db()
    assert team.state == Project.State.OPEN
    html = client.get(reverse("project_setup", kwargs={"slug": team.slug})).content.decode()
    assert 'action="/p/small/open/"' not in html

    again = client.post(reverse("open_labelling", kwargs={"slug": team.slug}))
    assert "already open" in flashes(again)[0]


@pytest.mark.django_db
def test_opening_an_empty_project_says_what_to_do(client, lead):
    project = Project.objects.create(slug="empty", name="Empty", corpus_version="v1")
    add_member(project=project, username=lead.username, role=Role.LEAD)
    login(client, lead)
    assert "No data yet" in client.get("/p/empty/setup/").content.decode()
    response = client.post(reverse("open_labelling", kwargs={"slug": "empty"}))
    assert "import a bundle first" in flashes(response)[0]


def _busy_reviewers(project, count: int) -> None:
    """`count` reviewers, each with a submitted, an in-progress and a skipped assignment."""
    answers = list(project.answers.order_by("answer_id"))
    for i in range(count):
        user = get_user_model().objects.create_user(username=f"r{i}", password=PASSWORD)
        add_member(project=project, username=user.username, role=Role.REVIEWER)
        for answer, status in zip(answers, Assignment.Status.values, strict=False):
            Assignment.objects.create(
                project=project,
                answer=answer,
                reviewer=user,
                status=status,
                release_reason="unclear question" if status == "released" else "",
            )


@pytest.mark.django_db
def test_setup_shows_progress_per_reviewer_with_skip_reasons(client, team, lead):
    open_labelling(project=team)
    _busy_reviewers(team, 2)
    html = login(client, lead).get(reverse("project_setup", kwargs={"slug": team.slug}))
    html = html.content.decode()
    assert "2/8 submitted (25%)" in html
    assert "r0" in html and "r1" in html and "unclear question" in html


@pytest.mark.django_db
def test_setup_query_count_does_not_grow_with_reviewers_or_answers(
    client, team, lead, django_assert_max_num_queries
):
    open_labelling(project=team)
    url = reverse("project_setup", kwargs={"slug": team.slug})
    login(client, lead)
    _busy_reviewers(team, 1)
    computed.clear()  # the blinding check is kept per revision: computed each time
    with CaptureQueriesContext(connection) as few:
        client.get(url)
    _busy_reviewers(Project.objects.get(pk=team.pk), 0)
    for i in range(1, 6):
        user = get_user_model().objects.create_user(username=f"extra{i}")
        add_member(project=team, username=user.username, role=Role.REVIEWER)
        for answer in team.answers.all():
            Assignment.objects.create(project=team, answer=answer, reviewer=user)
    computed.clear()
    with CaptureQueriesContext(connection) as many:
        client.get(url)
    assert len(many) == len(few)
    with django_assert_max_num_queries(12):  # 10 and the data version; the blinding check kept
        assert client.get(url).status_code == 200


# --- Members ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_lead_adds_a_new_reviewer_with_a_password(client, team, lead):
    allow_adding_anyone(user=lead)
    url = reverse("members", kwargs={"slug": team.slug})
    response = login(client, lead).post(
        url, {"action": "add", "username": "carol", "role": "reviewer", "password": PASSWORD}
    )
    assert response.status_code == 302
    assert Membership.objects.get(project=team, user__username="carol").role == Role.REVIEWER
    assert client.logout() is None
    assert client.login(username="carol", password=PASSWORD)


@pytest.mark.django_db
def test_adding_an_existing_account_with_a_password_keeps_their_own_password(
    client, team, lead, outsider
):
    allow_adding_anyone(user=lead)
    url = reverse("members", kwargs={"slug": team.slug})
    response = login(client, lead).post(
        url, {"action": "add", "username": "oscar", "role": "reviewer", "password": "new pw 12345"}
    )
    assert response.status_code == 302
    outsider.refresh_from_db()
    assert outsider.check_password(PASSWORD)  # nobody takes over an existing login
    assert Membership.objects.get(project=team, user=outsider).role == Role.REVIEWER


@pytest.mark.django_db
def test_the_members_page_says_whom_a_lead_may_add(client, team, lead):
    url = reverse("members", kwargs={"slug": team.slug})
    page = login(client, lead).get(url).content.decode()
    assert "already in a project you lead" in page and 'name="password"' not in page
    allow_adding_anyone(user=lead)
    page = client.get(url).content.decode()
    assert "a new username creates an account" in page and 'name="password"' in page


@pytest.mark.django_db
def test_add_member_field_errors_are_shown_next_to_fields(client, team, lead):
    url = reverse("members", kwargs={"slug": team.slug})
    response = login(client, lead).post(
        url, {"action": "add", "username": "bad name!", "role": "boss", "password": "x"}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="id_username_error"' in html and 'id="id_role_error"' in html


@pytest.mark.django_db
def test_lead_changes_a_role_and_removes_a_member(client, team, lead, reviewer_a):
    url = reverse("members", kwargs={"slug": team.slug})
    member = Membership.objects.get(project=team, user=reviewer_a)
    login(client, lead).post(url, {"action": "role", "member": member.pk, "role": "lead"})
    member.refresh_from_db()
    assert member.role == Role.LEAD

    response = client.post(url, {"action": "remove", "member": member.pk})
    assert response.status_code == 302
    assert not Membership.objects.filter(pk=member.pk).exists()
    assert get_user_model().objects.filter(pk=reviewer_a.pk).exists()


@pytest.mark.django_db
def test_the_last_lead_can_neither_leave_nor_step_down(client, team, lead):
    url = reverse("members", kwargs={"slug": team.slug})
    mine = Membership.objects.get(project=team, user=lead)
    login(client, lead)

    removed = client.post(url, {"action": "remove", "member": mine.pk})
    assert "only lead" in flashes(removed)[0]
    demoted = client.post(url, {"action": "role", "member": mine.pk, "role": "reviewer"})
    assert "only lead" in flashes(demoted)[0]
    readded = client.post(url, {"action": "add", "username": lead.username, "role": "reviewer"})
    assert readded.status_code == 400 and "only lead" in readded.content.decode()
    mine.refresh_from_db()
    assert mine.role == Role.LEAD


@pytest.mark.django_db
def test_a_lead_may_leave_when_another_lead_remains(client, team, lead, reviewer_a):
    add_member(project=team, username=reviewer_a.username, role=Role.LEAD)
    mine = Membership.objects.get(project=team, user=lead)
    response = login(client, lead).post(
        reverse("members", kwargs={"slug": team.slug}), {"action": "remove", "member": mine.pk}
    )
    assert response["Location"] == reverse("home")
    assert client.get(reverse("project_setup", kwargs={"slug": team.slug})).status_code == 404


@pytest.mark.django_db
def test_a_member_of_another_project_cannot_be_changed_from_this_one(client, team, lead):
    other = import_fixture("small.jsonl", "other")
    theirs = add_member(project=other, username="zed", role=Role.LEAD)
    login(client, lead).post(
        reverse("members", kwargs={"slug": team.slug}), {"action": "remove", "member": theirs.pk}
    )
    assert Membership.objects.filter(pk=theirs.pk).exists()


@pytest.mark.django_db
def test_htmx_member_change_swaps_the_panel(client, team, lead, reviewer_a):
    member = Membership.objects.get(project=team, user=reviewer_a)
    response = login(client, lead).post(
        reverse("members", kwargs={"slug": team.slug}),
        {"action": "remove", "member": member.pk},
        headers={"HX-Request": "true"},
    )
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert 'id="members-panel"' in html and "alice was removed" in html


# --- Guidelines ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_lead_writes_guidelines_and_overlap_in_draft(client, team, lead):
    url = reverse("guidelines", kwargs={"slug": team.slug})
    text = "Support: <b>only</b> what the passage says.\nSeverity: harm to a student."
    response = login(client, lead).post(url, {"guidelines": text, "overlap": 3})
    assert response.status_code == 302
    team.refresh_from_db()
    assert (team.guidelines, team.overlap) == (text, 3)
    html = client.get(url).content.decode()
    assert "&lt;b&gt;only&lt;/b&gt;" in html and "<b>only</b>" not in html


@pytest.mark.django_db
def test_overlap_is_fixed_once_labelling_opens(client, team, lead):
    open_labelling(project=team)
    url = reverse("guidelines", kwargs={"slug": team.slug})
    response = login(client, lead).post(url, {"guidelines": "New.", "overlap": 5})
    assert response.status_code == 302
    team.refresh_from_db()
    assert (team.guidelines, team.overlap) == ("New.", 2)
    assert "Fixed once labelling opens" in client.get(url).content.decode()


@pytest.mark.django_db
def test_overlap_must_be_at_least_one(client, team, lead):
    url = reverse("guidelines", kwargs={"slug": team.slug})
    response = login(client, lead).post(url, {"guidelines": "", "overlap": 0})
    assert response.status_code == 400
    team.refresh_from_db()
    assert team.overlap == 2


# --- Claim boundaries: the list ----------------------------------------------------------------


@pytest.mark.django_db
def test_boundary_list_shows_answer_ids_counts_and_filters_proposed(client, team, lead):
    url = reverse("boundaries", kwargs={"slug": team.slug})
    html = login(client, lead).get(url).content.decode()
    for answer_id in ("a2-deadline/baseline", VERIFIER, "missing-rate/baseline"):
        assert answer_id in html
    assert "2 proposed" in html

    only = client.get(url, {"proposed": "1"}).content.decode()
    assert VERIFIER in only and "a2-deadline/baseline" not in only
    assert "1 answer" in only


@pytest.mark.django_db
def test_boundary_list_empty_filter_says_nothing_is_left(client, team, lead):
    Claim.objects.filter(answer__project=team).update(proposed=False)
    html = login(client, lead).get(
        reverse("boundaries", kwargs={"slug": team.slug}), {"proposed": 1}
    )
    assert "No proposed claims left to review" in html.content.decode()


@pytest.mark.django_db
def test_boundary_list_is_paginated_with_a_constant_query_count(
    client, lead, django_assert_max_num_queries
):
    demo = import_fixture("demo.jsonl", "demo")
    add_member(project=demo, username=lead.username, role=Role.LEAD)
    url = reverse("boundaries", kwargs={"slug": "demo"})
    login(client, lead)
    assert demo.answers.count() > 50
    with django_assert_max_num_queries(5):
        first = client.get(url)
    html = first.content.decode()
    assert html.count("/claims/") - html.count(f'href="{url}"') >= 50
    assert "Page 1 of 2" in html and "page=2" in html
    with CaptureQueriesContext(connection) as second:
        page_two = client.get(url, {"page": 2})
    assert "Page 2 of 2" in page_two.content.decode()
    small = import_fixture("small.jsonl", "small")
    add_member(project=small, username=lead.username, role=Role.LEAD)
    with CaptureQueriesContext(connection) as few:
        client.get(reverse("boundaries", kwargs={"slug": "small"}))
    assert len(few) == len(second)


# --- Claim boundaries: the editor --------------------------------------------------------------


def edit(client, project, **data):
    url = reverse("boundary_edit", kwargs={"slug": project.slug, "answer_pk": verifier_pk()})
    return client.post(url, data)


def spans() -> list[tuple[int, int, int, str]]:
    return list(
        Claim.objects.filter(answer__answer_id=VERIFIER)
        .order_by("ordinal")
        .values_list("ordinal", "start", "end", "text")
    )


@pytest.mark.django_db
def test_editor_shows_the_answer_with_claims_and_citation_not_found(client, team, lead):
    url = reverse("boundary_edit", kwargs={"slug": team.slug, "answer_pk": verifier_pk()})
    html = login(client, lead).get(url).content.decode()
    # each segment carries its offset; the claim's number is drawn by CSS from data-number
    assert re.search(
        r'<span class="claim" data-start="0" data-claim="\d+" data-number="1">'
        r"Assignment 2",
        html,
    )
    assert "notes-99 · citation_not_found" in html
    assert "When is Assignment 2 due" in html
    assert 'name="action" value="split"' in html and 'name="action" value="merge"' in html
    assert "a2-deadline/baseline" in html  # previous answer link


@pytest.mark.django_db
def test_editor_split_merge_adjust_cite_delete_and_add_through_the_page(client, team, lead):
    login(client, lead)
    text = Answer.objects.get(answer_id=VERIFIER).text
    second = Claim.objects.get(answer__answer_id=VERIFIER, ordinal=1)

    response = edit(client, team, action="split", claim=second.pk, at=text.index("within"))
    assert response.status_code == 302 and response["Location"].endswith("#claims")
    assert flashes(response) == ["Claim split in two."]
    assert [s[3] for s in spans()] == [
        "Assignment 2 is due on 14 March.",
        "Late work is accepted",
        "within 48 hours with a penalty.",
    ]

    edit(client, team, action="merge", claim=second.pk)
    assert [s[1:3] for s in spans()] == [(0, 43), (44, 118)]

    edit(client, team, action="adjust", claim=second.pk, start=44, end=96)
    assert spans()[1] == (1, 44, 96, "Late work is accepted within 48 hours with a penalty")

    edit(client, team, action="citations", claim=second.pk, citations="notes-17, notes-404")
    cited = Claim.objects.get(pk=second.pk).citations.order_by("ordinal")
    assert [(c.cited_id, c.passage_id is None) for c in cited] == [
        ("notes-17", False),
        ("notes-404", True),
    ]

    first = Claim.objects.get(answer__answer_id=VERIFIER, ordinal=0)
    edit(client, team, action="delete", claim=first.pk)
    assert [s[:3] for s in spans()] == [(0, 44, 96)]

    edit(client, team, action="add", start=0, end=43)
    assert [s[:3] for s in spans()] == [(0, 0, 43), (1, 44, 96)]
    assert not Claim.objects.filter(answer__answer_id=VERIFIER, proposed=True).exists()


@pytest.mark.django_db
def test_editor_query_count_is_fixed(client, team, lead, django_assert_max_num_queries):
    url = reverse("boundary_edit", kwargs={"slug": team.slug, "answer_pk": verifier_pk()})
    login(client, lead)
    with django_assert_max_num_queries(8):
        assert client.get(url).status_code == 200


@pytest.mark.django_db
def test_editor_reports_a_refused_edit_in_words(client, team, lead):
    login(client, lead)
    second = Claim.objects.get(answer__answer_id=VERIFIER, ordinal=1)
    response = edit(client, team, action="adjust", claim=second.pk, start=10, end=118)
    assert "overlaps or passes claim 1" in flashes(response)[0]
    response = edit(client, team, action="split", claim=second.pk, at="middle")
    assert "Split before offset" in flashes(response)[0]
    assert edit(client, team, action="explode").status_code == 400


@pytest.mark.django_db
def test_editor_marks_proposed_claims_reviewed(client, team, lead):
    login(client, lead)
    response = edit(client, team, action="accept")
    assert flashes(response) == ["Boundaries marked as reviewed."]
    assert not Claim.objects.filter(proposed=True).exists()


@pytest.mark.django_db
def test_editor_htmx_edit_returns_the_editor_partial_with_its_message(client, team, lead):
    login(client, lead)
    url = reverse("boundary_edit", kwargs={"slug": team.slug, "answer_pk": verifier_pk()})
    first = Claim.objects.get(answer__answer_id=VERIFIER, ordinal=0)
    response = client.post(
        url, {"action": "merge", "claim": first.pk}, headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert 'id="claim-editor"' in html and "Claims merged." in html
    assert len(spans()) == 1


@pytest.mark.django_db
def test_every_edit_is_refused_through_the_page_once_open(client, team, lead):
    open_labelling(project=team)
    login(client, lead)
    before = spans()
    first, second = Claim.objects.filter(answer__answer_id=VERIFIER).order_by("ordinal")
    posts = [
        {"action": "split", "claim": second.pk, "at": 60},
        {"action": "merge", "claim": first.pk},
        {"action": "adjust", "claim": second.pk, "start": 50, "end": 118},
        {"action": "citations", "claim": first.pk, "citations": "notes-18"},
        {"action": "delete", "claim": first.pk},
        {"action": "add", "start": 0, "end": 10},
        {"action": "accept"},
    ]
    for data in posts:
        response = edit(client, team, **data)
        assert flashes(response) == ["Claims are locked once labelling opens."], data
    assert spans() == before
    url = reverse("boundary_edit", kwargs={"slug": team.slug, "answer_pk": verifier_pk()})
    html = client.get(url).content.decode()
    assert "read-only" in html and 'value="split"' not in html


@pytest.mark.django_db
def test_editor_prev_and_next_follow_the_filter(client, team, lead):
    url = reverse("boundary_edit", kwargs={"slug": team.slug, "answer_pk": verifier_pk()})
    html = login(client, lead).get(url).content.decode()
    assert 'rel="prev"' in html and 'rel="next"' in html
    filtered = client.get(url, {"proposed": 1}).content.decode()
    assert 'rel="prev"' not in filtered and 'rel="next"' not in filtered


@pytest.mark.django_db
def test_bundle_text_is_escaped_everywhere(client, lead):
    lines = SMALL.decode().replace(
        "Late work is accepted", "<script>alert(1)</script> Late work is accepted"
    )
    project = Project.objects.create(slug="x", name="X", corpus_version="course-notes-v1")
    add_member(project=project, username=lead.username, role=Role.LEAD)
    from annotate.imports.bundle_import import import_bundle

    import_bundle(lines=lines.splitlines(), project_slug="x")
    answer = Answer.objects.get(project=project, answer_id=VERIFIER)
    login(client, lead)
    for url in (
        reverse("boundaries", kwargs={"slug": "x"}),
        reverse("boundary_edit", kwargs={"slug": "x", "answer_pk": answer.pk}),
    ):
        html = client.get(url).content.decode()
        assert "<script>alert(1)</script>" not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


@pytest.mark.django_db
def test_add_member_command_never_silently_replaces_an_existing_password(team, outsider):
    from io import StringIO

    from django.core.management import call_command

    err = StringIO()
    call_command(
        "add_member",
        team.slug,
        outsider.username,
        role="reviewer",
        password="n3w-Secret!",
        stderr=err,
    )
    assert "password was left unchanged" in err.getvalue()
    outsider.refresh_from_db()
    assert outsider.check_password(PASSWORD)
    assert Membership.objects.get(project=team, user=outsider).role == "reviewer"

    call_command("add_member", team.slug, outsider.username, role="reviewer")
    outsider.refresh_from_db()
    assert outsider.check_password(PASSWORD)  # added with the login they have
    call_command(
        "add_member",
        team.slug,
        outsider.username,
        role="reviewer",
        password="n3w-Secret!",
        reset_password=True,
    )
    outsider.refresh_from_db()
    assert outsider.check_password("n3w-Secret!")

    call_command("add_member", team.slug, "newcomer", role="reviewer", password="first-Secret!")
    newcomer = get_user_model().objects.get(username="newcomer")
    assert newcomer.check_password("first-Secret!")


@pytest.mark.django_db
def test_pages_before_any_double_labelling_say_so_instead_of_empty_numbers(
    client, team, lead, reviewer_a
):
    open_labelling(project=team)
    login(client, lead)
    agreement = client.get(reverse("agreement", kwargs={"slug": team.slug})).content.decode()
    assert "No answer has been labelled by two reviewers yet" in agreement
    assert "<table" not in agreement
    queue = client.get(reverse("adjudication_queue", kwargs={"slug": team.slug})).content.decode()
    assert "Nothing is doubly labelled yet" in queue
    assert "Download gold" not in queue
    login(client, reviewer_a)
    done = client.get(reverse("queue_empty", kwargs={"slug": team.slug})).content.decode()
    assert "Nothing is left for you to label" in done and "Thank you" not in done


# --- The label schema on the set-up page ------------------------------------------------------


def test_the_lead_sets_the_label_schema_in_draft_and_sees_it_locked_once_open(client, team, lead):
    from annotate.projects.opening import open_labelling

    client.login(username=lead.username, password=PASSWORD)
    url = reverse("label_schema", kwargs={"slug": team.slug})
    response = client.post(url, {"support": "binary", "claim_fields": ["evidence"]})
    assert response.status_code == 302
    team.refresh_from_db()
    assert team.label_schema == {
        "support": "binary",
        "claim_fields": ["evidence"],
        "answer_fields": [],
    }
    form = client.get(reverse("project_setup", kwargs={"slug": team.slug})).context["schema_form"]
    assert form.initial["support"] == "binary" and form.initial["claim_fields"] == ["evidence"]
    bad = client.post(url, {"support": "five_way"})
    assert bad.status_code == 400 and "Select a valid choice" in bad.content.decode()
    open_labelling(project=team)
    locked = client.post(url, {"support": "three_way"})
    assert locked.status_code == 400
    assert "locked once labelling opens" in locked.content.decode()
    team.refresh_from_db()
    assert team.schema.binary
    page = client.get(reverse("project_setup", kwargs={"slug": team.slug})).content.decode()
    assert "Support (binary); other claim fields: evidence; answer fields: none." in page


def test_only_a_lead_may_change_the_label_schema(client, team, reviewer_a, outsider):
    url = reverse("label_schema", kwargs={"slug": team.slug})
    for person in (reviewer_a, outsider):
        client.login(username=person.username, password=PASSWORD)
        assert client.post(url, {"support": "binary"}).status_code == 404
    team.refresh_from_db()
    assert not team.schema.binary
