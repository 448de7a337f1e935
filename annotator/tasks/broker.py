"""The sweep that sends again what the broker did not take while it was away (annotator/dispatch.py)."""

from __future__ import annotations

from celery import shared_task

from annotator import task_names as names
from annotator.dispatch import redispatch_undelivered


@shared_task(name=names.BROKER_REDISPATCH, ignore_result=True)
def redispatch_undelivered_job() -> dict[str, int]:
    return redispatch_undelivered()
