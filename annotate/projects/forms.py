"""Forms of the lead's set-up pages (the guidelines, the claim boundary editor's actions, the
label schema). They check shapes (a slug, a number, a file); the rules
(who may import where, the last lead, locked claims) are the services'."""

from __future__ import annotations

from django import forms

from annotate.models import Project
from annotate.schema import LabelSchema


class GuidelinesForm(forms.Form):
    guidelines = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 18}),
        help_text="Plain text; reviewers see it as written, line breaks kept.",
    )
    overlap = forms.IntegerField(
        min_value=1,
        max_value=20,
        help_text="How many reviewers label each answer independently (2 for agreement).",
    )

    def __init__(self, *args, project: Project, **kwargs):
        kwargs.setdefault("initial", {"guidelines": project.guidelines, "overlap": project.overlap})
        super().__init__(*args, **kwargs)
        if not project.is_draft:
            # A disabled field keeps its initial value whatever is posted.
            self.fields["overlap"].disabled = True
            self.fields["overlap"].help_text = "Fixed once labelling opens."


# --- Claim boundaries: one small form per action, all posted to the answer's page ----------


class ClaimForm(forms.Form):
    claim = forms.IntegerField(widget=forms.HiddenInput)


class SplitForm(ClaimForm):
    at = forms.IntegerField(label="Split before offset", min_value=0)


class SpanForm(forms.Form):
    start = forms.IntegerField(min_value=0)
    end = forms.IntegerField(min_value=1)


class AdjustForm(ClaimForm, SpanForm):
    pass


class CitationsForm(ClaimForm):
    citations = forms.CharField(
        required=False,
        max_length=4000,
        help_text="Passage ids separated by commas; an unknown id is kept as citation_not_found.",
    )


BOUNDARY_FORMS: dict[str, type[forms.Form]] = {
    "split": SplitForm,
    "merge": ClaimForm,
    "adjust": AdjustForm,
    "citations": CitationsForm,
    "delete": ClaimForm,
    "add": SpanForm,
    "accept": forms.Form,
}


class LabelSchemaForm(forms.Form):
    """The label schema (annotate.schema) as the set-up page edits it before labelling opens."""

    support = forms.ChoiceField(
        choices=[
            ("three_way", "three-way: supported · contradicted · insufficient evidence"),
            ("binary", "binary: supported · unsupported"),
        ],
        widget=forms.RadioSelect,
        label="Support",
    )
    claim_fields = forms.MultipleChoiceField(
        choices=[
            ("severity", "severity"),
            ("requires_evidence", "needs evidence"),
            ("evidence", "evidence passage and quote"),
            ("citations", "citation verdicts"),
        ],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Also per claim",
    )
    answer_fields = forms.MultipleChoiceField(
        choices=[
            ("relevance", "relevance (0–2)"),
            ("abstention", "abstention (when the answer declines)"),
            ("failure_labels", "failure labels"),
        ],
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Per answer",
    )

    def schema(self) -> LabelSchema:
        return LabelSchema.parse(self.cleaned_data)
