"""Celery tasks of the reports (agreement, circularity, a run scored against gold): ids in, one
service call."""

from __future__ import annotations

from celery import shared_task

from annotator import task_names as names
from annotator.models import BackgroundJob
from annotator.services.reports import agreement_job_run, circularity_job_run, evaluation_job_run


@shared_task(acks_late=True, name=names.REPORTS_AGREEMENT)
def agreement_job(job_id: int) -> None:
    """Compute the agreement report (and detectors against gold) of a queued job."""
    agreement_job_run(job=BackgroundJob.objects.select_related("project").get(pk=job_id))


@shared_task(acks_late=True, name=names.REPORTS_CIRCULARITY)
def circularity_job(job_id: int) -> None:
    """Compute the circularity report of a queued job."""
    circularity_job_run(job=BackgroundJob.objects.select_related("project").get(pk=job_id))


@shared_task(acks_late=True, name=names.REPORTS_EVALUATION)
def evaluation_job(job_id: int) -> None:
    """Score a run against gold for its page (the cached scores)."""
    evaluation_job_run(job=BackgroundJob.objects.select_related("project").get(pk=job_id))
