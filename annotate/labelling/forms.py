"""Forms turn a POST into the plain dict the label services take. Domain rules (the quote
occurs in a chosen passage, completeness) are the services' job, not the forms'."""

from django import forms

from annotate.models import FAILURE_LABELS, Abstention, CitationVerdict, Flag, Severity, Support


class DraftForm(forms.Form):
    """A draft's `version`: the one it was made from (absent: saved unchecked, as from a page
    older than versions). Anything but a whole number is refused, as the API refuses it: a
    draft saved past the stale check would overwrite another tab's save."""

    version = forms.IntegerField(required=False, min_value=0, max_value=2**31 - 1)


class ClaimLabelForm(DraftForm):
    support = forms.ChoiceField(choices=[("", "—"), *Support.choices], required=False)
    severity = forms.ChoiceField(choices=[("", "—"), *Severity.choices], required=False)
    requires_evidence = forms.BooleanField(required=False)
    evidence_ids = forms.MultipleChoiceField(required=False)
    evidence_quote = forms.CharField(required=False, max_length=2000, strip=False)
    note = forms.CharField(required=False, max_length=5000, strip=False)

    def __init__(self, *args, passage_ids=(), cited_ids=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["evidence_ids"].choices = [(pid, pid) for pid in passage_ids]
        self.cited_ids = list(cited_ids)
        for cited_id in self.cited_ids:
            self.fields[f"citation:{cited_id}"] = forms.ChoiceField(
                choices=[("", "—"), *CitationVerdict.choices], required=False
            )

    def label_data(self) -> dict:
        data = {
            name: self.cleaned_data[name]
            for name in (
                "support",
                "severity",
                "requires_evidence",
                "evidence_ids",
                "evidence_quote",
                "note",
            )
        }
        data["citations"] = {
            cited_id: self.cleaned_data[f"citation:{cited_id}"] for cited_id in self.cited_ids
        }
        return data


class AnswerLabelForm(DraftForm):
    relevance = forms.TypedChoiceField(
        choices=[("", "—"), (0, "0"), (1, "1"), (2, "2")],
        coerce=int,
        empty_value=None,
        required=False,
    )
    abstention = forms.ChoiceField(choices=[("", "—"), *Abstention.choices], required=False)
    failure_labels = forms.MultipleChoiceField(
        choices=[(f, f) for f in FAILURE_LABELS], required=False
    )
    note = forms.CharField(required=False, max_length=5000, strip=False)


class SkipForm(forms.Form):
    reason = forms.CharField(max_length=500, help_text="Why are you skipping this task?")


class FlagForm(forms.Form):
    """A reviewer's flag for the lead: a reason, and their words (required with "other",
    which the service checks)."""

    reason = forms.ChoiceField(
        choices=Flag.Reason.choices, widget=forms.RadioSelect, label="What is wrong?"
    )
    note = forms.CharField(
        required=False, max_length=2000, strip=False, label="In your words (a lead reads it)"
    )


class PreferencesForm(forms.Form):
    single_key_shortcuts = forms.BooleanField(
        required=False,
        label="Single-key shortcuts on the labelling screen",
        help_text="Letters and digits (1 2 3, j k, s, e …) act on the task. Turn them off if "
        "you use speech input or press keys by accident; Enter and the arrow keys still work.",
    )


class MyTasksFilterForm(forms.Form):
    """The filters of "Your tasks", from the query string: words of the question (or a task's
    number) and a status."""

    q = forms.CharField(required=False, max_length=200, label="Search")
    status = forms.ChoiceField(
        required=False,
        label="Status",
        choices=[("", "any"), ("in_progress", "in progress"), ("submitted", "submitted")],
    )

    def filters(self) -> dict[str, str | None]:
        """The valid filters (an unknown value filters nothing rather than failing)."""
        self.is_valid()
        data = self.cleaned_data
        return {"status": data.get("status") or None, "search": data.get("q") or ""}
