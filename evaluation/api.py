"""Lead-only API endpoints for the numbers: agreement, evaluation and variant comparison,
model-judge runs and their calibration. Thin wrappers over evaluation.reports and
evaluation.judges.runs; the JSON they return is the same as the management commands' `--json`."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response

from annotate.api.base import (
    ERROR_400,
    LINE_ERRORS_400,
    TOO_LARGE_413,
    UPLOAD_PARSERS,
    FilePart,
    LeadView,
    ListView,
    TextField,
    line_errors,
    query,
    responses,
    start_import,
    upload_file,
    upload_lines,
)
from annotate.common import computed
from annotate.gold.splits import DEFAULT_SPLIT, SPLITS
from annotate.imports.lines import BundleInvalid
from evaluation.clearances import NotAReviewer, NothingToClear, clear_drift
from evaluation.judges.runs import import_judge_run, self_judged_counts
from evaluation.judges.samples import (
    DESIGNS,
    MAX_SEED,
    SampleRefused,
    design_estimates,
    designs_of,
    draw_sample,
    newest_sample,
    sample_rows,
)
from evaluation.models import CalibrationDesign, JudgeRun
from evaluation.report_kinds import (
    AGREEMENT,
    CALIBRATION,
    CALIBRATION_PLAN,
    EVALUATION,
    REVIEWERS,
    agreement_key,
)
from evaluation.reports.comparison import compare
from evaluation.reports.dataset import AGREEMENT_SLICES, SLICES
from evaluation.reports.evaluation import evaluate
from evaluation.reports.limits import variant_limits
from evaluation.reports.plan_gate_params import check_half_width, plan_key
from evaluation.reports.strata import BY, with_strata
from jobs.models import Job
from jobs.serializers import ACCEPTED_202

REPORT = OpenApiResponse(
    OpenApiTypes.OBJECT, description="The report, as the management command's --json prints it."
)

# --- Serializers -----------------------------------------------------------------------------


class AgreementQuerySerializer(serializers.Serializer):
    slice = serializers.ChoiceField(choices=AGREEMENT_SLICES, required=False)
    guideline_version = serializers.IntegerField(
        min_value=0,
        required=False,
        help_text="Only the label sets made under this version of the guidelines (0: before "
        "any were written); the report then says which in `guideline_version`.",
    )


class FieldAgreementSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    raw_agreement = serializers.FloatField(allow_null=True)
    kappa = serializers.FloatField(allow_null=True, help_text="Null where it is undefined.")
    weighting = serializers.CharField(allow_null=True)
    confusion = serializers.DictField(help_text="labels; matrix rows A, columns B.")


class AgreementSerializer(serializers.Serializer):
    project = serializers.SlugField()
    slices = serializers.DictField(
        child=serializers.DictField(child=serializers.DictField()),
        help_text="Slice -> field -> agreement (n, raw_agreement, kappa, weighting, ci95, "
        "confusion). Where some answer has more than two label sets, each field also carries "
        "raters (the most label sets on one item), alpha and alpha_ci95 (Krippendorff's, over "
        "every label set; alpha_n items), and nominal fields fleiss_kappa (over the fleiss_n "
        "items with exactly `raters` label sets) with fleiss_ci95.",
    )
    pairs = serializers.ListField(
        child=serializers.DictField(),
        help_text="Per reviewer pair (every pair that shares an item, on every item both "
        "labelled): reviewers, each field's agreement, identical_label_sets "
        "(the two label sets are the same on every item they share) and, when they are, "
        "identical_label_sets_note saying so.",
    )
    identical_label_sets = serializers.BooleanField(
        help_text="Some pair's two label sets are identical on every item they share: one "
        "label set imported twice under two names, not two reviewers."
    )
    guideline_version = serializers.IntegerField(
        allow_null=True,
        help_text="The guidelines version whose label sets the figures are over; null: all.",
    )
    gold_without_second_reviewer = serializers.DictField(
        help_text="Gold items imported from elsewhere with no second reviewer, so in no "
        "agreement figure: answers, claims, and the sources they came from."
    )


def _ks(value: str) -> list[int]:
    try:
        ks = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        message = "A comma-separated list of integers, e.g. 1,3,5,10."
        raise serializers.ValidationError(message) from None
    if not ks or any(k < 1 or k > 1000 for k in ks):
        raise serializers.ValidationError("Every k is an integer from 1 to 1000.")
    return ks


class EvaluationQuerySerializer(serializers.Serializer):
    k = serializers.CharField(
        required=False, default="1,3,5,10", help_text="Cut-offs, comma-separated."
    )
    variant = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        help_text="Repeat to choose variants; all by default.",
    )
    slice = serializers.ChoiceField(choices=SLICES, required=False)
    latency_budget_ms = serializers.FloatField(required=False, min_value=0)
    unsupported_limit = serializers.FloatField(required=False, min_value=0, max_value=1)

    def validate_k(self, value: str) -> list[int]:
        return _ks(value)


class CompareQuerySerializer(serializers.Serializer):
    a = serializers.CharField(max_length=200, help_text="The variant before.")
    b = serializers.CharField(max_length=200, help_text="The variant after.")
    k = serializers.IntegerField(required=False, default=5, min_value=1, max_value=1000)


class JudgeRunSerializer(serializers.ModelSerializer):
    imported_by = serializers.CharField(
        source="imported_by.username",
        default=None,
        allow_null=True,
        help_text="Who uploaded it; null for a run imported with the import_judge_run command.",
    )
    verdicts = serializers.IntegerField(source="n_verdicts")
    ok = serializers.IntegerField(source="n_ok")
    malformed = serializers.IntegerField(source="n_malformed")
    timeouts = serializers.IntegerField(source="n_timeout")
    quotes_not_found = serializers.IntegerField(source="n_quote_not_found")
    self_judged = serializers.IntegerField(
        source="n_self_judged", help_text="Verdicts about answers of the judge's own model."
    )

    class Meta:
        model = JudgeRun
        fields = [
            "id",
            "name",
            "model",
            "model_version",
            "prompt_sha256",
            "settings",
            "source_name",
            "imported_at",
            "imported_by",
            "verdicts",
            "ok",
            "malformed",
            "timeouts",
            "quotes_not_found",
            "self_judged",
        ]


class JudgeRunFilterSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, max_length=200)
    model = serializers.CharField(required=False, max_length=255)


class JudgeRunUploadSerializer(serializers.Serializer):
    file = FilePart(help_text="JSONL: a run line, then one verdict per line.")
    name = TextField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Empty: the file's `judge`. A new name imports a second run of it.",
    )


class JudgeRunNameSerializer(serializers.Serializer):
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)


class JudgeRunImportSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="run.pk")
    name = serializers.CharField(source="run.name")
    verdicts = serializers.IntegerField()
    claim_verdicts = serializers.IntegerField()
    ok = serializers.IntegerField()
    malformed = serializers.IntegerField()
    timeouts = serializers.IntegerField()
    quotes_not_found = serializers.IntegerField()
    self_judged = serializers.IntegerField()


class CalibrationQuerySerializer(serializers.Serializer):
    split = serializers.ChoiceField(choices=SPLITS, required=False, default=DEFAULT_SPLIT)
    by = serializers.ChoiceField(
        choices=BY,
        required=False,
        help_text="Strata: PPI++ per slice (answerable, unanswerable, adversarial) or per "
        "variant, and the stratified estimate, as `by`, `strata` and `stratified`.",
    )


class PlanGateQuerySerializer(serializers.Serializer):
    """The budget planner's and the judge gate's query parameters (SPEC "Budget planner",
    "Judge gate"), as `calibration --plan WIDTH --min-kappa K --baseline NAME`."""

    plan = serializers.FloatField(
        required=False,
        help_text="Budget planner: a 95% half-width in (0, 1), e.g. 0.05. The response then "
        "carries `plan`.",
    )
    min_kappa = serializers.FloatField(
        required=False,
        min_value=-1,
        max_value=1,
        help_text="Judge gate: fails when the lower end of the judge's 95% kappa interval is "
        "under this bound. The response then carries `gate: {passed, reasons, …}`.",
    )
    baseline = serializers.CharField(
        required=False,
        help_text="Judge gate: the name of another judge run of the project; fails too when "
        "an exact McNemar test on the gold items both scored finds this judge worse at 5%. "
        "Needs min_kappa.",
    )

    def validate_plan(self, value: float) -> float:
        try:
            return check_half_width(value)
        except ValueError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def validate(self, data: dict) -> dict:
        if "baseline" in data and "min_kappa" not in data:
            raise serializers.ValidationError(
                {"baseline": ["The baseline is part of the judge gate: give min_kappa too."]}
            )
        return data


class RoganGladenSerializer(serializers.Serializer):
    refused = serializers.CharField(
        required=False,
        help_text="Present instead of an estimate, saying why: a gold class missing, no "
        "target, TPR + TNR ≤ 1, or a 95% interval of TPR + TNR − 1 that reaches below 0.05 (a "
        "judge that close to chance gives no usable correction).",
    )
    estimate = serializers.FloatField(required=False, help_text="Clipped to [0, 1].")
    ci95 = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        required=False,
        help_text="Percentile bootstrap over the n gold items and the target, seeded.",
    )
    clipped = serializers.BooleanField(
        required=False,
        help_text="True when the formula's value or an end of its bootstrap interval left [0, 1].",
    )
    unclipped = serializers.FloatField(required=False, help_text="The formula's own value.")
    unclipped_ci95 = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        required=False,
        help_text="The bootstrap interval of the formula's own values, before clipping.",
    )
    youden = serializers.FloatField(required=False, help_text="TPR + TNR − 1 on the gold items.")
    youden_ci95 = serializers.ListField(
        child=serializers.FloatField(),
        required=False,
        help_text="Its 95% interval, from the same bootstrap resamples of the gold items.",
    )
    n_boot = serializers.IntegerField(required=False)
    skipped = serializers.IntegerField(required=False)


class UnclippedSerializer(serializers.Serializer):
    estimate = serializers.FloatField()
    ci95 = serializers.ListField(child=serializers.FloatField())


class ShareSerializer(serializers.Serializer):
    """A share's estimate with its 95% interval, clipped to [0, 1] and saying so."""

    refused = serializers.CharField(required=False, help_text="Present instead, saying why.")
    estimate = serializers.FloatField(required=False, allow_null=True, help_text="In [0, 1].")
    ci95 = serializers.ListField(
        child=serializers.FloatField(), required=False, allow_null=True, help_text="In [0, 1]."
    )
    clipped = serializers.BooleanField(
        required=False, help_text="True when the estimate or an end of its interval left [0, 1]."
    )
    unclipped = UnclippedSerializer(
        required=False, help_text="Present when clipped: the estimate and interval before."
    )


class PPISerializer(ShareSerializer):
    """Classic PPI: θ ± 1.96 standard errors, sample variances."""


# `lambda` is the SPEC's key and a Python keyword: the class is built with it as a field.
PPIPlusPlusSerializer = type(ShareSerializer)(
    "PPIPlusPlusSerializer",
    (ShareSerializer,),
    {
        "__module__": __name__,
        "__doc__": "PPI++ (ppi_py, lam=None, alpha=0.05): the headline corrected share.",
        "lambda": serializers.FloatField(
            required=False, help_text="The power-tuning λ: 0 the gold-only mean, 1 classic PPI."
        ),
        "n": serializers.IntegerField(required=False, help_text="Gold items."),
        "target_n": serializers.IntegerField(required=False, help_text="Target claims."),
    },
)


class StratumSerializer(ShareSerializer):
    name = serializers.CharField(help_text="The slice or the variant.")
    n = serializers.IntegerField(help_text="Gold items in the stratum.")
    target_n = serializers.IntegerField(help_text="Target claims in the stratum (N_h).")


class CorrectedSerializer(serializers.Serializer):
    target_n = serializers.IntegerField()
    p_obs = serializers.FloatField(allow_null=True)
    excluded = serializers.DictField(child=serializers.IntegerField())
    provisional = serializers.BooleanField()
    provisional_reason = serializers.CharField(allow_null=True)
    ppi_plus_plus = PPIPlusPlusSerializer()
    ppi = PPISerializer()
    rogan_gladen = RoganGladenSerializer()
    three_way = serializers.DictField(
        required=False,
        help_text="Three-way projects only: contradicted and insufficient_evidence, each "
        "a PPI++ share as ppi_plus_plus is (the mean of its indicator); or refused.",
    )


class CalibrationSerializer(serializers.Serializer):
    judge = serializers.CharField()
    split = serializers.CharField()
    n = serializers.IntegerField()
    malformed = serializers.IntegerField()
    timeouts = serializers.IntegerField()
    coverage = serializers.FloatField(allow_null=True)
    accuracy = serializers.FloatField(allow_null=True)
    kappa = serializers.FloatField(allow_null=True)
    human_kappa = serializers.FloatField(allow_null=True)
    gold_items = serializers.IntegerField(help_text="Gold claims in the split.")
    gold_sources = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="The gold items by where their gold came from: agreed, adjudicated, "
        "imported (from elsewhere, no second reviewer).",
    )
    tpr = serializers.FloatField(allow_null=True)
    tnr = serializers.FloatField(allow_null=True)
    confusion = serializers.DictField(help_text="labels; matrix rows gold, columns judge.")
    corrected = CorrectedSerializer()
    disagreements = serializers.ListField(child=serializers.DictField())
    strata_by = serializers.DictField(
        help_text="slice and variant: each {strata, stratified} as `by` gives them."
    )
    by = serializers.CharField(required=False, help_text="The strata asked for (`?by=`).")
    strata = StratumSerializer(
        many=True, required=False, help_text="With `?by=`: PPI++ within each stratum."
    )
    stratified = ShareSerializer(
        required=False, help_text="With `?by=`: Σ w_h θ_h, w_h = N_h / N, Var Σ w_h² Var_h."
    )
    plan = serializers.DictField(
        required=False,
        help_text="With ?plan=WIDTH: half_width, uniform and active ({answers, claims, "
        "expected_half_width, expected_ci95, planned} or null), active_unavailable, "
        "planned_sample (the newest calibration sample), current (today's estimate and "
        "half-width: the newest sample's design estimate, else PPI++), curve (expected "
        "half-width against answers labelled), refused (why no plan, or null).",
    )
    gate = serializers.DictField(
        required=False,
        help_text="With ?min_kappa=K[&baseline=NAME]: passed, reasons (one per check), "
        "summary, min_kappa, kappa_lower, kappa_scale, baseline ({judge, scale, items, "
        "candidate_only, baseline_only, p_value, worse} or null).",
    )


# --- Views -----------------------------------------------------------------------------------

BEING_COMPUTED_202 = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description="Nothing is stored for this project's labels yet and a worker is computing "
    "it: ask again after Retry-After seconds.",
)


def being_computed() -> Response:
    return Response(
        {"detail": "A worker is computing this report: ask again in a moment."},
        status=status.HTTP_202_ACCEPTED,
        headers={"Retry-After": "3"},
    )


def with_freshness(response: Response, stored) -> Response:
    """When the stored report was computed, and whether the labels have changed since (a
    worker is then computing it again): Report-Computed-At and Report-Current headers."""
    response["Report-Computed-At"] = stored.computed_at.isoformat()
    response["Report-Current"] = "true" if stored.fresh else "false"
    return response


class Agreement(LeadView):
    @extend_schema(
        tags=["reports"],
        summary="Inter-reviewer agreement per field, slice and reviewer pair",
        description="Read from the report stored for the labels as they are (headers "
        "Report-Computed-At and Report-Current say how fresh it is); 202 while a worker "
        "computes the first one of a large project.",
        parameters=[AgreementQuerySerializer],
        responses=responses({200: AgreementSerializer, 202: BEING_COMPUTED_202}, r400=ERROR_400),
    )
    def get(self, request, slug):
        filters = query(AgreementQuerySerializer, request)
        version = filters.get("guideline_version")
        if version is not None and version > self.project.guidelines_version:
            raise serializers.ValidationError(
                {
                    "guideline_version": [
                        f"This project's guidelines are at v{self.project.guidelines_version}."
                    ]
                }
            )
        stored = computed.read(self.project, AGREEMENT, agreement_key(version))
        if stored.pending:
            return being_computed()
        report = stored.result
        if "slice" in filters:  # a copy: the stored result is shared with other readers
            report = {**report, "slices": {filters["slice"]: report["slices"][filters["slice"]]}}
        return with_freshness(Response(report), stored)


class ReviewersSerializer(serializers.Serializer):
    project = serializers.SlugField()
    fields = serializers.ListField(
        child=serializers.CharField(), help_text="The fields of kappa and check accuracy."
    )
    target_error_rate = serializers.FloatField(help_text="The drift chart's reference rate.")
    drift_design = serializers.DictField(
        help_text=(
            "The drift chart: reference_rate, detects_rate (a doubling), claims_per_check (each "
            "claim one trial), false_flag_rate (P(flag within horizon_checks checks) at the "
            "reference rate, at most 0.05), detection (P(flag within detection_checks checks) "
            "at detects_rate) and in_control_run_length (checks)."
        )
    )
    reviewers = serializers.ListField(
        child=serializers.DictField(),
        help_text="Per reviewer: username, tasks, seconds_per_claim {median, p90, n}, per_day, "
        "overruled_share (with overruled and adjudicated_fields), checks {n, accuracy {FIELD: "
        "{value, ci95, n, correct, kappa, kappa_ci95}}}, drift {flag, checks, alarms, trials, "
        "start, earlier_alarms, cleared}, kappa_with {USERNAME: {FIELD: {n, kappa, ci95 ...}}}; "
        "undefined names the reason of each null rate. drift runs from trial `start` (where a "
        "lead last cleared the flag: `cleared` {by, at, trials}, or null when never cleared); "
        "`flag` is up only for an alarm after it, `earlier_alarms` counts those before.",
    )


class ClearDriftSerializer(serializers.Serializer):
    trials = serializers.IntegerField(
        required=False,
        min_value=0,
        help_text="The reviewer's check claims (drift.trials) you saw when deciding to clear; "
        "the chart restarts after them. By default all of them now.",
    )


class DriftClearedSerializer(serializers.Serializer):
    username = serializers.CharField()
    trials = serializers.IntegerField(help_text="Cleared after this many of their check claims.")
    cleared_by = serializers.CharField()
    cleared_at = serializers.DateTimeField()
    earlier_alarms = serializers.IntegerField(help_text="Alarms the chart raised before it.")


class Reviewers(LeadView):
    @extend_schema(
        tags=["reports"],
        summary="Per reviewer: operations, accuracy on gold checks, drift, kappa with co-reviewers",
        description="The `reviewers --json` report, read from the one stored for the labels as "
        "they are (headers Report-Computed-At and Report-Current); 202 while a worker computes "
        "the first one of a large project.",
        responses=responses({200: ReviewersSerializer, 202: BEING_COMPUTED_202}),
    )
    def get(self, request, slug):
        stored = computed.read(self.project, REVIEWERS)
        if stored.pending:
            return being_computed()
        return with_freshness(Response(stored.result), stored)


class ClearDrift(LeadView):
    @extend_schema(
        tags=["reports"],
        summary="Clear a reviewer's drift flag: the lead has dealt with it",
        description="Records that you saw `trials` of the reviewer's check claims (by default "
        "all of them): the drift chart restarts at 0 after them and the flag is up again only "
        "for a later alarm; `reviewers/` shows who cleared it when (`drift.cleared`) once the "
        "stored report is computed again (this moves the project's revision). 400 at "
        "`username` when their flag is not up, at `trials` for a count they have not made; "
        "404 for a name that is no reviewer of the project.",
        parameters=[
            OpenApiParameter("username", str, OpenApiParameter.PATH, description="A reviewer.")
        ],
        request=ClearDriftSerializer,
        responses=responses(DriftClearedSerializer, r400=ERROR_400),
    )
    def post(self, request, slug, username):
        body = ClearDriftSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            done = clear_drift(
                project=self.project,
                lead=request.user,
                username=username,
                trials=body.validated_data.get("trials"),
            )
        except NotAReviewer as exc:
            raise NotFound(str(exc)) from exc
        except NothingToClear as exc:
            raise ValidationError({exc.field: [str(exc)]}) from exc
        clearance = done.clearance
        return Response(
            {
                "username": username,
                "trials": clearance.trials,
                "cleared_by": request.user.get_username(),
                "cleared_at": clearance.cleared_at,
                "earlier_alarms": done.earlier_alarms,
            }
        )


class Evaluation(LeadView):
    @extend_schema(
        tags=["reports"],
        summary="Retrieval and generation metrics per variant and slice",
        description="With `latency_budget_ms` and/or `unsupported_limit`, `limits` marks "
        "which variants meet them. Without `k` and `variant` the report is read from the one "
        "stored for the labels as they are (headers Report-Computed-At and Report-Current; 202 "
        "while a worker computes the first one of a large project).",
        parameters=[EvaluationQuerySerializer],
        responses=responses({200: REPORT, 202: BEING_COMPUTED_202}, r400=ERROR_400),
    )
    def get(self, request, slug):
        data = EvaluationQuerySerializer(
            data={**request.query_params.dict(), "variant": request.query_params.getlist("variant")}
        )
        data.is_valid(raise_exception=True)
        filters = data.validated_data
        stored = None
        if "k" not in request.query_params and not filters.get("variant"):
            # The default report is the one the page shows: stored per state of the labels.
            stored = computed.read(self.project, EVALUATION)
            if stored.pending:
                return being_computed()
            # Shared with this process's other readers: what is changed below is copied.
            report = {
                **stored.result,
                "variants": {name: dict(v) for name, v in stored.result["variants"].items()},
            }
        else:
            try:
                report = evaluate(
                    self.project, ks=filters["k"], variants=filters.get("variant") or None
                )
            except ValueError as exc:
                raise ValidationError({"variant": [str(exc)]}) from exc
        budget, limit = filters.get("latency_budget_ms"), filters.get("unsupported_limit")
        if budget is not None or limit is not None:
            report["limits"] = variant_limits(
                report, latency_budget_ms=budget, unsupported_limit=limit
            )
        if "slice" in filters:
            for variant in report["variants"].values():
                for part in ("retrieval", "generation", "stages"):
                    if variant.get(part) is None:  # not available in this project
                        continue
                    variant[part] = {
                        name: value
                        for name, value in variant[part].items()
                        if name == filters["slice"]
                    }
        return with_freshness(Response(report), stored) if stored else Response(report)


class Comparison(LeadView):
    @extend_schema(
        tags=["reports"],
        summary="Variant a against variant b, cases paired: fixed, broken, unchanged",
        parameters=[CompareQuerySerializer],
        responses=responses(REPORT, r400=ERROR_400),
    )
    def get(self, request, slug):
        filters = query(CompareQuerySerializer, request)
        try:
            comparison = compare(self.project, filters["a"], filters["b"], k=filters["k"])
        except ValueError as exc:
            raise ValidationError({"b": [str(exc)]}) from exc
        return Response(comparison)


def _with_self_judged(project, runs: list[JudgeRun]) -> list[JudgeRun]:
    counts = self_judged_counts(project, runs)
    for run in runs:
        run.n_self_judged = counts[run.pk]
    return runs


class JudgeRuns(ListView, LeadView):
    serializer_class = JudgeRunSerializer
    parser_classes = UPLOAD_PARSERS

    def get_queryset(self):
        filters = query(JudgeRunFilterSerializer, self.request)
        runs = (
            JudgeRun.objects.filter(project=self.project)
            .with_counts()
            .select_related("imported_by")
            .order_by("-imported_at", "name", "pk")
        )
        if "name" in filters:
            runs = runs.filter(name=filters["name"])
        if "model" in filters:
            runs = runs.filter(model=filters["model"])
        return runs

    def paginate_queryset(self, queryset):
        page = super().paginate_queryset(queryset)
        return None if page is None else _with_self_judged(self.project, page)

    @extend_schema(
        tags=["judges"],
        summary="The project's model-judge runs",
        parameters=[JudgeRunFilterSerializer],
        responses=responses(JudgeRunSerializer(many=True), r400=ERROR_400),
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["judges"],
        summary="Import a judge run (JSONL)",
        description="A multipart upload (`file`, `name`), or the run itself as the body "
        "(`application/x-ndjson`, `?name=`). All or nothing; a name already used is an error. "
        "Imported in the request (201 and the run) unless the request says "
        "`Prefer: respond-async`: then a worker imports it (202 and the job to poll; a "
        "refused file ends the job `failed` with every problem by line, and a finished "
        "job's `result.run` is the run's id), as the browser's upload does. A run of "
        "100,000 verdicts takes seconds to import: past a proxy's timeout on a busy server.",
        request={
            "multipart/form-data": JudgeRunUploadSerializer,
            "application/x-ndjson": OpenApiTypes.BINARY,
        },
        parameters=[
            OpenApiParameter("name", str, description="With a raw JSONL body."),
            OpenApiParameter(
                "Prefer",
                str,
                OpenApiParameter.HEADER,
                description="`respond-async`: import it with a worker (RFC 7240).",
            ),
        ],
        responses=responses(
            {201: JudgeRunImportSerializer, 202: ACCEPTED_202},
            r400=LINE_ERRORS_400,
            r413=TOO_LARGE_413,
        ),
    )
    def post(self, request, slug):
        if prefers_async(request):
            upload, data = upload_file(request, JudgeRunUploadSerializer)
            if not data:
                data = query(JudgeRunNameSerializer, request)
            response = start_import(
                kind=Job.Kind.JUDGE_IMPORT,
                user=request.user,
                upload=upload,
                slug=self.project.slug,
                project=self.project,
                params={"name": data.get("name") or ""},
            )
            response["Preference-Applied"] = "respond-async"
            return response
        lines, data = upload_lines(request, JudgeRunUploadSerializer)
        if not data:
            data = query(JudgeRunNameSerializer, request)
        upload = data.get("file")
        try:
            result = import_judge_run(
                lines=lines,
                project=self.project,
                name=data.get("name") or None,
                user=request.user,
                source_name=getattr(upload, "name", "") or "api",
            )
        except BundleInvalid as exc:
            return line_errors(exc)
        return Response(JudgeRunImportSerializer(result).data, status=status.HTTP_201_CREATED)


def prefers_async(request) -> bool:
    """Whether the request's Prefer header (RFC 7240) holds respond-async."""
    return any(
        preference.split(";")[0].strip().lower() == "respond-async"
        for preference in request.headers.get("Prefer", "").split(",")
    )


RUN_ID = OpenApiParameter("run_id", int, OpenApiParameter.PATH, description="The run's id.")


class JudgeRunView(LeadView):
    def run(self, run_id: int) -> JudgeRun:
        run = (
            JudgeRun.objects.filter(project=self.project, pk=run_id)
            .with_counts()
            .select_related("imported_by", "project")
            .first()
        )
        if run is None:
            raise NotFound()
        return run


class JudgeRunDetail(JudgeRunView):
    @extend_schema(
        tags=["judges"],
        summary="One judge run",
        parameters=[RUN_ID],
        responses=responses(JudgeRunSerializer),
    )
    def get(self, request, slug, run_id):
        run = _with_self_judged(self.project, [self.run(run_id)])[0]
        return Response(JudgeRunSerializer(run).data)


class Calibration(JudgeRunView):
    @extend_schema(
        tags=["judges"],
        summary="The judge against gold: accuracy, kappa, TPR/TNR, corrected prevalence",
        description="Read from the report stored for the labels as they are (headers "
        "Report-Computed-At and Report-Current say how fresh it is); 202 while a worker "
        "computes the first one of a large project.",
        parameters=[RUN_ID, CalibrationQuerySerializer, PlanGateQuerySerializer],
        responses=responses({200: CalibrationSerializer, 202: BEING_COMPUTED_202}, r400=ERROR_400),
    )
    def get(self, request, slug, run_id):
        filters = query(CalibrationQuerySerializer, request)
        extras = query(PlanGateQuerySerializer, request)
        run = self.run(run_id)
        stored = computed.read(self.project, CALIBRATION, f"{run.pk}:{filters['split']}")
        if stored.pending:
            return being_computed()
        report = with_strata(stored.result, filters.get("by"))
        result = plan_and_gate(self.project, run, report, extras)
        if result is None:
            return being_computed()
        return with_freshness(Response(result), stored)


def plan_and_gate(project, run: JudgeRun, report: dict, extras: dict) -> dict | None:
    """The calibration report with `plan` (stored, as the run's page reads it) and `gate`
    (computed here: a comparison with the baseline) when asked; None while a worker computes
    the plan."""
    if "plan" in extras:
        key = plan_key(run.pk, report["split"], extras["plan"], newest_sample(run))
        stored_plan = computed.read(project, CALIBRATION_PLAN, key)
        if stored_plan.pending:
            return None
        report = {**report, "plan": stored_plan.result}
    if "min_kappa" in extras:
        # late import: heavy library (memory) -- numpy and scipy, through the comparison
        from evaluation.reports.judge_gate import gate_report

        baseline = None
        if "baseline" in extras:
            baseline = (
                JudgeRun.objects.filter(project=project, name=extras["baseline"])
                .exclude(pk=run.pk)
                .first()
            )
            if baseline is None:
                raise ValidationError(
                    {"baseline": [f"No other judge run named {extras['baseline']!r}."]}
                )
            baseline.project = project
        gate = gate_report(run=run, report=report, min_kappa=extras["min_kappa"], baseline=baseline)
        report = {**report, "gate": gate}
    return report


# --- Calibration samples ---------------------------------------------------------------------


class SampleRequestSerializer(serializers.Serializer):
    answers = serializers.FloatField(
        min_value=0,
        help_text="B, the expected number of answers to draw (the sum of the π); at most the "
        "frame's size.",
    )
    design = serializers.ChoiceField(choices=DESIGNS, required=False, default="uniform")
    seed = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=MAX_SEED,
        help_text="The draw's seed; a random one (stored) when absent.",
    )

    def validate_answers(self, value: float) -> float:
        if not value > 0:
            raise serializers.ValidationError("Must be a positive number of answers.")
        return value


class DesignSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    judge = serializers.CharField()
    # Plain strings, not a second enum of the request's `design` choices (drf-spectacular
    # would name the same choice set twice, and check --deploy fails on its warning).
    kind = serializers.CharField(help_text="The design used: uniform or active.")
    requested = serializers.CharField(help_text="The design asked for: uniform or active.")
    fallback = serializers.CharField(
        allow_null=True, help_text="Why active fell back to uniform (no confidences)."
    )
    expected = serializers.FloatField(help_text="B: the sum of the frame's π.")
    seed = serializers.IntegerField()
    frame_answers = serializers.IntegerField()
    frame_claims = serializers.IntegerField(help_text="M: the frame's judged claims.")
    frame_judge_unsupported = serializers.IntegerField()
    frame_confidences = serializers.IntegerField(
        help_text="The frame's judged claims that carry a confidence."
    )
    pi_range = serializers.ListField(child=serializers.FloatField(), help_text="[min, max] π.")
    created_at = serializers.DateTimeField()
    created_by = serializers.CharField(allow_null=True)
    answers_sampled = serializers.IntegerField()
    answers_labelled = serializers.IntegerField(help_text="Sampled answers whose gold decides.")
    decided = serializers.IntegerField(help_text="The same as answers_labelled.")
    waiting = serializers.IntegerField(help_text="Sampled answers still without decided gold.")
    estimate = serializers.FloatField(help_text="The frame's unsupported share, clipped to [0, 1].")
    ci95 = serializers.ListField(child=serializers.FloatField())
    clipped = serializers.BooleanField()
    unclipped = serializers.DictField(required=False)
    provisional = serializers.BooleanField()
    provisional_reason = serializers.CharField(allow_null=True)


class DesignDetailSerializer(DesignSerializer):
    sampled = serializers.ListField(
        child=serializers.DictField(), help_text="Each sampled answer: answer_id and pi."
    )


class CalibrationSamples(JudgeRunView):
    @extend_schema(
        tags=["judges"],
        summary="The run's calibration samples, each with its estimate of its frame's share",
        description="Newest first. `provisional` while sampled answers wait for decided gold.",
        parameters=[RUN_ID],
        responses=responses(DesignSerializer(many=True)),
    )
    def get(self, request, slug, run_id):
        run = self.run(run_id)
        designs = designs_of(run)
        return Response([report.as_dict() for report in design_estimates(designs)])

    @extend_schema(
        tags=["judges"],
        summary="Draw a calibration sample from the run's frame",
        description="The frame: answers with an ok claim verdict of the run that no reviewer "
        "has submitted a label set for and no imported gold covers. `uniform`: π = B / "
        "|frame|; `active`: π ∝ sqrt(Σ min(p, 1 − p)) over the answer's judged claims (p, the "
        "verdict's `confidence`), floored at a tenth of the uniform rate, at most 1, uniform "
        "when a confidence is missing. The sampled answers go to the front of the reviewers' "
        "queue. 400 with field paths for bad input or a budget the frame cannot hold.",
        parameters=[RUN_ID],
        request=SampleRequestSerializer,
        responses=responses({201: DesignDetailSerializer}, r400=ERROR_400),
    )
    def post(self, request, slug, run_id):
        run = self.run(run_id)
        serializer = SampleRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            design = draw_sample(
                run=run,
                budget=data["answers"],
                design=data["design"],
                seed=data.get("seed"),
                user=request.user,
            )
        except SampleRefused as exc:
            raise ValidationError({exc.field: [str(exc)]}) from exc
        return Response(_design_detail(design), status=status.HTTP_201_CREATED)


class CalibrationSampleDetail(JudgeRunView):
    @extend_schema(
        tags=["judges"],
        summary="One calibration sample: its design, estimate and sampled answers with π",
        parameters=[
            RUN_ID,
            OpenApiParameter("design_id", int, OpenApiParameter.PATH, description="Its id."),
        ],
        responses=responses(DesignDetailSerializer),
    )
    def get(self, request, slug, run_id, design_id):
        run = self.run(run_id)
        design = (
            CalibrationDesign.objects.filter(run=run, pk=design_id)
            .select_related("created_by")
            .first()
        )
        if design is None:
            raise NotFound()
        design.run, design.project = run, run.project  # already loaded
        return Response(_design_detail(design))


def _design_detail(design: CalibrationDesign) -> dict:
    return {**design_estimates([design])[0].as_dict(), "sampled": sample_rows(design)}
