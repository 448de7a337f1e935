"""Celery tasks of adjudication (merging finished items into gold, and the sweep): ids in, one
service call, database errors retried with backoff."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager

from celery import Task, shared_task
from django.db import connections

from annotator import task_names as names
from annotator.models import Project
from annotator.services.adjudication import (
    TRANSIENT_DB_ERRORS,
    gold_merge_failure_record,
    gold_merge_ready,
    gold_merge_sweep,
)

logger = logging.getLogger(__name__)


class MergeTask(Task):
    """Retries database errors with exponential backoff, in a worker and in process alike.

    Celery reruns an eager task's retry at once; here it first waits the countdown a worker
    would have waited (``bin/demo`` and tests have no broker), after handing back a connection
    the error may have broken."""

    def retry(self, *args, countdown=None, **kwargs):
        if self.request.is_eager and countdown and self.request.retries < self.max_retries:
            for conn in connections.all(initialized_only=True):
                if not conn.in_atomic_block:
                    conn.close_if_unusable_or_obsolete()
            time.sleep(countdown)
        return super().retry(*args, countdown=countdown, **kwargs)


@contextmanager
def failure_recorded(task: Task, project_id: int | None, message_ids: list[int] | None = None):
    """Record a failure that will not be retried (any error but a transient database error, or
    one that outlasted its retries) where the project's admins see it, then let it propagate."""
    try:
        yield
    except Exception as exc:
        final = not isinstance(exc, TRANSIENT_DB_ERRORS) or task.request.retries >= task.max_retries
        if final:
            logger.error("%s failed after %d retries: %s", task.name, task.request.retries, exc)
            if project_id is not None:
                gold_merge_failure_record(project=project_id, error=f"{type(exc).__name__}: {exc}",
                                          message_ids=message_ids, retries=task.request.retries)
        raise


MERGE_RETRIES = 6  # 2+4+…+64 s (each capped at a minute): a short outage passes; the sweep does the rest
RETRY_BACKOFF = 2
_merge_options = {"base": MergeTask, "bind": True, "acks_late": True, "autoretry_for": TRANSIENT_DB_ERRORS,
                  "retry_backoff": RETRY_BACKOFF, "retry_backoff_max": 60, "retry_jitter": True,
                  "max_retries": MERGE_RETRIES}


@shared_task(name=names.ADJUDICATION_GOLD_MERGE, **_merge_options)
def gold_merge_job(self, project_id: int, message_ids: list[int] | None = None) -> None:
    """Merge finished items into gold or the adjudication queue (idempotent)."""
    with failure_recorded(self, project_id, message_ids):
        gold_merge_ready(project=Project.objects.get(pk=project_id), message_ids=message_ids)


@shared_task(name=names.ADJUDICATION_GOLD_MERGE_SWEEP, **_merge_options)
def gold_merge_sweep_job(self) -> None:
    """Merge every finished item still out of gold, in every project (celery beat runs it).
    A project's own failure is recorded by the sweep; here only a database outage is left."""
    with failure_recorded(self, None):
        gold_merge_sweep()
