"""The Gold page's form that makes a release."""

from django import forms

from annotate.gold.forms import GoldExportForm


class ReleaseForm(forms.Form):
    """A release's name and the rows it freezes (the gold download's options, context
    aside: a release's claim rows join their answer rows on answer_id). Prefixed: the
    page's download form has fields of the same names."""

    prefix = "release"

    name = forms.CharField(
        max_length=64,
        label="Release name",
        help_text="v1, 2026-12-07 ...: letters, digits, '.', '_' or '-'; unique in the project.",
    )
    item = GoldExportForm.base_fields["item"]
    split = GoldExportForm.base_fields["split"]
    decided_only = GoldExportForm.base_fields["decided_only"]

    def options(self) -> dict:
        data = self.cleaned_data
        return {
            "name": data["name"],
            "item": data.get("item") or "all",
            "split": data.get("split") or "all",
            "decided_only": bool(data.get("decided_only")),
        }
