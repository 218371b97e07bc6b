"""The gold download's filters."""

from django import forms


class GoldExportForm(forms.Form):
    """The gold download's filters (GET): the same as export_gold's options."""

    item = forms.ChoiceField(
        choices=[("all", "claims and answers"), ("claim", "claims"), ("answer", "answers")],
        required=False,
        initial="all",
        help_text="Answer rows are the samples Ragas' EvaluationDataset reads.",
    )
    split = forms.ChoiceField(
        choices=[("all", "all"), ("judge_dev", "judge_dev"), ("judge_test", "judge_test")],
        required=False,
        initial="all",
        label="Judge split",
    )
    decided_only = forms.BooleanField(
        required=False, label="Decided only", help_text="Leave out rows a lead still has to decide."
    )
    with_context = forms.BooleanField(
        required=False,
        label="Claim rows with their answer's texts",
        help_text="Question, answer and passage texts on every claim row (large).",
    )

    def options(self) -> dict:
        data = self.cleaned_data
        return {
            "item": data.get("item") or "all",
            "split": data.get("split") or "all",
            "decided_only": bool(data.get("decided_only")),
            "with_context": bool(data.get("with_context")),
        }
