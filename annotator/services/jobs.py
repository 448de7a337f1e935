"""The one job lifecycle: start, progress, finish, fail and cancel for every background job.

Runs, exports, releases, plans, training, imports and reports all keep their state in the
fields of :class:`~annotator.models.JobFields`; only these functions move them. Each writes with a
single ``UPDATE`` so a polling page sees it at once, and each guards the state it leaves (a
finished job is never started, failed or cancelled again), which keeps redelivered tasks harmless.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from annotator.models import BackgroundJob, JobFields, JobStatus

UNFINISHED = (JobStatus.QUEUED, JobStatus.RUNNING)
# a one-at-a-time job (retrain, distillation) unfinished this long lost its worker: the next may start
STALE_AFTER = timedelta(hours=6)


def _rows(job: JobFields):
    return type(job)._default_manager.filter(pk=job.pk)


def job_start(job: JobFields, *, redo_failed: bool = False) -> bool:
    """Queued (or running again, when a task is redelivered) -> running. False if it finished;
    ``redo_failed`` lets a failed or cancelled job run again (its error is cleared)."""
    allowed = UNFINISHED + ((JobStatus.FAILED, JobStatus.CANCELLED) if redo_failed else ())
    _rows(job).filter(started_at__isnull=True).update(started_at=timezone.now())
    return bool(_rows(job).filter(status__in=allowed).update(status=JobStatus.RUNNING, error="", finished_at=None))


def job_claim(job: JobFields, *, redo_failed: bool = False, take_over_after: timedelta | None = None) -> bool:
    """Queued -> running under the row's lock: True for the one delivery of a task that may work
    on the job, False for a duplicate delivered while it runs (or after it finished), which must
    do nothing. A build that restarts from an empty directory would otherwise pull the files from
    under the first (``demo_setup`` building release v1 while a worker got the same task).

    ``redo_failed`` lets a failed or cancelled job run again; ``take_over_after`` lets a delivery
    take a job over whose claim is older than that (the broker redelivers a task whose worker died
    only after its visibility timeout)."""
    now = timezone.now()
    with transaction.atomic():
        row = _rows(job).select_for_update().values("status", "started_at").first()
        if row is None:
            return False
        claimable = row["status"] == JobStatus.QUEUED or (
            redo_failed and row["status"] in (JobStatus.FAILED, JobStatus.CANCELLED))
        abandoned = (row["status"] == JobStatus.RUNNING and take_over_after is not None
                     and (row["started_at"] is None or row["started_at"] < now - take_over_after))
        if not (claimable or abandoned):
            return False
        _rows(job).update(status=JobStatus.RUNNING, started_at=now, error="", finished_at=None)
    return True


def job_progress(job: JobFields, done: int, total: int, message: str = "") -> None:
    fields = {"progress_done": min(done, total), "progress_total": total}
    if isinstance(job, BackgroundJob):
        fields["message"] = message[:300]
    _rows(job).update(**fields)


def job_cache_progress(job: JobFields, done: int, total: int) -> None:
    """Progress from inside a transaction: the database row is not visible until commit."""
    cache.set(f"job-progress:{type(job).__name__}:{job.pk}", (done, total), timeout=3600)


def job_live_progress(job: JobFields) -> tuple[int, int]:
    if job.is_finished or job.progress_total:
        return job.progress_done, job.progress_total
    return cache.get(f"job-progress:{type(job).__name__}:{job.pk}") or (0, 0)


def job_finish(job: JobFields, *, result: dict | None = None, **fields) -> bool:
    """Running -> succeeded, with the job's own outcome fields (a report, files, a result)."""
    if isinstance(job, BackgroundJob):
        fields["result"] = result or {}
    return bool(_rows(job).filter(status__in=UNFINISHED).update(
        status=JobStatus.SUCCEEDED, finished_at=timezone.now(), **fields))


def error_text(exc: BaseException | str) -> str:
    """What the job's page shows: the message; a traceback line unless the error is the user's."""
    if isinstance(exc, str):
        return exc
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        return "Interrupted: the process running this job was stopped. Start it again."
    detail = str(exc) or type(exc).__name__
    if not isinstance(exc, ValueError | PermissionError):
        detail += "\n\n" + "".join(traceback.format_exception_only(type(exc), exc))
    return detail


def job_fail(job: JobFields, exc: BaseException | str) -> bool:
    """Queued or running -> failed with its error. False if it had already finished."""
    return bool(_rows(job).filter(status__in=UNFINISHED).update(
        status=JobStatus.FAILED, finished_at=timezone.now(), error=error_text(exc)[:20000]))


def job_fail_if_stale(job: JobFields, *, what: str, after: timedelta = STALE_AFTER) -> bool:
    """Fail an unfinished job started (or queued) longer than ``after`` ago: its worker died
    without a word (killed, machine gone), and a "running" row must not block the next one
    forever. True when it was failed; ``what`` names it in the error ("this retrain")."""
    if (job.started_at or job.created_at) >= timezone.now() - after:
        return False
    return job_fail(job, f"No worker finished {what} within {after.total_seconds() / 3600:g} hours "
                         "(its process probably stopped); a new one was queued.")


def job_cancel(job: JobFields) -> bool:
    """Queued or running -> cancelled; work already done is kept. False if it had finished."""
    return bool(_rows(job).filter(status__in=UNFINISHED).update(
        status=JobStatus.CANCELLED, finished_at=timezone.now()))


@contextmanager
def job_failing(job: JobFields) -> Iterator[None]:
    """Whatever stops the work inside (an error, Ctrl-C, a process exit) marks the job failed
    with its error before it propagates: a job is never left "running" by its own process."""
    try:
        yield
    except BaseException as exc:
        job_fail(job, exc)
        raise
