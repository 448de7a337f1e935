"""Gold exports and anonymized releases: admin-only pages and downloads."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotator import access
from annotator.forms.exports import (
    CandidateDecisionForm,
    GoldExportForm,
    ReleaseForm,
    ReleasePublishForm,
)
from annotator.models import Export, ReleaseCandidate, Role
from annotator.selectors.exports import export_is_stale, stale_export_ids
from annotator.selectors.keymap import review_keymap
from annotator.selectors.release_review import (
    candidate_context,
    next_candidate,
    review_counts,
    skipped_candidates,
    undo_offer,
)
from annotator.services import exports as export_services
from annotator.services import release_review as review_services
from annotator.services import releases as release_services
from annotator.services.audit import audit_record


@login_required
@require_http_methods(["GET", "POST"])
def export_list(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    action = request.POST.get("action") if request.method == "POST" else None
    gold_form = GoldExportForm(request.POST if action == "gold" else None, prefix="gold")
    release_form = ReleaseForm(request.POST if action == "release" else None, project=project, prefix="release")
    try:
        if action == "gold" and gold_form.is_valid():
            export = export_services.gold_export_start(project=project, user=request.user, **gold_form.cleaned_data)
            messages.success(request, f"Gold export v{export.version} queued.", extra_tags="job")
            return redirect("export-detail", slug=slug, export_id=export.pk)
        if action == "release" and release_form.is_valid():
            source, run = release_form.source_and_run()
            data = release_form.cleaned_data
            export = release_services.release_start(
                project=project, user=request.user, source=source, run=run, mode=data["mode"],
                scope=data["scope"], use_llm=data["use_llm"], complete_only=data["complete_only"],
            )
            messages.success(request, f"Release v{export.version} queued.", extra_tags="job")
            return redirect("export-detail", slug=slug, export_id=export.pk)
    except export_services.ExportError as exc:
        (gold_form if action == "gold" else release_form).add_error(None, str(exc))
    exports = list(Export.objects.filter(project=project).select_related("project", "created_by", "source_run"))
    return render(request, "exports/list.html", {
        "project": project, "gold_form": gold_form, "release_form": release_form, "exports": exports,
        "stale": stale_export_ids(exports, use_cache=True),
    })


@login_required
@require_GET
def export_detail(request: HttpRequest, slug: str, export_id: int) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    export = get_object_or_404(Export.objects.select_related("source_run", "created_by"), pk=export_id, project=project)
    context = {"project": project, "export": export, "finished": export.status in ("succeeded", "failed"),
               "stale": export_is_stale(export)}
    if export.kind == Export.Kind.RELEASE and export.status == Export.Status.SUCCEEDED:
        context["review"] = review_counts(export)
        if release_services.release_needs_acknowledgement(export):
            context["acknowledgement"] = release_services.release_acknowledgement(export)
    if request.htmx:
        return render(request, "exports/_progress.html", context)
    return render(request, "exports/detail.html", context)


@never_cache  # gold and the mapping table are originals: no cache may keep them
@login_required
@require_GET
def export_download(request: HttpRequest, slug: str, export_id: int, name: str) -> FileResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    export = get_object_or_404(Export, pk=export_id, project=project)
    try:
        stored = export_services.export_file_open(export, name)
    except export_services.ExportError as exc:
        raise Http404(str(exc)) from None
    audit_record(user=request.user, action=f"export.{export.kind}.download", obj=export, project=project, file=name)
    return FileResponse(stored, as_attachment=True, filename=export_services.export_file_name(export, name))  # streamed from storage


@never_cache  # gold and the mapping table are originals: no cache may keep them
@login_required
@require_GET
def export_zip_download(request: HttpRequest, slug: str, export_id: int) -> StreamingHttpResponse:
    """Every listed file of the export in one zip, streamed (the same role as one file's download;
    the private mapping of a release is never in it: it is not a listed file)."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    export = get_object_or_404(Export.objects.select_related("project"), pk=export_id, project=project)
    try:
        chunks = export_services.export_zip_stream(export)
    except export_services.ExportError as exc:
        raise Http404(str(exc)) from None
    audit_record(user=request.user, action=f"export.{export.kind}.download", obj=export, project=project,
                 file="(zip of every file)")
    response = StreamingHttpResponse(chunks, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{export_services.export_zip_name(export)}.zip"'
    return response


@never_cache  # gold and the mapping table are originals: no cache may keep them
@login_required
@require_GET
def release_mapping_download(request: HttpRequest, slug: str, export_id: int) -> FileResponse:
    """The original → surrogate table: the key to the release, for admins only."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    export = get_object_or_404(Export, pk=export_id, project=project, kind=Export.Kind.RELEASE)
    try:
        stored = release_services.release_mapping_open(export)
    except export_services.ExportError as exc:
        raise Http404(str(exc)) from None
    audit_record(user=request.user, action="export.release.mapping_download", obj=export, project=project)
    return FileResponse(stored, as_attachment=True,
                        filename=f"{project.slug}-release-v{export.version:03d}-MAPPING-PRIVATE.jsonl")


@login_required
@require_POST
def release_publish(request: HttpRequest, slug: str, export_id: int) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADMIN)
    export = get_object_or_404(Export, pk=export_id, project=project, kind=Export.Kind.RELEASE)
    form = ReleasePublishForm(request.POST)
    acknowledge = form.is_valid() and form.cleaned_data["acknowledge"]
    try:
        release_services.release_publish(export=export, user=request.user, acknowledge=acknowledge)
    except export_services.ExportError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Release v{export.version} is marked as published.")
    return redirect("export-detail", slug=slug, export_id=export.pk)


def _built_release(project, export_id: int) -> Export:
    return get_object_or_404(Export, pk=export_id, project=project, kind=Export.Kind.RELEASE,
                             status=Export.Status.SUCCEEDED)


@login_required
@require_GET
def release_review(request: HttpRequest, slug: str, export_id: int, candidate_id: int | None = None) -> HttpResponse:
    """The release's review queue, one candidate at a time in its context window (adjudicators
    and admins; never told which detector raised it), past the ones this reviewer skipped."""
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    export = _built_release(project, export_id)
    if candidate_id is not None:
        candidate = _candidate(export, candidate_id)
    else:
        after = request.GET.get("after", "")
        candidate = _next(request, export, after=int(after) if after.isdigit() else None)
    return _review_page(request, project, export, candidate)


def _next(request, export, *, after: int | None) -> ReleaseCandidate | None:
    return next_candidate(export, after=after, skipped=skipped_candidates(request.session, export))


def _review_page(request, project, export, candidate, notice: str = "") -> HttpResponse:
    context = {"project": project, "export": export, "notice": notice, "counts": review_counts(export),
               "keymap": review_keymap(project.labels), "undoable": undo_offer(export, request.user)}
    if candidate is not None:
        context.update(candidate_context(candidate))
    return render(request, "exports/_review_item.html" if request.htmx else "exports/review.html", context)


def _review_next(request, slug, project, export, after: int, notice: str) -> HttpResponse:
    """After a verdict or a skip: the next candidate (htmx), or the queue's page with the notice."""
    if not request.htmx:
        if notice:
            messages.warning(request, notice)
        return redirect(f"{reverse('release-review', args=[slug, export.pk])}?after={after}")
    return _review_page(request, project, export, _next(request, export, after=after), notice)


@login_required
@require_POST
def release_review_decide(request: HttpRequest, slug: str, export_id: int, candidate_id: int) -> HttpResponse:
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    export = _built_release(project, export_id)
    form = CandidateDecisionForm(request.POST, labels=project.labels)
    if not form.is_valid():
        return _review_again(request, project, export, candidate_id,
                             "Choose PII or not PII (and a label from this project's).")
    notice = ""
    try:
        review_services.candidate_decide(candidate_id=candidate_id, export=export, user=request.user,
                                        verdict=form.cleaned_data["verdict"], label=form.cleaned_data["label"] or None)
    except review_services.ReviewConflict as exc:  # settled by somebody else: on to the next
        notice = str(exc)
    except review_services.ReviewError as exc:  # not recorded: the same candidate, with why
        return _review_again(request, project, export, candidate_id, str(exc))
    return _review_next(request, slug, project, export, candidate_id, notice)


def _review_again(request, project, export, candidate_id: int, notice: str) -> HttpResponse:
    if not request.htmx:
        messages.warning(request, notice)
        return redirect("release-review-item", slug=project.slug, export_id=export.pk, candidate_id=candidate_id)
    return _review_page(request, project, export, _candidate(export, candidate_id), notice)


def _candidate(export: Export, candidate_id: int) -> ReleaseCandidate:
    return get_object_or_404(ReleaseCandidate.objects.select_related("message", "message__dialogue"),
                             pk=candidate_id, export=export)


@login_required
@require_POST
def release_review_skip(request: HttpRequest, slug: str, export_id: int, candidate_id: int) -> HttpResponse:
    """Skip a candidate: this reviewer's queue brings it back only when the rest are done."""
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    export = _built_release(project, export_id)
    review_services.candidate_skip(session=request.session, export=export,
                                   candidate_id=_candidate(export, candidate_id).pk)
    return _review_next(request, slug, project, export, candidate_id, "")


@login_required
@require_POST
def release_review_undo(request: HttpRequest, slug: str, export_id: int) -> HttpResponse:
    """Take back this reviewer's last verdict in the release and show its candidate again."""
    project = access.project_for(request.user, slug, Role.ADJUDICATOR)
    export = _built_release(project, export_id)
    try:
        candidate = review_services.candidate_undo(export=export, user=request.user)
    except review_services.ReviewError as exc:
        if not request.htmx:
            messages.warning(request, str(exc))
            return redirect("release-review", slug=slug, export_id=export.pk)
        return _review_page(request, project, export, _next(request, export, after=None), str(exc))
    notice = "Undone: it waits for your verdict again."
    if not request.htmx:
        messages.success(request, notice)
        return redirect("release-review-item", slug=slug, export_id=export.pk, candidate_id=candidate.pk)
    return _review_page(request, project, export, candidate, notice)
