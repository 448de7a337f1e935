"""Celery tasks of detector runs: ids in, one service call."""

from __future__ import annotations

from celery import shared_task

from annotator import task_names as names
from annotator.services.runs import chunk_process


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, name=names.RUNS_CHUNK_PROCESS)
def run_chunk_task(self, chunk_id: int) -> str:
    """Idempotent: a redelivered chunk replaces its own predictions or finds itself done.

    Detector errors are recorded on the chunk and the run by the service and not retried here:
    the LLM detector already retries transient endpoint errors itself, and an admin can resume
    a failed run from its page.
    """
    return chunk_process(chunk_id=chunk_id, worker=self.request.hostname or "")
