"""Celery tasks of the workspace (sampling plans): ids in, one service call."""

from __future__ import annotations

from celery import shared_task

from annotator import task_names as names
from annotator.models import BackgroundJob
from annotator.services.assignments import plan_job_run


@shared_task(acks_late=True, name=names.WORKSPACE_PLAN_BUILD)
def plan_build_job(job_id: int) -> None:
    """Build a sampling plan. A redelivered job finds its plan written and writes nothing twice."""
    plan_job_run(BackgroundJob.objects.select_related("project", "created_by").get(pk=job_id))
