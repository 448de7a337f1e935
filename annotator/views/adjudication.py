"""Adjudication: the risk-ordered queue, the keyboard-first workspace, and auto-merging.

Adjudicators and admins only (annotators get 403, outsiders 404, through ``access.project_for``).
Annotators appear as Annotator 1, 2, 3, each with their note (comment, "uncertain"); the model's
predictions only when the project shows them to adjudicators. The queue filters by notes
(``?flag=notes`` / ``?flag=uncertain``) and pages by cursor (``?after=`` / ``?before=``, a
malformed one a 404), the htmx pager keeping the filter.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotator import access
from annotator.forms.adjudication import DecisionForm, QueueFilterForm
from annotator.models import AdjudicationItem, Role
from annotator.rendering import taxonomy_colors
from annotator.selectors import adjudication as sel
from annotator.selectors import first_page_only
from annotator.selectors.keymap import adjudication_keymap
from annotator.services.adjudication import (
    AdjudicationError,
    adjudication_submit,
    gold_merge_request,
)
from annotator.views.refusals import refusal


def _item_for(request: HttpRequest, slug: str, item_id: int) -> AdjudicationItem:
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    return get_object_or_404(
        AdjudicationItem.objects.select_related("project", "message", "message__dialogue"),
        pk=item_id, project=project,
    )


@login_required
@require_GET
def queue(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    form = QueueFilterForm(request.GET or None)
    filters = {"status": AdjudicationItem.Status.OPEN, "flag": "", "q": "", "after": "", "before": ""}
    if form.is_valid():
        filters = {name: form.cleaned_data[name] or default for name, default in filters.items()}
        first_page_only(form.cleaned_data["page"])
    if not request.htmx:
        _sweep(project)
    context = {"project": project, **filters, **sel.queue_page(project, **filters),
               "counts": sel.queue_counts(project, use_cache=True),
               "is_admin": access.role_in(request.user, project) == Role.ADMIN}
    template = "adjudication/_queue_rows.html" if request.htmx else "adjudication/queue.html"
    return render(request, template, context)


def _sweep(project) -> None:
    """Opening the queue merges finished items a failed or killed merge left behind: the sweep
    for installs without celery beat (``bin/demo``); idempotent, so a second one is harmless."""
    if sel.ready_to_merge_count(project, use_cache=True):
        gold_merge_request(project=project)


@login_required
@require_POST
def merge(request: HttpRequest, slug: str) -> HttpResponse:
    """Merge every finished item now (agreement -> gold, disagreement -> queue)."""
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    gold_merge_request(project=project)
    messages.success(request, "Merging finished items in the background: agreement becomes gold, disagreements join this queue. Reload the page in a few seconds to see them.")
    return redirect("adjudication-queue", slug=slug)


@login_required
@require_GET
def next_item(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    item = sel.next_open_item(project)
    if item is None:
        messages.success(request, "Nothing waits for adjudication.")
        return redirect("adjudication-queue", slug=slug)
    return redirect("adjudication-item", slug=slug, item_id=item.pk)


@login_required
@require_GET
def item(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    it = _item_for(request, slug, item_id)
    context = sel.item_context(it)
    colors = taxonomy_colors(it.project.taxonomy)  # only #rrggbb reaches adjudication.js
    context.update(colors=colors, keymap=adjudication_keymap(it.project.taxonomy))
    template = "adjudication/_item.html" if request.htmx else "adjudication/item.html"
    return render(request, template, context)


@login_required
@require_POST
def decide(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    it = _item_for(request, slug, item_id)
    form = DecisionForm(request.POST)
    url = reverse("adjudication-item", kwargs={"slug": slug, "item_id": it.pk})
    if not form.is_valid():
        error = "; ".join(e for errs in form.errors.values() for e in errs)
        return _refuse(request, url, f"Bad request: {error}", 400)
    d = form.cleaned_data
    try:
        adjudication_submit(item=it, user=request.user, spans=d["span"], version=d["version"],
                            notes=d.get("notes") or "", reply=d.get("reply") or "",
                            confirm_drop=d["confirm_drop"])
    except AdjudicationError as exc:
        return _refuse(request, url, exc.message, exc.status)
    nxt = sel.next_open_item(it.project, exclude=it.pk)
    target = (reverse("adjudication-item", kwargs={"slug": slug, "item_id": nxt.pk}) if nxt
              else reverse("adjudication-queue", kwargs={"slug": slug}))
    if request.htmx:
        return HttpResponseClientRedirect(target)
    messages.success(request, "Decision saved.")
    return redirect(target)


def _refuse(request: HttpRequest, url: str, message: str, status: int) -> HttpResponse:
    if request.htmx:
        return refusal(message, status)
    messages.error(request, message)
    return redirect(url)
