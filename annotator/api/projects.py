"""The API's projects, imports and jobs: what the project list, the Import page and the job page do."""

from __future__ import annotations

from pathlib import Path

from ninja import File, Form, Query, Router
from ninja.files import UploadedFile

from annotator import access, storage
from annotator.api.common import ApiError, form_or_error, job_json, started
from annotator.api.paging import Page, Paged, paged
from annotator.api.schemas import REFUSALS, Error, JobOut, ProjectOut
from annotator.forms.projects import ImportForm
from annotator.models import BackgroundJob, Role
from annotator.services.imports import corpus_import_start

router = Router(tags=["projects"])


@router.get("/projects/", response={200: Paged[ProjectOut], 401: Error}, url_name="api-projects")
def project_list(request, page: Query[Page]):
    """The projects you are a member of, with your role in each."""
    rows = access.projects_for(request.user).order_by("slug")
    return paged(request, page, rows, lambda p: {"slug": p.slug, "name": p.name,
                                                 "role": access.role_in(request.user, p)})


@router.post("/projects/{slug}/imports/", response={202: JobOut, 400: Error, **REFUSALS}, url_name="api-imports")
def import_start(request, slug: str, file: File[UploadedFile], format: Form[str] = "",  # noqa: A002
                 spans_as: Form[str] = "run", skip_existing: Form[bool] = False):
    """Import a file as the Import page does (all or nothing, as a job): JSONL, CSV, Label Studio,
    doccano or a spaCy DocBin. A file that fails fails the job: its ``error`` lists each problem
    with its line."""
    project = access.project_for(request.user, slug, Role.ADMIN)
    data = {"format": format, "spans_as": spans_as, "skip_existing": skip_existing}
    form = form_or_error(ImportForm(data, {"file": file}))
    upload = form.cleaned_data["file"]

    def start():
        key = storage.upload_save(upload, Path(upload.name).suffix.lower()[:10])
        job = corpus_import_start(project=project, user=request.user, params={
            "upload": key, "name": upload.name, "spans_as": form.cleaned_data["spans_as"],
            "skip_existing": form.cleaned_data["skip_existing"], "format": form.cleaned_data["format"] or None})
        return job_json(job)

    return started(request, start)


@router.get("/jobs/{job_id}/", response={200: JobOut, **REFUSALS}, url_name="api-job")
def job_detail(request, job_id: int):
    """Any background job of a project you administer (an import, a plan, a report, training):
    its status, progress, result or error."""
    job = BackgroundJob.objects.select_related("project").filter(pk=job_id).first()
    if job is None or job.project is None:
        raise ApiError(404, "No such job.")
    access.project_for(request.user, job.project.slug, Role.ADMIN)
    return job_json(job)
