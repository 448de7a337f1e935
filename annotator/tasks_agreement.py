"""Celery tasks of this area: ids in, one service call."""

from __future__ import annotations

from celery import shared_task

from annotator.models import BackgroundJob, Project
from annotator.services.adjudication import gold_merge_ready
from annotator.services.agreement import job_run


@shared_task(acks_late=True)
def agreement_job(job_id: int) -> None:
    """Compute the agreement report (and detectors against gold) of a queued job."""
    job_run(job=BackgroundJob.objects.select_related("project").get(pk=job_id))


@shared_task(acks_late=True)
def circularity_job(job_id: int) -> None:
    """Compute the circularity report of a queued job."""
    job_run(job=BackgroundJob.objects.select_related("project").get(pk=job_id))


@shared_task(acks_late=True)
def gold_merge_job(project_id: int, message_ids: list[int] | None = None) -> None:
    """Merge finished items into gold or the adjudication queue (idempotent)."""
    gold_merge_ready(project=Project.objects.get(pk=project_id), message_ids=message_ids)
