"""Django admin for every model. Only staff reach it; reviewers are never staff, which is what
keeps variant names and other people's labels out of their reach here.

Every screen here edits what computed reports read: each saves and deletes through
RevisionAdmin, which moves the project's revisions, and every one of its answers', in the same
transaction (annotate.common.computed): an edit made here makes every report stale."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from annotate import models
from annotate.common import computed


class RevisionAdmin(admin.ModelAdmin):
    """A screen whose saves and deletions move the revisions of the project their rows
    belong to (``project_path``: the lookup from the model to its project's pk). The admin
    runs each save or deletion, inlines included, in one transaction: the revisions move in
    it. Every answer's revision moves too: an admin edit is rare, and may change any answer's
    share of the pair summary (a case's split, a schema, a label)."""

    project_path = "project"

    def _projects(self, queryset) -> set[int]:
        return set(queryset.order_by().values_list(self.project_path, flat=True).distinct())

    def _touch(self, projects) -> None:
        for pk in sorted(p for p in projects if p is not None):
            computed.touch(pk, content=True, answers=computed.ALL)

    def _lock(self, projects) -> None:
        # Before the edited rows are written: computed.lock says why.
        for pk in sorted(p for p in projects if p is not None):
            computed.lock(pk)

    def save_model(self, request, obj, form, change):
        before = self._projects(type(obj).objects.filter(pk=obj.pk)) if change else set()
        self._lock(before)
        super().save_model(request, obj, form, change)
        self._touch(before | self._projects(type(obj).objects.filter(pk=obj.pk)))

    def delete_model(self, request, obj):
        projects = self._projects(type(obj).objects.filter(pk=obj.pk))
        self._lock(projects)
        super().delete_model(request, obj)
        self._touch(projects)

    def delete_queryset(self, request, queryset):
        projects = self._projects(queryset)
        self._lock(projects)
        super().delete_queryset(request, queryset)
        self._touch(projects)


class RevisionHistoryAdmin(RevisionAdmin, SimpleHistoryAdmin):
    """RevisionAdmin with the "History" of who changed what."""


class MembershipInline(admin.TabularInline):
    model = models.Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(models.Project)
class ProjectAdmin(RevisionHistoryAdmin):  # "History": who changed what
    project_path = "pk"
    list_display = ["slug", "name", "corpus_version", "state", "overlap", "created_at"]
    list_filter = ["state"]
    search_fields = ["slug", "name"]
    inlines = [MembershipInline]
    # Guidelines change on the guidelines page (annotate.projects.services.update_guidelines),
    # which keeps each text as a version: an edit here would change the text without one.
    readonly_fields = ["guidelines", "guidelines_version", "guidelines_changed_at"]


@admin.register(models.Membership)
class MembershipAdmin(RevisionHistoryAdmin):  # "History": who changed what
    list_display = ["project", "user", "role"]
    list_filter = ["role", "project"]
    autocomplete_fields = ["user"]


@admin.register(models.Passage)
class PassageAdmin(RevisionAdmin):
    list_display = ["passage_id", "project", "document", "location", "title"]
    list_filter = ["project"]
    search_fields = ["passage_id", "text"]


@admin.register(models.Variant)
class VariantAdmin(RevisionAdmin):
    list_display = ["name", "project", "model"]
    list_filter = ["project"]


class EvidenceInline(admin.TabularInline):
    model = models.Evidence
    extra = 0
    raw_id_fields = ["passage"]


@admin.register(models.Case)
class CaseAdmin(RevisionAdmin):
    list_display = ["case_id", "project", "answerable", "adversarial", "split"]
    list_filter = ["project", "answerable", "adversarial", "split"]
    search_fields = ["case_id", "question"]
    inlines = [EvidenceInline]


@admin.register(models.Evidence)
class EvidenceAdmin(RevisionAdmin):
    project_path = "case__project"
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
class AnswerAdmin(RevisionAdmin):
    list_display = ["answer_id", "project", "variant", "task_number", "abstained", "elapsed_ms"]
    list_filter = ["project", "variant", "abstained"]
    search_fields = ["answer_id", "text"]
    raw_id_fields = ["case", "variant"]
    inlines = [ClaimInline, RetrievedInline]


@admin.register(models.RetrievedPassage)
class RetrievedPassageAdmin(RevisionAdmin):
    project_path = "answer__project"
    list_display = ["answer", "rank", "passage", "score", "in_prompt"]
    raw_id_fields = ["answer", "passage"]


@admin.register(models.Claim)
class ClaimAdmin(RevisionHistoryAdmin):  # "History": who changed what
    project_path = "answer__project"
    list_display = ["answer", "ordinal", "text", "start", "end", "proposed"]
    raw_id_fields = ["answer"]
    search_fields = ["text"]


@admin.register(models.Citation)
class CitationAdmin(RevisionAdmin):
    project_path = "claim__answer__project"
    list_display = ["claim", "ordinal", "cited_id", "passage"]
    raw_id_fields = ["claim", "passage"]


@admin.register(models.Judgment)
class JudgmentAdmin(RevisionAdmin):
    project_path = "case__project"
    list_display = ["case", "passage", "grade"]
    raw_id_fields = ["case", "passage"]


class ClaimLabelInline(admin.TabularInline):
    model = models.ClaimLabel
    extra = 0
    raw_id_fields = ["claim"]


@admin.register(models.Assignment)
class AssignmentAdmin(RevisionHistoryAdmin):  # "History": who changed what
    list_display = ["project", "answer", "reviewer", "status", "is_check", "revision", "taken_at"]
    list_filter = ["project", "status", "is_check"]
    raw_id_fields = ["answer", "reviewer"]
    inlines = [ClaimLabelInline]


@admin.register(models.GoldCheck)
class GoldCheckAdmin(RevisionAdmin):
    list_display = ["answer", "project", "marked_by", "marked_at"]
    list_filter = ["project"]
    raw_id_fields = ["answer", "marked_by"]


@admin.register(models.ClaimLabel)
class ClaimLabelAdmin(RevisionAdmin):
    project_path = "assignment__project"
    list_display = ["assignment", "claim", "support", "severity"]
    raw_id_fields = ["assignment", "claim"]


@admin.register(models.LabelRevision)
class LabelRevisionAdmin(RevisionAdmin):
    project_path = "assignment__project"
    list_display = ["assignment", "number", "source", "created_at"]
    raw_id_fields = ["assignment"]


@admin.register(models.AnswerCorrection)
class AnswerCorrectionAdmin(RevisionAdmin):
    project_path = "answer__project"
    list_display = ["answer", "labelled", "corrected_at"]
    list_filter = ["labelled"]
    raw_id_fields = ["answer"]
    readonly_fields = ["answer", "changes", "labelled", "corrected_at"]


class ImportedClaimGoldInline(admin.TabularInline):
    model = models.ImportedClaimGold
    extra = 0
    raw_id_fields = ["claim"]


@admin.register(models.GoldImport)
class GoldImportAdmin(RevisionAdmin):
    list_display = ["source", "file_name", "project", "answer_count", "claim_count", "imported_at"]
    list_filter = ["project"]
    readonly_fields = ["sha256", "imported_at"]


@admin.register(models.ImportedGold)
class ImportedGoldAdmin(RevisionAdmin):
    project_path = "gold_import__project"
    list_display = ["answer", "gold_import", "line", "relevance", "abstention"]
    raw_id_fields = ["answer", "gold_import"]
    inlines = [ImportedClaimGoldInline]
