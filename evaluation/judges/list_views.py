"""The judges page (the project's runs, the upload and the compare form) and the upload's
answer. Nothing here computes a statistic: a worker that serves them does not import numpy's
statistics stack (scipy, scikit-learn, pandas) that the run and comparison pages need
(evaluation.judges.views); before the split, opening the judges page took a web worker from
80 to 204 MB and 1.2 s."""

from __future__ import annotations

from django import forms
from django.db.models.fields.json import KT
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from annotate.common import computed
from annotate.common.roles import project_view
from annotate.gold.splits import DEFAULT_SPLIT
from annotate.imports.lines import BundleInvalid
from annotate.imports.uploads import validate_upload_size
from annotate.models import ComputedReport, Role
from evaluation.judges.runs import self_judged_counts
from evaluation.judges.samples import DESIGNS, MAX_SEED
from evaluation.models import JudgeRun
from evaluation.report_kinds import CALIBRATION
from jobs import accept as jobs
from jobs import views as job_views
from jobs.models import Job

SPLIT_CHOICES = [
    ("judge_test", "judge_test (measuring)"),
    ("judge_dev", "judge_dev (prompt writing)"),
    ("all", "all gold"),
]


class JudgeRunUploadForm(forms.Form):
    file = forms.FileField(
        label="Judge run",
        help_text="JSONL: a run line, then one verdict per line (see docs/judge-runs.md).",
        widget=forms.ClearableFileInput(attrs={"accept": ".jsonl,.json,.ndjson,.txt"}),
        error_messages={"required": "Choose a judge-run file (.jsonl) to upload."},
        validators=[validate_upload_size],
    )
    name = forms.CharField(
        required=False,
        max_length=JudgeRun._meta.get_field("name").max_length,
        help_text="Empty: the file's `judge`. Give a new name to import a second run of it.",
    )


class SplitForm(forms.Form):
    split = forms.ChoiceField(choices=SPLIT_CHOICES, required=False)

    def chosen_split(self) -> str:
        if self.is_valid() and self.cleaned_data["split"]:
            return self.cleaned_data["split"]
        return DEFAULT_SPLIT


class StrataForm(forms.Form):
    """The run page's strata selector (`?by=slice|variant`); by default no strata are shown."""

    by = forms.ChoiceField(
        choices=[("", "none"), ("slice", "slice"), ("variant", "variant")],
        required=False,
        label="Strata by",
    )

    def chosen(self) -> str | None:
        if self.is_valid() and self.cleaned_data["by"]:
            return self.cleaned_data["by"]
        return None


class CompareForm(SplitForm):
    a = forms.ModelChoiceField(queryset=JudgeRun.objects.none(), label="Run A")
    b = forms.ModelChoiceField(queryset=JudgeRun.objects.none(), label="Run B")

    def __init__(self, *args, runs, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["a"].queryset = runs
        self.fields["b"].queryset = runs

    def clean(self):
        data = super().clean()
        if data.get("a") and data.get("a") == data.get("b"):
            raise forms.ValidationError("Choose two different runs.")
        return data


def _runs_context(project, role, *, form=None, bundle_errors=None) -> dict:
    runs = list(
        JudgeRun.objects.filter(project=project).with_counts().select_related("imported_by")
    )
    counts = self_judged_counts(project, runs)
    headlines = _headlines(project, runs)
    for run in runs:
        run.n_self_judged = counts[run.pk]
        run.headline = headlines.get(run.pk)
    return {
        "project": project,
        "role": role,
        "runs": runs,
        "form": form or JudgeRunUploadForm(),
        "compare_form": CompareForm(runs=JudgeRun.objects.filter(project=project)),
        "bundle_errors": bundle_errors,
    }


HEADLINE_FIELDS = {
    "n": "result__n",
    "kappa": "result__kappa",
    "low": "result__kappa_ci95__0",
    "high": "result__kappa_ci95__1",
    "accuracy": "result__accuracy",
}


def _headlines(project, runs) -> dict[int, dict]:
    """Each run's headline figures on the default split (n, kappa with its 95% interval,
    accuracy), read from the calibration a worker or a run's page already stored
    (annotate.common.computed): one query for the reports and one for the revision, the
    figures picked out by the database, nothing computed here and no report decoded whole. A
    run with none stored yet has no headline; one stored for earlier labels says so
    (`current` False)."""
    keys = {f"{run.pk}:{DEFAULT_SPLIT}": run.pk for run in runs}
    if not keys:
        return {}
    rows = (
        ComputedReport.objects.filter(
            project=project,
            kind=CALIBRATION,
            key__in=list(keys),
            computed_at__isnull=False,
            code_version=computed.CODE_VERSION,
        )
        .values("key", "revision", "computed_at")
        .annotate(**{name: KT(path) for name, path in HEADLINE_FIELDS.items()})
    )
    out = {}
    revision = None
    for row in rows:
        figures = {name: _number(row[name]) for name in HEADLINE_FIELDS}
        if figures["n"] is None:
            continue
        if revision is None:
            revision = computed.revisions(project)[0]
        out[keys[row["key"]]] = {
            **figures,
            "n": int(figures["n"]),
            "computed_at": row["computed_at"],
            "current": row["revision"] == revision,
        }
    return out


def _number(text) -> float | None:
    """A figure picked out of a stored report's JSON (text, or null)."""
    try:
        return None if text is None else float(text)
    except (TypeError, ValueError):
        return None


@require_GET
@project_view(Role.LEAD)
def judges(request, project, role):
    return render(request, "evaluation/judges.html", _runs_context(project, role))


@require_POST
@project_view(Role.LEAD)
def judge_upload(request, project, role):
    """A judge run's file is stored and imported by a worker, as bundles are: a run of 100,000
    verdicts takes seconds to check and write, too long to hold a request for. A run already
    imported when this answers (CLAIMDESK_TASKS=immediate, or a quick worker) goes straight to
    its page; a refused one shows every problem by line on the form."""
    form = JudgeRunUploadForm(request.POST, request.FILES)
    bundle_errors: BundleInvalid | None = None
    if form.is_valid():
        try:
            job = jobs.start_import(
                kind=Job.Kind.JUDGE_IMPORT,
                user=request.user,
                upload=form.cleaned_data["file"],
                slug=project.slug,
                project=project,
                params={"name": form.cleaned_data["name"]},
            )
        except jobs.EmptyUpload as exc:
            form.add_error("file", str(exc))
        else:
            response, bundle_errors = job_views.after_upload(request, job, form)
            if response is not None:
                return response
    context = _runs_context(project, role, form=form, bundle_errors=bundle_errors)
    if request.htmx:  # htmx swaps only 2xx responses
        return render(request, "evaluation/judges.html#upload-form", context)
    return render(request, "evaluation/judges.html", context, status=400)


class SampleForm(forms.Form):
    answers = forms.FloatField(
        label="Answers to draw (expected)",
        min_value=0,
        help_text="B: the sum of the inclusion probabilities; at most the frame's size.",
    )
    design = forms.ChoiceField(choices=[(d, d) for d in DESIGNS], initial="uniform")
    seed = forms.IntegerField(
        required=False, min_value=0, max_value=MAX_SEED, help_text="Empty: a random one."
    )

    def clean_answers(self):
        value = self.cleaned_data["answers"]
        if not value > 0:
            raise forms.ValidationError("Draw at least some answers: B must be above 0.")
        return value
