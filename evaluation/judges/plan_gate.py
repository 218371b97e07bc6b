"""The budget planner and the judge gate on a run's page (SPEC "Budget planner", "Judge
gate"): the form that asks for them (a half-width; a minimum kappa and a baseline run, as the
command's --plan, --min-kappa and --baseline), the stored plan with its chart, and the gate's
verdict.

The plan is a stored report (evaluation.report_kinds.CALIBRATION_PLAN), read as the run's
calibration is. The gate is computed in the request when asked for: it compares two runs on
gold (numpy and scipy, imported then), which only a lead who asks pays for."""

from __future__ import annotations

from django import forms

from annotate.common import computed
from evaluation.judges.samples import newest_sample
from evaluation.models import JudgeRun
from evaluation.report_kinds import CALIBRATION_PLAN
from evaluation.reports import charts
from evaluation.reports.plan_gate_params import (
    DEFAULT_HALF_WIDTH,
    check_half_width,
    plan_key,
)


class PlanGateForm(forms.Form):
    plan = forms.FloatField(
        required=False,
        label="Half-width",
        help_text="The 95% half-width to plan for, e.g. 0.05.",
        widget=forms.NumberInput(attrs={"step": "any", "min": "0", "max": "1"}),
    )
    min_kappa = forms.FloatField(
        required=False,
        label="Minimum kappa",
        min_value=-1,
        max_value=1,
        help_text="The gate fails when the lower end of the judge's 95% kappa interval is "
        "under it.",
        widget=forms.NumberInput(attrs={"step": "any"}),
    )
    baseline = forms.ModelChoiceField(
        queryset=JudgeRun.objects.none(),
        required=False,
        to_field_name="name",
        label="Not worse than",
        empty_label="(no baseline)",
    )

    def __init__(self, *args, runs, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["baseline"].queryset = runs

    def clean_plan(self):
        value = self.cleaned_data["plan"]
        if value is None:
            return None
        try:
            return check_half_width(value)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean(self):
        data = super().clean()
        if data.get("baseline") is not None and data.get("min_kappa") is None:
            self.add_error("min_kappa", "The baseline is part of the gate: give a minimum kappa.")
        return data

    def half_width(self) -> float:
        if self.is_valid() and self.cleaned_data["plan"] is not None:
            return self.cleaned_data["plan"]
        return DEFAULT_HALF_WIDTH


def plan_chart(plan: dict):
    """Expected half-width against answers labelled, the target and today's point."""
    now = plan["current"]
    current = (now["answers"], now["half_width"]) if now["half_width"] is not None else None
    return charts.half_width_curve(
        f"Expected 95% half-width against answers labelled, frame of {plan['frame_answers']} "
        "answers",
        [charts.CurvePoint(p["answers"], p["uniform"], p["active"]) for p in plan["curve"]],
        target=plan["half_width"],
        current=current,
    )


def plan_and_gate(request, *, project, run: JudgeRun, report: dict) -> dict:
    """The page's context for the planner and the gate sections."""
    runs = JudgeRun.objects.filter(project=project).exclude(pk=run.pk).order_by("name")
    form = PlanGateForm(request.GET or None, runs=runs)
    width = form.half_width()
    key = plan_key(run.pk, report["split"], width, newest_sample(run))
    stored = computed.read(project, CALIBRATION_PLAN, key)
    plan = None if stored.pending else stored.result
    gate = None
    if form.is_valid() and form.cleaned_data["min_kappa"] is not None:
        # late import: heavy library (memory) -- numpy and scipy, through the comparison
        from evaluation.reports.judge_gate import gate_report

        baseline = form.cleaned_data["baseline"]
        if baseline is not None:
            baseline.project = project
        gate = gate_report(
            run=run, report=report, min_kappa=form.cleaned_data["min_kappa"], baseline=baseline
        )
    return {
        "plan_form": form,
        "plan": plan,
        "plan_pending": stored.pending,
        "plan_chart": plan_chart(plan) if plan and plan["curve"] else None,
        "plan_rows": [("uniform", plan["uniform"]), ("active", plan["active"])] if plan else [],
        "gate": gate,
    }
