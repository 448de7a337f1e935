"""Celery tasks of projects (corpus imports, the figures pages show): ids in, one call."""

from __future__ import annotations

from celery import shared_task
from django.db import transaction

from annotator import storage
from annotator import task_names as names
from annotator.models import BackgroundJob
from annotator.selectors import figures
from annotator.services import jobs
from annotator.services.imports import corpus_import_file
from pipeline.corpus import CorpusError


@shared_task(acks_late=True, name=names.PROJECTS_CORPUS_IMPORT)
def corpus_import_job(job_id: int) -> None:
    """Import an uploaded file. The import and the job's success commit together, so a worker
    that dies half-way leaves nothing behind and the redelivered task starts clean."""
    job = BackgroundJob.objects.select_related("project", "created_by").get(pk=job_id)
    if job.is_finished:
        return
    jobs.job_start(job)
    try:
        with storage.upload_path(job.params) as path, transaction.atomic():
            result = corpus_import_file(
                project=job.project, path=path, name=job.params.get("name"), user=job.created_by,
                spans_as=job.params.get("spans_as", "run"),
                skip_existing=job.params.get("skip_existing", False), fmt=job.params.get("format"),
                progress=lambda done, total: jobs.job_cache_progress(job, done, total),
            )
            jobs.job_finish(job, result=result.to_dict())
    except CorpusError as exc:
        jobs.job_fail(job, exc)
    except Exception as exc:  # recorded for the user; the upload is kept for a retry
        jobs.job_fail(job, exc)
        raise


@shared_task(name=names.PROJECTS_FIGURE_REFRESH, ignore_result=True)
def figure_refresh(project_id: int, path: str, params: dict) -> None:
    """A page's figure at the project's current revision; the page showed the previous value
    meanwhile. Idempotent: a second delivery finds it computed and does nothing."""
    figures.refresh(project_id=project_id, path=path, params=params)
