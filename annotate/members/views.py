"""The members page: who is in the project and in which role, adding someone, importing a
CSV of members, changing a role, removing someone."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponseBadRequest
from django.shortcuts import redirect
from django.urls import reverse

from annotate.common.errors import ServiceError
from annotate.common.pages import go, render_page
from annotate.common.roles import project_view
from annotate.imports.lines import BundleInvalid
from annotate.members.forms import AddMemberForm, ImportMembersForm, MemberForm
from annotate.members.services import (
    ADDED_MEMBER,
    MemberError,
    add_project_member,
    change_member_role,
    import_members,
    remove_member,
)
from annotate.models import Membership, Role
from annotate.projects.access import may_add_anyone


@project_view(Role.LEAD)
def members(request, project, role):
    if request.method != "POST":
        return _members_page(request, project, role, AddMemberForm())
    action = request.POST.get("action")
    if action in ("role", "remove"):
        return _change_member(request, project, role, action)
    if action == "import":
        return _import_members(request, project, role)
    if action != "add":
        return HttpResponseBadRequest("Unknown action.")
    form = AddMemberForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            add_project_member(
                project=project,
                username=data["username"],
                role=data["role"],
                by=request.user,
                password=data["password"] or None,
            )
        except MemberError as exc:
            form.add_error(exc.field, str(exc))
        except ServiceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                ADDED_MEMBER.format(username=data["username"], role=data["role"]),
            )
            return _after_member_change(request, project, role)
    return _members_page(request, project, role, form, status=400)


def _import_members(request, project, role):
    form = ImportMembersForm(request.POST, request.FILES)
    bundle_errors: BundleInvalid | None = None
    if form.is_valid():
        try:
            result = import_members(
                lines=form.cleaned_data["file"], project=project, by=request.user
            )
        except BundleInvalid as exc:
            bundle_errors = exc
        else:
            messages.success(request, f"Members: {result.summary()}.")
            if result.without_password:
                messages.info(
                    request,
                    f"{len(result.without_password)} of them cannot log in yet, having no "
                    "password: an administrator sets one.",
                )
            return _after_member_change(request, project, role)
    return _members_page(
        request,
        project,
        role,
        AddMemberForm(),
        import_form=form,
        bundle_errors=bundle_errors,
        status=400,
    )


def _members_page(
    request, project, role, add_form, *, import_form=None, bundle_errors=None, status=200
):
    context = {
        "project": project,
        "role": role,
        "add_form": add_form,
        "import_form": import_form or ImportMembersForm(),
        "bundle_errors": bundle_errors,
        "memberships": project.memberships.select_related("user").order_by(
            "role", "user__username"
        ),
        "roles": Role.choices,
        "may_add_anyone": may_add_anyone(request.user),
        "current": "members",
    }
    return render_page(
        request, "annotate/lead/members.html", context, partial="members-panel", status=status
    )


def _change_member(request, project, role, action: str):
    form = MemberForm(request.POST)
    membership = None
    if form.is_valid():
        membership = (
            Membership.objects.filter(project=project, pk=form.cleaned_data["member"])
            .select_related("user", "project")
            .first()
        )
    if membership is None:
        messages.error(request, "That person is no longer a member: the page was out of date.")
        return _after_member_change(request, project, role)
    name = membership.user.get_username()
    try:
        if action == "remove":
            remove_member(membership=membership)
            messages.success(request, f"{name} was removed from the project.")
        else:
            new_role = form.cleaned_data["role"]
            change_member_role(membership=membership, role=new_role)
            messages.success(request, f"{name} is now a {new_role}.")
    except ServiceError as exc:
        messages.error(request, str(exc))
    return _after_member_change(request, project, role)


def _after_member_change(request, project, role):
    # A lead who removed or demoted themselves can no longer see the set-up pages.
    still_lead = Membership.objects.filter(
        project=project, user=request.user, role=Role.LEAD
    ).exists()
    if not still_lead:
        return go(request, reverse("home"))
    if request.htmx:
        return _members_page(request, project, role, AddMemberForm())
    return redirect("members", slug=project.slug)
