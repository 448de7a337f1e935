"""The annotation workspace: the annotator's queue and item pages, their actions, and the admin's
assignment plans and statistics.

Every item view goes through ``_item_for`` (ownership via ``access.assignment_for``); every
action parses a form, calls one service from ``services.workspace`` and answers with the item
fragment (htmx) or a redirect (no JavaScript). Refusals answer with their status (409 for a stale
version) and the message in the body and in ``X-Blindspot-Error``.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotator import access
from annotator.forms.workspace import (
    ActionForm,
    FlagForm,
    NoPiiForm,
    PlanForm,
    QueueFilterForm,
    ReassignForm,
    SpanAddForm,
    SpanForm,
    SpanRelabelForm,
    SuggestionForm,
    SuggestionRelabelForm,
    TimeForm,
)
from annotator.models import Assignment, AssignmentPlan, Role
from annotator.selectors import first_page_only
from annotator.selectors import workspace as sel
from annotator.selectors.assignments import condition_exposure
from annotator.selectors.keymap import label_keys
from annotator.selectors.projects import active_members
from annotator.services import workspace as svc
from annotator.services.assignments import (
    PlanError,
    assignments_reassign,
    plan_create,
    plan_start,
    project_annotators,
)
from annotator.views.refusals import refusal


def _item_for(request: HttpRequest, slug: str, public_id) -> Assignment:
    assignment = access.assignment_for(request.user, public_id)
    if assignment.project.slug != slug:
        raise Http404("No such item in your queue.")
    return assignment


def _item_url(a: Assignment) -> str:
    return reverse("workspace-item", kwargs={"slug": a.project.slug, "public_id": a.public_id})


def _refuse(request: HttpRequest, a: Assignment, message: str, status: int) -> HttpResponse:
    if request.htmx:
        return refusal(message, status)
    messages.error(request, message)
    return redirect(_item_url(a))


# ----------------------------------------------------------------------------------- annotator

@login_required
@require_GET
def queue(request: HttpRequest, slug: str) -> HttpResponse:
    """The annotator's entry point: straight to the next item, or the queue when it is empty."""
    project = access.project_for(request.user, slug, Role.ANNOTATOR)
    nxt = sel.next_assignment(request.user, project)
    if nxt is not None:
        return redirect("workspace-item", slug=slug, public_id=nxt.public_id)
    return redirect("workspace-list", slug=slug)


@login_required
@require_GET
def queue_list(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ANNOTATOR)
    form = QueueFilterForm(request.GET or None)
    filters = {"status": "", "q": "", "after": "", "before": ""}
    if form.is_valid():
        filters = {name: form.cleaned_data[name] or "" for name in filters}
        first_page_only(form.cleaned_data["page"])
    context = {
        "project": project, "status": filters["status"], "q": filters["q"], "form": form,
        **sel.queue_page(request.user, project, **filters),
        "progress": sel.queue_progress(request.user, project),
        "next": sel.next_assignment(request.user, project),
    }
    template = "workspace/_queue_rows.html" if request.htmx else "workspace/queue.html"
    return render(request, template, context)


@login_required
@require_GET
def item(request: HttpRequest, slug: str, public_id) -> HttpResponse:
    a = _item_for(request, slug, public_id)
    if request.htmx:
        return render(request, "workspace/_item.html", sel.item_context(a))
    svc.item_open(assignment=a)  # the page's active-time clock starts now
    return render(request, "workspace/item.html", sel.item_context(a, page=True))


@login_required
@require_GET
def guidelines(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ANNOTATOR)
    return render(request, "workspace/guidelines.html",
                  {"project": project, "labels": label_keys(project.taxonomy)})


def _action(request, slug, public_id, form_class, call, *, then_next=False):
    a = _item_for(request, slug, public_id)
    form = form_class(request.POST)
    if not form.is_valid():
        first = next(iter(form.errors.items()))
        return _refuse(request, a, f"Bad request ({first[0]}: {first[1][0]}). Reload the page.", 400)
    data = dict(form.cleaned_data)
    data["active"] = data.get("active") or 0.0
    try:
        call(a, data)
    except svc.WorkspaceError as exc:
        return _refuse(request, a, exc.message, exc.status)
    if then_next:
        url = reverse("workspace-queue", kwargs={"slug": slug})
        return HttpResponseClientRedirect(url) if request.htmx else redirect(url)
    if not request.htmx:
        return redirect(_item_url(a))
    # The service has re-read the assignment under its lock onto ``a``: render it as it is now.
    return render(request, "workspace/_item.html", sel.item_context(a))


def _common(request, a, d) -> dict:
    return {"assignment": a, "user": request.user, "version": d["version"], "active": d["active"]}


@login_required
@require_POST
def span_add(request, slug, public_id):
    return _action(request, slug, public_id, SpanAddForm, lambda a, d: svc.span_add(
        **_common(request, a, d), start=d["start"], end=d["end"], label=d["label"], exact=d["exact"]))


@login_required
@require_POST
def span_delete(request, slug, public_id):
    return _action(request, slug, public_id, SpanForm, lambda a, d: svc.span_delete(
        **_common(request, a, d), annotation_id=d["annotation"]))


@login_required
@require_POST
def span_relabel(request, slug, public_id):
    return _action(request, slug, public_id, SpanRelabelForm, lambda a, d: svc.span_relabel(
        **_common(request, a, d), annotation_id=d["annotation"], label=d["label"]))


@login_required
@require_POST
def suggestion_accept(request, slug, public_id):
    return _action(request, slug, public_id, SuggestionForm, lambda a, d: svc.suggestion_accept(
        **_common(request, a, d), prediction_id=d["prediction"]))


@login_required
@require_POST
def suggestion_reject(request, slug, public_id):
    return _action(request, slug, public_id, SuggestionForm, lambda a, d: svc.suggestion_reject(
        **_common(request, a, d), prediction_id=d["prediction"]))


@login_required
@require_POST
def suggestion_relabel(request, slug, public_id):
    return _action(request, slug, public_id, SuggestionRelabelForm, lambda a, d: svc.suggestion_relabel(
        **_common(request, a, d), prediction_id=d["prediction"], label=d["label"]))


@login_required
@require_POST
def no_pii(request, slug, public_id):
    return _action(request, slug, public_id, NoPiiForm, lambda a, d: svc.item_no_pii_set(
        **_common(request, a, d), value=d["value"]))


@login_required
@require_POST
def no_pii_next(request, slug, public_id):
    return _action(request, slug, public_id, ActionForm,
                   lambda a, d: svc.item_no_pii_submit(**_common(request, a, d)), then_next=True)


@login_required
@require_POST
def flag(request, slug, public_id):
    return _action(request, slug, public_id, FlagForm, lambda a, d: svc.item_flag_set(
        **_common(request, a, d), uncertain=d["uncertain"], comment=d["comment"]))


@login_required
@require_POST
def undo(request, slug, public_id):
    return _action(request, slug, public_id, ActionForm, lambda a, d: svc.item_undo(**_common(request, a, d)))


@login_required
@require_POST
def submit(request, slug, public_id):
    return _action(request, slug, public_id, ActionForm,
                   lambda a, d: svc.item_submit(**_common(request, a, d)), then_next=True)


@login_required
@require_POST
def reopen(request, slug, public_id):
    """Make a submitted item editable again (its next submit merges it again)."""
    return _action(request, slug, public_id, ActionForm, lambda a, d: svc.item_reopen(**_common(request, a, d)))


@login_required
@require_POST
def skip(request, slug, public_id):
    return _action(request, slug, public_id, ActionForm,
                   lambda a, d: svc.item_skip(**_common(request, a, d)), then_next=True)


@login_required
@require_POST
def time_report(request, slug, public_id):
    """Active-time heartbeat (also sent with ``navigator.sendBeacon`` when the page is left)."""
    a = _item_for(request, slug, public_id)
    form = TimeForm(request.POST)
    if form.is_valid() and a.status != Assignment.Status.DONE:
        svc.item_time_add(assignment=a, active=form.cleaned_data["active"])
    return HttpResponse(status=204)


# ----------------------------------------------------------------------------------- admin

@login_required
@require_http_methods(["GET", "POST"])
def assignments_admin(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    form = PlanForm(request.POST or None, project=project, annotators=active_members(project),
                    initial={"annotators": list(project_annotators(project))})
    preview = None
    if request.method == "POST" and form.is_valid():
        args = {"project": project, **form.plan_args(), "by": request.user}
        try:
            if form.cleaned_data["dry_run"]:
                preview = plan_create(**args, dry_run=True)
            else:  # a large plan takes a minute: built as a job, its page shows the progress
                job = plan_start(**args)
                return redirect("job-detail", slug=slug, job_id=job.pk)
        except PlanError as exc:
            form.add_error(None, str(exc))
    context = {
        "project": project, "form": form, "preview": preview, "plans": sel.plans(project),
        "stats": sel.annotator_stats(project, use_cache=True),
        "reassign_form": ReassignForm(annotators=active_members(project)),
    }
    if request.htmx and request.method == "GET":
        return render(request, "workspace/_stats.html", context)
    return render(request, "workspace/admin.html", context)


@login_required
@require_GET
def plan_detail(request: HttpRequest, slug: str, plan_id: int) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    plan = get_object_or_404(AssignmentPlan, pk=plan_id, project=project)
    return render(request, "workspace/plan.html", {
        "project": project, "plan": plan, "exposure": condition_exposure(project, plan=plan, use_cache=True)})


@login_required
@require_POST
def reassign(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    form = ReassignForm(request.POST, annotators=active_members(project))
    if form.is_valid():
        to = form.cleaned_data["to_user"]
        try:
            summary = assignments_reassign(project=project, from_user=form.cleaned_data["from_user"],
                                           to_users=[to] if to else None, by=request.user)
        except PlanError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Moved {summary['moved']} unfinished items"
                             + (f"; {summary['kept']} had nobody eligible and stayed." if summary["kept"] else "."))
    else:
        messages.error(request, "; ".join(e for errs in form.errors.values() for e in errs))
    return redirect("workspace-admin", slug=slug)
