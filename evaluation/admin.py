from django.contrib import admin

from annotate.admin import RevisionAdmin
from evaluation.models import CalibrationDesign, CalibrationSample, JudgeRun, Verdict


@admin.register(JudgeRun)
class JudgeRunAdmin(RevisionAdmin):
    list_display = ("name", "project", "model", "model_version", "imported_at", "imported_by")
    list_filter = ("project",)
    search_fields = ("name", "model")
    readonly_fields = ("prompt_sha256", "imported_at")
    raw_id_fields = ("imported_by",)


@admin.register(Verdict)
class VerdictAdmin(RevisionAdmin):
    project_path = "run__project"
    list_display = ("run", "line", "answer", "claim", "status", "label", "relevance", "quote_found")
    list_filter = ("status", "label", "quote_found", "run__project")
    search_fields = ("run__name", "answer__answer_id", "raw")
    raw_id_fields = ("run", "answer", "claim")
    list_select_related = ("run", "answer", "claim")


class CalibrationSampleInline(admin.TabularInline):
    model = CalibrationSample
    raw_id_fields = ("answer",)
    extra = 0
    can_delete = False


@admin.register(CalibrationDesign)
class CalibrationDesignAdmin(admin.ModelAdmin):
    """Read it here; a design is drawn by sample_for_calibration, the run's page or the API,
    and its π are what the estimate rests on, so nothing here edits them."""

    list_display = ("pk", "run", "kind", "budget", "frame_answers", "seed", "created_at")
    list_filter = ("project", "kind")
    raw_id_fields = ("project", "run", "created_by")
    inlines = (CalibrationSampleInline,)

    def has_change_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False
