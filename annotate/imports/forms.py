"""The upload forms: a new project's, and a project's upload page's. They check shapes (a
slug, a file, a label schema); who may import where is the services'."""

from __future__ import annotations

from django import forms

from annotate.imports.uploads import validate_upload_size
from annotate.models import Project
from annotate.projects.creation import SLUG_ERRORS
from annotate.schema import LabelSchema, SchemaInvalid


class BundleFileField(forms.FileField):
    default_error_messages = {
        "required": "Choose a bundle file (.jsonl) or a Ragas dataset to upload.",
        "empty": "The file is empty.",
    }
    default_validators = [validate_upload_size]


FORMATS = [
    ("bundle", "claimdesk bundle (JSONL)"),
    ("ragas", "Ragas evaluation dataset (JSONL or CSV)"),
]
ACCEPT = ".jsonl,.json,.ndjson,.txt,.csv"


class FormatFields(forms.Form):
    """What the uploaded file is: a claimdesk bundle, or a Ragas dataset, whose rows say
    nothing of the system that answered, so the lead names it."""

    format = forms.ChoiceField(
        choices=FORMATS,
        initial="bundle",
        required=False,  # scripts that post only a file keep sending bundles
        widget=forms.RadioSelect,
        label="File format",
        help_text="A Ragas dataset has the columns user_input, response, retrieved_contexts and "
        "optionally retrieved_context_ids and reference (docs/ragas.md).",
    )
    variant = forms.CharField(
        max_length=200,
        required=False,
        label="Variant",
        help_text="The system that wrote the responses of the Ragas dataset, e.g. dense-k5.",
    )
    variant.required_when = "format=ragas"  # _field.html: shown and required only then
    label_schema = forms.CharField(
        required=False,
        label="Label schema",
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false"}),
        help_text='Optional, as a bundle header\'s label_schema (JSON), e.g. {"support": '
        '"binary", "claim_fields": [], "answer_fields": []}. Empty: the project\'s schema '
        "stays as it is (a new project's: everything on). Locked once labelling opens.",
    )
    label_schema.shown_when = "format=ragas"  # a bundle gives its schema in its header

    def clean_label_schema(self) -> LabelSchema | None:
        text = self.cleaned_data.get("label_schema", "").strip()
        if not text:
            return None
        try:
            return LabelSchema.from_json(text)
        except SchemaInvalid as exc:
            raise forms.ValidationError(exc.problems) from exc

    def clean(self):
        data = super().clean()
        data["format"] = data.get("format") or "bundle"
        if data["format"] == "ragas" and not data.get("variant", "").strip():
            self.add_error("variant", "Name the system that wrote these responses.")
        if data["format"] != "ragas":
            # Hidden unless the file is a Ragas dataset: what was typed there before another
            # format was chosen is not the bundle's (a bundle's schema is in its header).
            self.errors.pop("label_schema", None)
            data["label_schema"] = None
        return data


class NewProjectForm(FormatFields):
    field_order = ["slug", "name", "format", "variant", "label_schema", "file"]
    slug = forms.SlugField(
        max_length=Project._meta.get_field("slug").max_length,
        error_messages=SLUG_ERRORS,
        help_text="Short name for URLs and commands, e.g. physics-2026 (letters, digits, hyphens).",
    )
    name = forms.CharField(
        max_length=Project._meta.get_field("name").max_length,
        required=False,
        help_text="Shown to everyone in the project. Empty: the bundle header's name (for a "
        "Ragas dataset, the slug).",
    )
    file = BundleFileField(
        label="File",
        help_text="A bundle: UTF-8 JSONL, one object per line: a bundle header, variants, "
        "passages, cases and answers (docs/bundle-format.md in the claimdesk repository). Or a "
        "Ragas dataset as EvaluationDataset.to_jsonl or to_csv writes it.",
        widget=forms.ClearableFileInput(attrs={"accept": ACCEPT}),
    )


class UploadForm(FormatFields):
    field_order = [
        "format",
        "variant",
        "label_schema",
        "source",
        "file",
        "replace",
        "confirm_deletions",
        "replace_gold",
    ]
    format = forms.ChoiceField(
        choices=[
            *FORMATS,
            ("labels", "Reviewers' labels made elsewhere (JSONL, once labelling is open)"),
            (
                "gold",
                "Gold from elsewhere: one adjudicated label per answer, as a benchmark ships "
                "it (JSONL, once labelling is open)",
            ),
        ],
        initial="bundle",
        required=False,
        widget=forms.RadioSelect,
        label="File format",
        help_text=FormatFields.base_fields["format"].help_text
        + " Labels: one line per reviewer and answer (docs/bundle-format.md). Gold: one line "
        "per answer in the same format without reviewer.",
    )
    source = forms.CharField(
        max_length=200,
        required=False,
        label="Source of the gold",
        help_text="Where these labels come from, kept with every gold row they give: a "
        "benchmark's name, an expert, an earlier campaign.",
    )
    source.required_when = "format=gold"  # _field.html: shown and required only then
    file = BundleFileField(
        label="File",
        help_text="Rows already in the project with the same content are skipped.",
        widget=forms.ClearableFileInput(attrs={"accept": ACCEPT}),
    )
    replace = forms.BooleanField(
        required=False,
        label="Replace unlabelled items",
        help_text="Overwrite rows whose content changed, as long as nobody has labelled them.",
    )
    confirm_deletions = forms.BooleanField(
        required=False,
        label="Yes, delete what this replace deletes",
        help_text="A replace that deletes answers (with their claims and judge verdicts) lists "
        "them first and goes on only when this is ticked.",
    )
    replace_gold = forms.BooleanField(
        required=False,
        label="Replace imported gold",
        help_text="An answer that already holds other imported gold takes this file's; "
        "without it such a line is refused.",
    )
    replace_gold.shown_when = "format=gold"  # _field.html: shown only then

    def clean(self):
        data = super().clean()
        if data["format"] == "gold" and not data.get("source", "").strip():
            self.add_error("source", "Name where this gold comes from.")
        return data
