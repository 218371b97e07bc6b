"""The adjudication queue's filters."""

from django import forms

QUEUE_SLICES = [
    ("", "every slice"),
    ("answerable", "answerable"),
    ("unanswerable", "unanswerable"),
    ("adversarial", "adversarial"),
]


class QueueFilterForm(forms.Form):
    """The adjudication queue's filters, from the query string: a slice and a field (the
    fields the project labels, named in words)."""

    slice = forms.ChoiceField(choices=QUEUE_SLICES, required=False)
    field = forms.ChoiceField(required=False, label="Disagreement on")

    def __init__(self, *args, fields: list[tuple[str, str]], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["field"].choices = [("", "any field"), *fields]

    def filters(self) -> dict[str, str | None]:
        """The valid filters (an unknown value filters nothing rather than failing)."""
        self.is_valid()  # cleaned_data keeps the fields that are valid
        data = self.cleaned_data
        return {"slice": data.get("slice") or None, "field": data.get("field") or None}


class ResolveFlagForm(forms.Form):
    """A lead's words on resolving a reviewer's flag (optional; the reviewer never reads them)."""

    note = forms.CharField(required=False, max_length=2000, label="Resolution")
