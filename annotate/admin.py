"""Django admin for every model. Only staff reach it; reviewers are never staff, which is what
keeps variant names and other people's labels out of their reach here."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from annotate import models


class MembershipInline(admin.TabularInline):
    model = models.Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(models.Project)
class ProjectAdmin(SimpleHistoryAdmin):  # "History": who changed what
    list_display = ["slug", "name", "corpus_version", "state", "overlap", "created_at"]
    list_filter = ["state"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]


@admin.register(models.Membership)
class MembershipAdmin(SimpleHistoryAdmin):  # "History": who changed what
    list_display = ["project", "user", "role"]
    list_filter = ["role", "project"]
    autocomplete_fields = ["user"]


@admin.register(models.Passage)
class PassageAdmin(admin.ModelAdmin):
    list_display = ["passage_id", "project", "document", "location", "title"]
    list_filter = ["project"]
    search_fields = ["passage_id", "text"]


@admin.register(models.Variant)
class VariantAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "model"]
    list_filter = ["project"]


class EvidenceInline(admin.TabularInline):
    model = models.Evidence
    extra = 0
    raw_id_fields = ["passage"]


@admin.register(models.Case)
class CaseAdmin(admin.ModelAdmin):
    list_display = ["case_id", "project", "answerable", "adversarial", "split"]
    list_filter = ["project", "answerable", "adversarial", "split"]
    search_fields = ["case_id", "question"]
    inlines = [EvidenceInline]


@admin.register(models.Evidence)
class EvidenceAdmin(admin.ModelAdmin):
    list_display = ["case", "passage", "ordinal", "quote"]
    raw_id_fields = ["case", "passage"]


class ClaimInline(admin.TabularInline):
    model = models.Claim
    extra = 0
    fields = ["ordinal", "text", "start", "end", "proposed"]


class RetrievedInline(admin.TabularInline):
    model = models.RetrievedPassage
    extra = 0
    raw_id_fields = ["passage"]


@admin.register(models.Answer)
class AnswerAdmin(admin.ModelAdmin):
    list_display = ["answer_id", "project", "variant", "task_number", "abstained", "elapsed_ms"]
    list_filter = ["project", "variant", "abstained"]
    search_fields = ["answer_id", "text"]
    raw_id_fields = ["case", "variant"]
    inlines = [ClaimInline, RetrievedInline]


@admin.register(models.RetrievedPassage)
class RetrievedPassageAdmin(admin.ModelAdmin):
    list_display = ["answer", "rank", "passage", "score", "in_prompt"]
    raw_id_fields = ["answer", "passage"]


@admin.register(models.Claim)
class ClaimAdmin(SimpleHistoryAdmin):  # "History": who changed what
    list_display = ["answer", "ordinal", "text", "start", "end", "proposed"]
    raw_id_fields = ["answer"]
    search_fields = ["text"]


@admin.register(models.Citation)
class CitationAdmin(admin.ModelAdmin):
    list_display = ["claim", "ordinal", "cited_id", "passage"]
    raw_id_fields = ["claim", "passage"]


@admin.register(models.Judgment)
class JudgmentAdmin(admin.ModelAdmin):
    list_display = ["case", "passage", "grade"]
    raw_id_fields = ["case", "passage"]


class ClaimLabelInline(admin.TabularInline):
    model = models.ClaimLabel
    extra = 0
    raw_id_fields = ["claim"]


@admin.register(models.Assignment)
class AssignmentAdmin(SimpleHistoryAdmin):  # "History": who changed what
    list_display = ["project", "answer", "reviewer", "status", "revision", "taken_at"]
    list_filter = ["project", "status"]
    raw_id_fields = ["answer", "reviewer"]
    inlines = [ClaimLabelInline]


@admin.register(models.ClaimLabel)
class ClaimLabelAdmin(admin.ModelAdmin):
    list_display = ["assignment", "claim", "support", "severity"]
    raw_id_fields = ["assignment", "claim"]


@admin.register(models.LabelRevision)
class LabelRevisionAdmin(admin.ModelAdmin):
    list_display = ["assignment", "number", "source", "created_at"]
    raw_id_fields = ["assignment"]


@admin.register(models.AnswerCorrection)
class AnswerCorrectionAdmin(admin.ModelAdmin):
    list_display = ["answer", "labelled", "corrected_at"]
    list_filter = ["labelled"]
    raw_id_fields = ["answer"]
    readonly_fields = ["answer", "changes", "labelled", "corrected_at"]


class ImportedClaimGoldInline(admin.TabularInline):
    model = models.ImportedClaimGold
    extra = 0
    raw_id_fields = ["claim"]


@admin.register(models.GoldImport)
class GoldImportAdmin(admin.ModelAdmin):
    list_display = ["source", "file_name", "project", "answer_count", "claim_count", "imported_at"]
    list_filter = ["project"]
    readonly_fields = ["sha256", "imported_at"]


@admin.register(models.ImportedGold)
class ImportedGoldAdmin(admin.ModelAdmin):
    list_display = ["answer", "gold_import", "line", "relevance", "abstention"]
    raw_id_fields = ["answer", "gold_import"]
    inlines = [ImportedClaimGoldInline]
