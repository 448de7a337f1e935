"""Celery tasks of webhooks: ids in, one service call, retries with backoff."""

from __future__ import annotations

from celery import shared_task

from annotator import task_names as names
from annotator.services.webhooks import webhook_deliver, webhooks_fire


@shared_task(acks_late=True, reject_on_worker_lost=True, name=names.WEBHOOKS_FIRE)
def webhooks_fire_task(event: str, object_id: int) -> int:
    """One delivery per listening hook for a job's event; idempotent (one per hook and event)."""
    return webhooks_fire(event=event, object_id=object_id)


# max_retries=None: no Celery limit (its default is 3); the service fails a delivery after its attempts
@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None, name=names.WEBHOOKS_DELIVER)
def webhook_deliver_task(self, delivery_id: int) -> str:
    """One attempt; a failed one is tried again after the service's backoff, until it is delivered
    or has used its attempts (the delivery row counts them, so Celery's own limit is off). A
    redelivered or retried task finds a delivered delivery and sends nothing.

    Without a broker (tasks run in process) there is no waiting: one attempt is made and the
    delivery stays pending with its error, for the page to show."""
    attempt = webhook_deliver(delivery_id=delivery_id)
    if attempt.retry_in is not None and not self.request.is_eager:
        raise self.retry(countdown=attempt.retry_in)
    return attempt.outcome
