"""A project's members in the API: listing, adding, changing a role, removing."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from annotate.api.base import (
    CONFLICT_409,
    ERROR_400,
    LeadView,
    ListView,
    TextField,
    TextRegexField,
    query,
    refused,
    responses,
)
from annotate.common.errors import ServiceError
from annotate.members.services import (
    MemberError,
    add_project_member,
    change_member_role,
    remove_member,
)
from annotate.models import Membership, Role


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = Membership
        fields = ["username", "role"]


class MemberFilterSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Role.choices, required=False)


class AddMemberSerializer(serializers.Serializer):
    username = TextRegexField(r"^[\w.@+-]+\Z", max_length=150)
    role = serializers.ChoiceField(choices=Role.choices)
    password = TextField(
        required=False,
        allow_blank=True,
        write_only=True,
        max_length=128,
        help_text="Only for a new account; an existing account keeps its password.",
    )


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(
        choices=Role.choices, required=False, help_text="Left out: nothing changes."
    )


class MemberList(ListView, LeadView):
    serializer_class = MemberSerializer

    def get_queryset(self):
        filters = query(MemberFilterSerializer, self.request)
        members = self.project.memberships.select_related("user")
        if "role" in filters:
            members = members.filter(role=filters["role"])
        return members.order_by("role", "user__username")

    @extend_schema(
        tags=["members"],
        summary="The project's members",
        parameters=[MemberFilterSerializer],
        responses=responses(MemberSerializer(many=True), r400=ERROR_400),
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["members"],
        summary="Give a person a role (creating the account if needed)",
        description="A lead adds people already in a project they lead; anyone else (an "
        "account they do not share a project with, or a new one) takes staff or the "
        "`annotate.add_membership` permission, and is otherwise refused with 400 on "
        "`username`, alike whether the account exists or not.",
        request=AddMemberSerializer,
        responses=responses({201: MemberSerializer}, r400=ERROR_400),
    )
    def post(self, request, slug):
        serializer = AddMemberSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            membership = add_project_member(
                project=self.project,
                username=data["username"],
                role=data["role"],
                by=request.user,
                password=data.get("password") or None,
            )
        except MemberError as exc:
            raise ValidationError({exc.field or "non_field_errors": [str(exc)]}) from exc
        except ServiceError as exc:
            raise ValidationError({"non_field_errors": [str(exc)]}) from exc
        return Response(MemberSerializer(membership).data, status=status.HTTP_201_CREATED)


class MemberDetail(LeadView):
    def membership(self, username: str) -> Membership:
        membership = (
            self.project.memberships.filter(user__username=username)
            .select_related("user", "project")
            .first()
        )
        if membership is None:
            raise NotFound()
        return membership

    @extend_schema(tags=["members"], summary="One member", responses=responses(MemberSerializer))
    def get(self, request, slug, username):
        return Response(MemberSerializer(self.membership(username)).data)

    @extend_schema(
        tags=["members"],
        summary="Change a member's role (the project keeps at least one lead)",
        request=MemberRoleSerializer,
        responses=responses(MemberSerializer, r400=ERROR_400, r409=CONFLICT_409),
    )
    def patch(self, request, slug, username):
        serializer = MemberRoleSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        membership = self.membership(username)
        if "role" not in serializer.validated_data:  # a PATCH that changes nothing
            return Response(MemberSerializer(membership).data)
        try:
            membership = change_member_role(
                membership=membership, role=serializer.validated_data["role"]
            )
        except ServiceError as exc:
            return refused(exc)
        return Response(MemberSerializer(membership).data)

    @extend_schema(
        tags=["members"],
        summary="Remove a member (their submitted labels stay)",
        responses=responses({204: None}, r409=CONFLICT_409),
    )
    def delete(self, request, slug, username):
        try:
            remove_member(membership=self.membership(username))
        except ServiceError as exc:
            return refused(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)
