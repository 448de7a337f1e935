"""Progress bookkeeping for background jobs, written so a polling page sees it at once."""

from __future__ import annotations

import traceback

from django.core.cache import cache
from django.utils import timezone

from annotator.models import BackgroundJob


def job_start(job: BackgroundJob) -> None:
    BackgroundJob.objects.filter(pk=job.pk).update(
        status=BackgroundJob.Status.RUNNING, started_at=timezone.now(), error=""
    )


def job_progress(job: BackgroundJob, done: int, total: int, message: str = "") -> None:
    BackgroundJob.objects.filter(pk=job.pk).update(
        progress_done=min(done, total), progress_total=total, message=message[:300]
    )


def job_cache_progress(job: BackgroundJob, done: int, total: int) -> None:
    """Progress from inside a transaction: the database row is not visible until commit."""
    cache.set(f"job-progress:{job.pk}", (done, total), timeout=3600)


def job_live_progress(job: BackgroundJob) -> tuple[int, int]:
    if job.is_finished or job.progress_total:
        return job.progress_done, job.progress_total
    return cache.get(f"job-progress:{job.pk}") or (0, 0)


def job_finish(job: BackgroundJob, *, result: dict | None = None) -> None:
    BackgroundJob.objects.filter(pk=job.pk).update(
        status=BackgroundJob.Status.SUCCEEDED, finished_at=timezone.now(), result=result or {},
    )


def job_fail(job: BackgroundJob, exc: BaseException) -> None:
    detail = str(exc) or type(exc).__name__
    if not isinstance(exc, ValueError | PermissionError):
        detail += "\n\n" + "".join(traceback.format_exception_only(type(exc), exc))
    BackgroundJob.objects.filter(pk=job.pk).update(
        status=BackgroundJob.Status.FAILED, finished_at=timezone.now(), error=detail[:20000]
    )
