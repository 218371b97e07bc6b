"""The members page's forms: adding someone, importing members, changing a role."""

from __future__ import annotations

from django import forms
from django.contrib.auth.validators import UnicodeUsernameValidator

from annotate.models import Role


class AddMemberForm(forms.Form):
    username = forms.CharField(max_length=150, validators=[UnicodeUsernameValidator()])
    role = forms.ChoiceField(choices=Role.choices, initial=Role.REVIEWER)
    password = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="Sets the password of a new account only; someone who already has an "
        "account keeps theirs.",
    )


class ImportMembersForm(forms.Form):
    file = forms.FileField(
        label="Members (CSV)",
        help_text="Roles: reviewer or lead. A header row (username,role,email) is optional.",
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,.txt"}),
        error_messages={"required": "Choose a CSV file to upload.", "empty": "The file is empty."},
    )


class MemberForm(forms.Form):
    """Change a member's role, or remove them (the same row's two buttons)."""

    member = forms.IntegerField(widget=forms.HiddenInput)
    role = forms.ChoiceField(choices=Role.choices, required=False)
