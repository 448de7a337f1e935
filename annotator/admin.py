"""Django admin for every model; provenance-bearing records are read-only."""

from django.contrib import admin

from annotator import models as m
from annotator.forms.accounts import AdminLoginForm

# The admin's login page is throttled like the app's (annotator/services/accounts.py).
admin.site.login_form = AdminLoginForm


class ReadOnlyAdmin(admin.ModelAdmin):
    """Records whose history matters (predictions, decisions, gold, audit): look, never edit."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser and self.model not in (m.AuditEvent,)


class MembershipInline(admin.TabularInline):
    model = m.Membership
    extra = 1
    autocomplete_fields = ["user"]


@admin.register(m.Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "visibility_mode", "overlap_k", "labelling_policy", "created_at"]
    prepopulated_fields = {"slug": ("name",)}
    search_fields = ["name", "slug"]
    inlines = [MembershipInline]
    filter_horizontal = ["suggestion_runs"]


@admin.register(m.Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role", "pseudonym"]
    list_filter = ["role", "project"]
    autocomplete_fields = ["user"]


@admin.register(m.Dialogue)
class DialogueAdmin(admin.ModelAdmin):
    list_display = ["external_id", "project", "source", "created_at"]
    list_filter = ["project"]
    search_fields = ["external_id"]


@admin.register(m.Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["dialogue", "position", "speaker_role", "speaker", "text"]
    list_filter = ["project", "speaker_role"]
    search_fields = ["text", "dialogue__external_id"]
    raw_id_fields = ["dialogue"]
    list_select_related = ["dialogue"]


@admin.register(m.DetectorRun)
class DetectorRunAdmin(ReadOnlyAdmin):
    list_display = ["pk", "project", "detector", "status", "progress_done", "progress_total", "created_at"]
    list_filter = ["project", "detector", "status"]


for model, fields in [
    (m.Prediction, ["run", "message", "start", "end", "label", "score"]),
    (m.RunChunk, ["run", "index", "status", "attempts", "message_count"]),
    (m.MessageSegment, ["run", "message", "segment", "score"]),
    (m.Annotation, ["assignment", "start", "end", "label", "origin", "condition", "created_at"]),
    (m.GoldSpan, ["message", "start", "end", "label", "provenance", "model_matched"]),
    (m.AdjudicationDecision, ["message", "outcome", "risk", "decided_by", "model_favoured", "decided_at"]),
    (m.AdjudicationItem, ["message", "status", "risk", "risk_weight", "created_at", "settled_at"]),
    (m.AuditEvent, ["created_at", "user", "project", "action", "object_type", "object_id"]),
    (m.Export, ["project", "kind", "version", "status", "publishable", "created_at"]),
    (m.BackgroundJob, ["project", "kind", "status", "progress_done", "progress_total", "created_at"]),
    (m.AssignmentPlan, ["project", "seed", "created_by", "created_at"]),
]:
    admin.site.register(
        model,
        type(f"{model.__name__}Admin", (ReadOnlyAdmin,), {"list_display": fields, "list_per_page": 50}),
    )


@admin.register(m.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    """Reassigning unfinished work is an admin's job; finished assignments stay as they were."""

    list_display = ["annotator", "project", "message", "condition", "status", "active_seconds"]
    list_filter = ["project", "status", "condition"]
    raw_id_fields = ["message"]
    readonly_fields = ["public_id", "condition", "version", "submitted_at", "active_seconds"]

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and (obj is None or obj.status != "done")
