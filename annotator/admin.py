"""Django admin for every model; provenance-bearing records are read-only."""

import json

from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ORDER_VAR, PAGE_VAR, ChangeList
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.core.exceptions import FieldDoesNotExist
from django.core.paginator import InvalidPage, Paginator
from django.db import connection
from django.http import HttpResponseRedirect
from django.utils.functional import cached_property
from django.utils.text import smart_split, unescape_string_literal

from annotator import models as m
from annotator.forms.accounts import AdminLoginForm
from annotator.services.audit import audit_record
from annotator.services.projects import (
    MembershipError,
    membership_remove,
    membership_role_set,
    membership_set,
    role_groups_sync,
)

# The admin's login page is throttled like the app's (annotator/services/accounts.py).
admin.site.login_form = AdminLoginForm


ESTIMATE_ABOVE = 50_000  # rows: a changelist the planner expects to be longer shows its estimate
DEEPEST_PAGE = 20  # by number, 1,000 rows deep at most; further by cursor (KeysetChangeList)
CURSOR_VARS = ("after", "before")


class KeysFirstPaginator(Paginator):
    """Pages of a table of corpus size (no request scans the corpus).

    A page deep in the list reads only the page's primary keys past the offset (an index-only
    scan), then those rows with their joins, instead of every joined row before them. On
    PostgreSQL a list the planner expects to hold more than ``ESTIMATE_ABOVE`` rows is counted
    from the planner's statistics (kept by ANALYZE), as the admin of any large table does, not by
    reading every row; shorter lists are counted exactly. Past :data:`DEEPEST_PAGE` a page number
    is refused: deeper pages are reached by cursor."""

    estimated = False

    @cached_property
    def count(self) -> int:
        estimate = planner_rows(self.object_list)
        if estimate is not None and estimate > ESTIMATE_ABOVE:
            self.estimated = True  # the pager says "about"
            return estimate
        return super().count

    def page(self, number):
        number = self.validate_number(number)
        if number > DEEPEST_PAGE:  # deeper, the list pages by cursor (KeysetChangeList)
            raise InvalidPage("Pages past the first ones are reached by Older →.")
        bottom = (number - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        keys = list(self.object_list.values_list("pk", flat=True)[bottom:top])
        rows = self.object_list.filter(pk__in=keys).in_bulk() if keys else {}
        return self._get_page([rows[k] for k in keys if k in rows], number, self)


def planner_rows(qs) -> int | None:
    """PostgreSQL's estimate of how many rows ``qs`` holds (None elsewhere)."""
    if connection.vendor != "postgresql":
        return None
    sql, params = qs.order_by().values("pk").query.sql_with_params()
    with connection.cursor() as cur:
        cur.execute("EXPLAIN (FORMAT JSON) " + sql, params)
        plan = cur.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])


class KeysetChangeList(ChangeList):
    """A changelist newest first (by primary key) pages past its first :data:`DEEPEST_PAGE` pages
    by cursor: ``?after=<pk>`` (older rows) and ``?before=<pk>`` (newer ones) read the page's rows
    from the key's index (``pk < k ... LIMIT``), never an ``OFFSET`` that reads every row before
    them. Another order (a column header clicked) keeps the page numbers only."""

    def __init__(self, request, *args, **kwargs):
        self.cursor = {v: request.GET.get(v, "") for v in CURSOR_VARS}
        self.keyset = self.newer_url = self.older_url = self.first_url = ""
        self.deepest_page = DEEPEST_PAGE
        super().__init__(request, *args, **kwargs)

    def get_filters_params(self, params=None):
        lookup = super().get_filters_params(params)
        for v in CURSOR_VARS:
            lookup.pop(v, None)
        return lookup

    def _by_key(self) -> bool:
        return tuple(self.model_admin.ordering or ()) == ("-pk",) and ORDER_VAR not in self.params

    def get_results(self, request):
        cursor = {v: k for v, k in self.cursor.items() if k}
        if not cursor or not self._by_key():
            super().get_results(request)
            shown = list(self.result_list) if self.multi_page else []
            if self._by_key() and shown and self.page_num * self.list_per_page < self.result_count:
                self.older_url = self.get_query_string({"after": shown[-1].pk}, [PAGE_VAR, "before"])
            return
        (var, key), = list(cursor.items())[:1]
        if not key.isdigit() or int(key) > 2**63 - 1:
            raise IncorrectLookupParameters
        n = self.list_per_page
        if var == "after":
            rows = list(self.queryset.filter(pk__lt=int(key)).order_by("-pk")[:n + 1])
            older, newer = len(rows) > n, True
            rows = rows[:n]
        else:
            rows = list(self.queryset.filter(pk__gt=int(key)).order_by("pk")[:n + 1])
            newer, older = len(rows) > n, True
            rows = rows[:n][::-1]
        self.paginator = self.model_admin.get_paginator(request, self.queryset, n)
        self.result_count = self.paginator.count  # the planner's estimate for a long list
        self.full_result_count, self.show_full_result_count, self.show_admin_actions = None, False, True
        self.can_show_all, self.multi_page, self.result_list = False, True, rows
        self.keyset = var
        self.first_url = self.get_query_string(remove=[PAGE_VAR, *CURSOR_VARS])
        if rows and newer:
            self.newer_url = self.get_query_string({"before": rows[0].pk}, [PAGE_VAR, "after"])
        if rows and older:
            self.older_url = self.get_query_string({"after": rows[-1].pk}, [PAGE_VAR, "before"])


class ScaledAdmin(admin.ModelAdmin):
    """Changelists over tables of corpus size: newest first (the primary key's index serves the
    order), pages read keys first, one count (none beside a filtered one, the planner's estimate
    for a long list), and the foreign keys the list shows joined in, not read row by row."""

    show_full_result_count = False
    paginator = KeysFirstPaginator
    list_per_page = 50  # as the read-only lists: half the rows to render of Django's default 100
    ordering = ("-pk",)

    def get_changelist(self, request, **kwargs):
        return KeysetChangeList

    def get_list_select_related(self, request):
        if self.list_select_related:
            return self.list_select_related
        return [name for name in self.list_display if isinstance(name, str) and _is_relation(self.model, name)]


def _is_relation(model, name: str) -> bool:
    try:
        field = model._meta.get_field(name)
    except FieldDoesNotExist:
        return False
    return field.many_to_one or field.one_to_one


class AuditedAdmin(ScaledAdmin):
    """Edits made in the Django admin leave an ``AuditEvent`` like every other write (which also
    moves the project's revision, so the pages' cached figures are recomputed)."""

    def _audit(self, request, obj, action: str) -> None:
        project = obj if isinstance(obj, m.Project) else getattr(obj, "project", None)
        audit_record(user=request.user, action=f"admin.{action}", obj=obj, project=project)

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        self._audit(request, obj, "change" if change else "add")

    def delete_model(self, request, obj):
        self._audit(request, obj, "delete")
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self._audit(request, obj, "delete")
        super().delete_queryset(request, queryset)


class ReadOnlyAdmin(ScaledAdmin):
    """Records whose history matters (predictions, decisions, gold, audit): look, never edit."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser and self.model not in (m.AuditEvent,)


def membership_save(request, form, change: bool) -> str | None:
    """A membership added or edited in the admin, written through the People page's services
    (audited, role groups in step, the last admin kept): None, or why it was refused."""
    obj, by = form.instance, request.user
    was = form.initial.get("role") if change else None
    try:
        if change and {"user", "project"} & set(form.changed_data):
            raise MembershipError("A membership cannot move to another user or project; add a new one instead.")
        if not change or (obj.active and not form.initial.get("active", True)):
            obj.pk = membership_set(project=obj.project, user=obj.user, role=obj.role, by=by).pk
        elif not obj.active and form.initial.get("active", True):
            membership_remove(project=obj.project, user=obj.user, by=by, expected=was)
        elif "role" in form.changed_data:
            membership_role_set(project=obj.project, user=obj.user, role=obj.role, by=by, expected=was)
    except MembershipError as exc:
        return str(exc)
    return None


class MembershipInline(admin.TabularInline):
    """Memberships are never deleted (their pseudonyms name past work): untick "active" to remove."""

    model = m.Membership
    extra = 1
    autocomplete_fields = ["user"]
    fields = ["user", "role", "active", "pseudonym"]
    readonly_fields = ["pseudonym"]
    can_delete = False


@admin.register(m.Project)
class ProjectAdmin(AuditedAdmin):
    list_display = ["name", "slug", "visibility_mode", "overlap_k", "labelling_policy", "created_at"]
    ordering = None  # the model's own order (a small table, or an index that serves it)
    prepopulated_fields = {"slug": ("name",)}
    search_fields = ["name", "slug"]
    inlines = [MembershipInline]
    filter_horizontal = ["suggestion_runs"]

    def save_formset(self, request, form, formset, change):
        if formset.model is not m.Membership:
            return super().save_formset(request, form, formset, change)
        formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
        for row in formset.forms:
            if row.has_changed():
                row.instance.project = formset.instance
                refused = membership_save(request, row, change=row.instance.pk is not None)
                if refused:
                    self.message_user(request, refused, messages.ERROR)


@admin.register(m.Membership)
class MembershipAdmin(ScaledAdmin):
    """Writes go through ``membership_save`` (services.projects), which audits them itself."""

    list_display = ["user", "project", "role", "active", "pseudonym"]
    ordering = None  # the model's own order (a small table, or an index that serves it)
    list_filter = ["role", "active", "project"]
    autocomplete_fields = ["user"]
    readonly_fields = ["pseudonym"]

    def has_delete_permission(self, request, obj=None):
        return False  # untick "active" instead: the row keeps the member's pseudonym

    def save_model(self, request, obj, form, change):
        request._membership_refused = membership_save(request, form, change)

    def _refused(self, request, obj):
        reason = getattr(request, "_membership_refused", None)
        if reason:
            self.message_user(request, reason, messages.ERROR)
            return HttpResponseRedirect(request.path)
        return None

    def response_add(self, request, obj, post_url_continue=None):
        return self._refused(request, obj) or super().response_add(request, obj, post_url_continue)

    def response_change(self, request, obj):
        return self._refused(request, obj) or super().response_change(request, obj)


class UserAdmin(DjangoUserAdmin):
    """Accounts: switching one off or on is audited; role groups follow memberships, not hand edits."""

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and "is_active" in form.changed_data:
            audit_record(user=request.user, action="admin.user." + ("activate" if obj.is_active else "deactivate"),
                         obj=obj, member=obj.get_username())

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        role_groups_sync(form.instance)


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), UserAdmin)


@admin.register(m.Dialogue)
class DialogueAdmin(AuditedAdmin):
    list_display = ["external_id", "project", "source", "created_at"]
    ordering = None  # the model's own order (a small table, or an index that serves it)
    list_filter = ["project"]
    search_fields = ["external_id"]


@admin.register(m.Message)
class MessageAdmin(AuditedAdmin):
    list_display = ["dialogue", "position", "speaker_role", "speaker", "text"]
    ordering = None  # the model's own order (a small table, or an index that serves it)
    list_filter = ["project", "speaker_role"]
    search_fields = ["text", "dialogue__external_id"]
    raw_id_fields = ["dialogue"]
    list_select_related = ["dialogue"]

    def get_search_results(self, request, queryset, search_term):
        """Each word in a message's text or its dialogue's id, as the admin searches, but each field
        on its own: the text through its trigram index (migration 0015), not one OR across the
        dialogue join that makes the database read every message."""
        for term in smart_split(search_term):
            if term[0] in "\"'" and term[-1] == term[0]:
                term = unescape_string_literal(term)
            text = queryset.filter(text__icontains=term).order_by().values("pk")
            dialogue = queryset.filter(dialogue__external_id__icontains=term).order_by().values("pk")
            queryset = queryset.filter(pk__in=text.union(dialogue))
        return queryset, False


@admin.register(m.DetectorRun)
class DetectorRunAdmin(ReadOnlyAdmin):
    list_display = ["pk", "project", "detector", "status", "progress_done", "progress_total", "created_at"]
    list_filter = ["project", "detector", "status"]


# What a row's string needs beyond the foreign keys the list shows (an assignment names its
# annotator and message).
LIST_SELECT_RELATED = {
    m.Annotation: {"list_select_related": ["assignment__annotator", "assignment__message"]},
}

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
    (m.Invitation, ["project", "role", "email", "created_by", "created_at", "expires_at", "used_at"]),
    (m.ApiToken, ["user", "name", "prefix", "created_at", "expires_at", "last_used_at", "revoked_at"]),
]:
    admin.site.register(
        model,
        type(f"{model.__name__}Admin", (ReadOnlyAdmin,), {"list_display": fields, "list_per_page": 50,
                                                          **LIST_SELECT_RELATED.get(model, {})}),
    )


@admin.register(m.Assignment)
class AssignmentAdmin(AuditedAdmin):
    """Reassigning unfinished work is an admin's job; finished assignments stay as they were."""

    list_display = ["annotator", "project", "message", "condition", "status", "active_seconds"]
    list_filter = ["project", "status", "condition"]
    raw_id_fields = ["message"]
    readonly_fields = ["public_id", "condition", "version", "submitted_at", "active_seconds"]

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and (obj is None or obj.status != "done")
