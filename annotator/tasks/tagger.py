"""Celery tasks of the tagger (training): ids in, one service call."""

from __future__ import annotations

from celery import shared_task

from annotator.models import BackgroundJob
from annotator.services.tagger import tagger_train_job_run


@shared_task(acks_late=True, name="annotator.tasks.tagger_train_job")
def tagger_train_job(job_id: int) -> None:
    """Train a tagger. A redelivered job whose training already finished does nothing."""
    job = BackgroundJob.objects.select_related("project", "created_by").get(pk=job_id)
    if job.is_finished:
        return
    tagger_train_job_run(job)
