"""The Webhooks page's forms: an endpoint (new or changed)."""

from __future__ import annotations

from django import forms

from annotate.models import WebhookEndpoint


class EndpointForm(forms.Form):
    url = forms.CharField(
        label="URL",
        max_length=2000,
        widget=forms.URLInput(attrs={"placeholder": "https://", "autocomplete": "off"}),
        help_text="Where each event is POSTed, signed. Only http and https; the receiver is "
        "yours to trust: the events go wherever this points.",
    )
    description = forms.CharField(max_length=200, required=False)
    events = forms.MultipleChoiceField(
        choices=WebhookEndpoint.Event.choices,
        widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one event."},
    )


class EndpointChangeForm(EndpointForm):
    active = forms.BooleanField(
        required=False, label="On", help_text="Off: events are not recorded for it."
    )
    rotate_secret = forms.BooleanField(
        required=False,
        label="Make a new secret",
        help_text="Shown once, after saving; the old one stops signing at once.",
    )
