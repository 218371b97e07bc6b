from django.contrib import admin

from annotate.admin import RevisionAdmin
from evaluation.models import JudgeRun, Verdict


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
