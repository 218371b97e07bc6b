"""The checks' forms: the project's check rate, and a file of answer ids to mark."""

from __future__ import annotations

from django import forms

MAX_CHECK_FILE = 5 * 1024 * 1024  # bytes: 100,000 answer ids of 50 characters


class CheckRateForm(forms.Form):
    check_rate = forms.FloatField(
        min_value=0,
        max_value=1,
        label="Check rate",
        help_text="The share of tasks the queue serves as gold checks, 0 (off) to 1: 0.1 is one "
        "task in ten. A check is a decided answer you marked on the Gold page; a reviewer who "
        "never labelled it gets it like any task, and cannot tell it from one.",
    )


class CheckFileForm(forms.Form):
    file = forms.FileField(
        label="A file of answer ids",
        help_text="One answer id a line (or a JSON object with answer_id); blank lines and "
        "lines starting with # are skipped. All or nothing: every problem is shown by its line.",
    )

    def clean_file(self):
        upload = self.cleaned_data["file"]
        if upload.size > MAX_CHECK_FILE:
            raise forms.ValidationError(
                f"The file is {upload.size:,} bytes; a check file is at most {MAX_CHECK_FILE:,}."
            )
        return upload
