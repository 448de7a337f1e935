"""The API's gold exports and anonymized releases: what the Exports pages do (list, build, detail
with evidence, residual risk, leak and review counts, download of a listed file, publish)."""

from __future__ import annotations

from django.http import FileResponse
from django.shortcuts import get_object_or_404
from django.utils.cache import add_never_cache_headers
from ninja import Query, Router

from annotator import access
from annotator.api.common import ApiError, export_json, form_or_error, started
from annotator.api.paging import Page, Paged, paged
from annotator.api.schemas import REFUSALS, Error, ExportDetail, ExportIn, ExportOut, PublishIn
from annotator.forms.exports import GoldExportForm, ReleaseForm, ReleasePublishForm
from annotator.models import Export, Role
from annotator.selectors.exports import export_is_stale
from annotator.selectors.release_review import review_counts
from annotator.services import exports as export_services
from annotator.services import releases as release_services
from annotator.services.audit import audit_record

router = Router(tags=["exports and releases"])


def _export(request, slug: str, export_id: int, **where) -> Export:
    project = access.project_for(request.user, slug, Role.ADMIN)
    return get_object_or_404(Export.objects.select_related("project", "source_run"), pk=export_id,
                             project=project, **where)


@router.get("/projects/{slug}/exports/", response={200: Paged[ExportOut], **REFUSALS}, url_name="api-exports")
def export_list(request, slug: str, page: Query[Page]):
    """Gold exports and releases, newest first."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    return paged(request, page, Export.objects.filter(project=project).select_related("project"), export_json)


def _build(project, user, body: ExportIn) -> Export:
    """Queue a gold export or a release from the page's own form (its fields, its checks)."""
    fields = body.model_dump(exclude={"kind"})
    try:
        if body.kind == Export.Kind.GOLD:
            form = form_or_error(GoldExportForm({k: fields[k] for k in ("test_fraction", "seed")}))
            return export_services.gold_export_start(project=project, user=user, **form.cleaned_data)
        if body.kind == Export.Kind.RELEASE:
            form = form_or_error(ReleaseForm(fields, project=project))
            source, run = form.source_and_run()
            data = form.cleaned_data
            return release_services.release_start(
                project=project, user=user, source=source, run=run, mode=data["mode"], scope=data["scope"],
                use_llm=data["use_llm"], complete_only=data["complete_only"])
    except export_services.ExportError as exc:
        raise ApiError(400, str(exc)) from None
    raise ApiError(400, "kind is gold or release.", {"kind": ["Choose gold or release."]})


@router.post("/projects/{slug}/exports/", response={202: ExportOut, 400: Error, **REFUSALS},
             url_name="api-exports")
def export_start(request, slug: str, body: ExportIn):
    """Build a new version: a gold export (``test_fraction``, ``seed``) or a release (``source``,
    ``mode``, ``scope``, ``use_llm``, ``complete_only``), as a job."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    return started(request, lambda: export_json(_build(project, request.user, body)))


@router.get("/projects/{slug}/exports/{export_id}/", response={200: ExportDetail, **REFUSALS},
            url_name="api-export")
def export_detail(request, slug: str, export_id: int):
    """An export's state and files; a built release also its leak and utility reports, evidence,
    residual risk, review counts and what publishing it would acknowledge."""
    export = _export(request, slug, export_id)
    out = {**export_json(export), "stale": export_is_stale(export), "manifest": export.manifest,
           "report": export.report}
    if export.kind == Export.Kind.RELEASE and export.status == Export.Status.SUCCEEDED:
        out["review"] = review_counts(export)
        out["needs_acknowledgement"] = release_services.release_needs_acknowledgement(export)
        out["acknowledgement"] = (release_services.release_acknowledgement(export)
                                  if out["needs_acknowledgement"] else None)
    return out


@router.get("/projects/{slug}/exports/{export_id}/files/{path:name}", response={200: None, **REFUSALS},
            url_name="api-export-file")
def export_file(request, slug: str, export_id: int, name: str):
    """One listed file of a finished export, streamed (audited as a download, as on the page)."""
    export = _export(request, slug, export_id)
    try:
        stored = export_services.export_file_open(export, name)
    except export_services.ExportError as exc:
        raise ApiError(404, str(exc)) from None
    audit_record(user=request.user, action=f"export.{export.kind}.download", obj=export, project=export.project,
                 file=name, via="api")
    response = FileResponse(stored, as_attachment=True, filename=export_services.export_file_name(export, name))
    add_never_cache_headers(response)  # gold and releases' files: no cache may keep them
    return response


@router.post("/projects/{slug}/exports/{export_id}/publish/", response={200: ExportDetail, 400: Error, **REFUSALS},
             url_name="api-export-publish")
def release_publish(request, slug: str, export_id: int, body: PublishIn):
    """Mark a built release as published: refused after a leak or a confirmed candidate, and for
    an unreviewed release unless ``acknowledge`` is true (the page's rules; audited)."""
    export = _export(request, slug, export_id, kind=Export.Kind.RELEASE)
    form = form_or_error(ReleasePublishForm({"acknowledge": body.acknowledge or ""}))
    try:
        release_services.release_publish(export=export, user=request.user,
                                         acknowledge=form.cleaned_data["acknowledge"])
    except export_services.ExportError as exc:
        raise ApiError(400, str(exc)) from None
    return export_detail(request, slug, export_id)
