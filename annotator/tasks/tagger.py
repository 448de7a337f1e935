"""Celery tasks of the tagger (training, retraining, the retrain check when gold grew): ids in,
one service call."""

from __future__ import annotations

from celery import shared_task

from annotator import task_names as names
from annotator.models import BackgroundJob, Project
from annotator.services.tagger import tagger_train_job_run
from annotator.services.tagger_retrain import (
    tagger_retrain_if_due,
    tagger_retrain_job_run,
)


@shared_task(acks_late=True, name=names.TAGGER_TRAIN)
def tagger_train_job(job_id: int) -> None:
    """Train a tagger. A redelivered job whose training already finished does nothing."""
    job = BackgroundJob.objects.select_related("project", "created_by").get(pk=job_id)
    if job.is_finished:
        return
    tagger_train_job_run(job)


@shared_task(acks_late=True, name=names.TAGGER_RETRAIN)
def tagger_retrain_job(job_id: int) -> None:
    """Retrain from the project's gold; activate only if better. A redelivered job that already
    trained reuses its version (see ``services.tagger_retrain``); a finished one does nothing."""
    job = BackgroundJob.objects.select_related("project", "created_by").get(pk=job_id)
    if job.is_finished:
        return
    tagger_retrain_job_run(job)


@shared_task(acks_late=True, name=names.TAGGER_RETRAIN_CHECK)
def retrain_check(project_id: int) -> None:
    """Gold grew (a merge, an adjudication): queue a retrain if ``retrain_every`` new gold
    messages arrived since the last one. Safe to repeat: at most one retrain is open per project."""
    tagger_retrain_if_due(project=Project.objects.get(pk=project_id))
