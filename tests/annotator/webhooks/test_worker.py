"""A real Celery worker over Redis retries a failed delivery after its backoff, then delivers once."""

from __future__ import annotations

import pytest
from django.utils import timezone

from annotator.models import DetectorRun, WebhookEvent
from annotator.services import webhooks
from tests.conftest import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.redis, pytest.mark.postgres]


def test_a_worker_retries_after_the_backoff_and_delivers_once(celery_worker, receiver, hook_for, project):
    worker = celery_worker(extra_env={"BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS": "127.0.0.1/32",
                                      "BLINDSPOT_WEBHOOK_BACKOFF_SECONDS": "1"})
    hook = hook_for(project, receiver.url)
    run = DetectorRun.objects.create(project=project, detector="rules", status=DetectorRun.Status.SUCCEEDED,
                                     finished_at=timezone.now())
    receiver.answers = [502]
    assert webhooks.webhooks_fire(event=WebhookEvent.RUN_FINISHED, object_id=run.pk) == 1  # sent at commit
    delivery = hook.deliveries.get()
    wait_for(lambda: hook.deliveries.get().status == "delivered", timeout=90,
             what=lambda: f"the delivery\n{worker.output()}")
    delivery.refresh_from_db()
    assert (delivery.attempts, delivery.last_status_code) == (2, 200)
    assert len(receiver.got) == 2
    assert receiver.got[1]["at"] - receiver.got[0]["at"] >= 0.9  # the countdown was waited
