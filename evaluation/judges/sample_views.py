"""Drawing a calibration sample from a judge run's page (the lead's form); the run's page
shows the samples (evaluation.judges.views.judge_run)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from annotate.common.roles import project_view
from annotate.models import Role
from evaluation.judges.list_views import SampleForm
from evaluation.judges.samples import SampleRefused, design_summary, draw_sample
from evaluation.judges.views import _run_or_404


@require_POST
@project_view(Role.LEAD)
def draw_calibration_sample(request, project, role, run_pk):
    """Draw a sample and go back to the run's page, which lists it; a refused request comes
    back with every problem by field."""
    run = _run_or_404(project, run_pk)
    form = SampleForm(request.POST)
    back = redirect("judge_run", slug=project.slug, run_pk=run.pk)
    if not form.is_valid():
        for field, errors in form.errors.items():
            for error in errors:
                messages.error(request, f"{field}: {error}")
        return back
    data = form.cleaned_data
    try:
        design = draw_sample(
            run=run,
            budget=data["answers"],
            design=data["design"],
            seed=data["seed"],
            user=request.user,
        )
    except SampleRefused as exc:
        messages.error(request, str(exc))
        return back
    messages.success(request, design_summary(design, design.sample.count()))
    return back
