"""Lead pages for model judges: the runs, uploading one, a run's calibration against gold,
comparing two runs, one answer as judge and gold see it, and the few-shot download.

Thin views: parse the request, call evaluation.judges (writes) or evaluation.judge_reports
(reads), render. Every page is lead-only; anyone else gets 404 from `project_view`.
"""

from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotate.bundles import BundleInvalid
from annotate.models import Answer, Role
from annotate.uploads import validate_upload_size
from annotate.views import project_view
from evaluation import judge_reports
from evaluation.judges import import_judge_run, self_judged_counts
from evaluation.models import JudgeRun
from jobs import reports as stored_reports

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
        return judge_reports.DEFAULT_SPLIT


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


def _run_or_404(project, run_pk: int) -> JudgeRun:
    run = JudgeRun.objects.filter(project=project, pk=run_pk).select_related("imported_by").first()
    if run is None:
        raise Http404("Not found")
    run.project = project  # already loaded: saves the reports a query
    return run


def _confusion_rows(block: dict) -> list[tuple[str, list[int]]]:
    return list(zip(block["labels"], block["matrix"], strict=True))


def _runs_context(project, role, *, form=None, bundle_errors=None) -> dict:
    runs = list(
        JudgeRun.objects.filter(project=project).with_counts().select_related("imported_by")
    )
    counts = self_judged_counts(project, runs)
    for run in runs:
        run.n_self_judged = counts[run.pk]
    return {
        "project": project,
        "role": role,
        "runs": runs,
        "form": form or JudgeRunUploadForm(),
        "compare_form": CompareForm(runs=JudgeRun.objects.filter(project=project)),
        "bundle_errors": bundle_errors,
    }


@require_GET
@project_view(Role.LEAD)
def judges(request, project, role):
    return render(request, "evaluation/judges.html", _runs_context(project, role))


@require_POST
@project_view(Role.LEAD)
def judge_upload(request, project, role):
    form = JudgeRunUploadForm(request.POST, request.FILES)
    bundle_errors: BundleInvalid | None = None
    if form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            result = import_judge_run(
                lines=upload,
                project=project,
                name=form.cleaned_data["name"] or None,
                user=request.user,
                source_name=upload.name,
            )
        except BundleInvalid as exc:
            bundle_errors = exc
        else:
            messages.success(
                request, f"Imported judge run '{result.run.name}': {result.summary()}."
            )
            if result.self_judged:
                messages.warning(
                    request,
                    f"{result.self_judged} verdict(s) grade answers of the judge's own model.",
                )
            url = reverse("judge_run", kwargs={"slug": project.slug, "run_pk": result.run.pk})
            return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    context = _runs_context(project, role, form=form, bundle_errors=bundle_errors)
    if request.htmx:  # htmx swaps only 2xx responses
        return render(request, "evaluation/judges.html#upload-form", context)
    return render(request, "evaluation/judges.html", context, status=400)


@require_GET
@project_view(Role.LEAD)
def judge_run(request, project, role, run_pk):
    run = _run_or_404(project, run_pk)
    split_form = SplitForm(request.GET or None)
    stored = _calibration(project, run, split_form.chosen_split())
    if stored.pending:
        return stored_reports.pending_page(
            request,
            project=project,
            role=role,
            title=f"Calibration of {run.name}",
            current="judges",
        )
    report = stored.result
    context = {
        "stored": stored,
        "project": project,
        "role": role,
        "run": run,
        "split_form": split_form,
        "r": report,
        "confusion": _confusion_rows(report["confusion"] or report["binary"]["confusion"]),
        "relevance_confusion": _confusion_rows(report["relevance"]["confusion"]),
        "per_label": report["per_label"],
        "settings_json": json.dumps(run.settings, ensure_ascii=False, sort_keys=True),
    }
    if request.htmx:
        return render(request, "evaluation/judge_run.html#report", context)
    return render(request, "evaluation/judge_run.html", context)


@require_GET
@project_view(Role.LEAD)
def judge_run_json(request, project, role, run_pk):
    run = _run_or_404(project, run_pk)
    stored = _calibration(project, run, SplitForm(request.GET or None).chosen_split())
    if stored.pending:
        response = JsonResponse({"detail": "Being computed: ask again in a moment."}, status=202)
        response["Retry-After"] = "3"
        return response
    return JsonResponse(stored.result, json_dumps_params={"ensure_ascii": False, "indent": 2})


def _calibration(project, run: JudgeRun, split: str) -> stored_reports.Stored:
    """The run's calibration on `split`, as stored for the labels as they are (jobs.reports)."""
    return stored_reports.read(
        project=project, kind=stored_reports.Kind.CALIBRATION, key=f"{run.pk}:{split}"
    )


@require_GET
@project_view(Role.LEAD)
def judge_compare(request, project, role):
    runs = JudgeRun.objects.filter(project=project)
    form = CompareForm(request.GET or None, runs=runs)
    comparison = None
    if form.is_valid():
        comparison = judge_reports.compare_runs(
            run_a=form.cleaned_data["a"], run_b=form.cleaned_data["b"], split=form.chosen_split()
        )
    return render(
        request,
        "evaluation/judge_compare.html",
        {
            "project": project,
            "role": role,
            "form": form,
            "c": comparison,
            "run_count": runs.count(),
        },
    )


@require_GET
@project_view(Role.LEAD)
def judge_answer(request, project, role, run_pk, answer_pk):
    run = _run_or_404(project, run_pk)
    answer = Answer.objects.filter(project=project, pk=answer_pk).select_related("case").first()
    if answer is None:
        raise Http404("Not found")
    detail = judge_reports.answer_detail(run=run, answer=answer)
    return render(
        request,
        "evaluation/judge_answer.html",
        {"project": project, "role": role, "run": run, "d": detail},
    )


@require_GET
@project_view(Role.LEAD)
def judge_few_shot(request, project, role):
    examples = judge_reports.few_shot_examples(project)
    lines = (json.dumps(example, ensure_ascii=False) + "\n" for example in examples)
    response: HttpResponse = StreamingHttpResponse(lines, content_type="application/jsonl")
    filename = f"{project.slug}-judge-dev-examples.jsonl"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
