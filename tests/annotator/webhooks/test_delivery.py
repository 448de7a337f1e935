"""Deliveries: signed, retried with backoff, recorded attempt by attempt, never sent twice, one per
hook and event; refused (and recorded) for loopback, link-local and metadata addresses by default."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest
from django.utils import timezone

from annotator.models import DetectorRun, Export, WebhookDelivery, WebhookEvent
from annotator.services import webhooks
from annotator.tasks.webhooks import webhook_deliver_task

pytestmark = pytest.mark.django_db
PAYLOAD_KEYS = {"event", "project", "job_id", "object_id", "status", "timestamp", "url"}


def verify(secret: str, header: str, body: bytes, tolerance: int = 300) -> bool:
    """The receiver's check, as docs/webhooks.md gives it."""
    fields = dict(part.split("=", 1) for part in header.split(","))
    expected = hmac.new(secret.encode(), f"{fields['t']}.".encode() + body, hashlib.sha256).hexdigest()
    return abs(time.time() - int(fields["t"])) <= tolerance and hmac.compare_digest(expected, fields["v1"])


@pytest.fixture
def finished_run(project):
    return DetectorRun.objects.create(project=project, detector="rules", status=DetectorRun.Status.SUCCEEDED,
                                      finished_at=timezone.now())


def test_a_failed_attempt_is_retried_with_backoff_then_delivered_once(loopback_allowed, receiver, hook_for,
                                                                      project, finished_run, settings,
                                                                      django_capture_on_commit_callbacks):
    hook = hook_for(project, receiver.url)
    with django_capture_on_commit_callbacks() as queued:  # the delivery task, queued: run it by hand
        assert webhooks.webhooks_fire(event=WebhookEvent.RUN_FINISHED, object_id=finished_run.pk) == 1
    assert len(queued) == 1
    delivery = WebhookDelivery.objects.get(hook=hook)
    receiver.answers = [503]

    first = webhooks.webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (first.outcome, first.retry_in) == ("retry", settings.BLINDSPOT_WEBHOOK_BACKOFF_SECONDS)
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("pending", 1, 503)
    assert "answered 503" in delivery.last_error

    second = webhooks.webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (second.outcome, second.retry_in) == ("delivered", None)
    assert (delivery.status, delivery.attempts, delivery.last_status_code, delivery.last_error) == (
        "delivered", 2, 200, "")
    assert delivery.delivered_at is not None

    # a retried or redelivered task after delivery sends nothing
    assert webhooks.webhook_deliver(delivery_id=delivery.pk).outcome == "already delivered"
    assert webhook_deliver_task.apply(args=[delivery.pk]).get() == "already delivered"
    assert len(receiver.got) == 2

    got = receiver.got[1]
    assert got["path"] == "/hooks/blindspot?k=1"
    assert verify("whsec_s3cret", got["headers"]["Blindspot-Signature"], got["body"])
    assert not verify("whsec_other", got["headers"]["Blindspot-Signature"], got["body"])
    assert not verify("whsec_s3cret", got["headers"]["Blindspot-Signature"], got["body"] + b" ")
    assert got["headers"]["Blindspot-Event"] == "run.finished"
    assert got["headers"]["Blindspot-Delivery"] == str(delivery.pk)
    payload = json.loads(got["body"])
    assert set(payload) == PAYLOAD_KEYS
    assert payload == {"event": "run.finished", "project": project.slug, "job_id": finished_run.pk,
                       "object_id": finished_run.pk, "status": "succeeded",
                       "timestamp": finished_run.finished_at.isoformat(),
                       "url": f"http://testserver/p/{project.slug}/runs/{finished_run.pk}/"}


def test_an_old_signature_fails_the_receivers_check():
    body = b'{"event":"ping"}'
    header = webhooks.signature("whsec_x", int(time.time()) - 3600, body)
    assert not verify("whsec_x", header, body)
    assert verify("whsec_x", webhooks.signature("whsec_x", int(time.time()), body), body)


def test_attempts_stop_at_the_limit_and_the_delivery_fails(loopback_allowed, receiver, hook_for, project,
                                                           finished_run):
    hook = hook_for(project, receiver.url)
    webhooks.webhooks_fire(event=WebhookEvent.RUN_FINISHED, object_id=finished_run.pk)
    delivery = WebhookDelivery.objects.get(hook=hook)
    receiver.answers = [500] * webhooks.MAX_ATTEMPTS
    waits = [webhooks.webhook_deliver(delivery_id=delivery.pk).retry_in for _ in range(webhooks.MAX_ATTEMPTS)]
    assert waits == [30, 60, 120, 240, 480, None]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == ("failed", webhooks.MAX_ATTEMPTS, 500)
    assert webhooks.webhook_deliver(delivery_id=delivery.pk).outcome == "already failed"
    assert len(receiver.got) == webhooks.MAX_ATTEMPTS


@pytest.mark.parametrize(("url", "says"), [
    ("http://127.0.0.1:{port}/x", "127.0.0.1 is a loopback address"),
    ("http://localhost:{port}/x", "localhost resolves to 127.0.0.1: 127.0.0.1 is a loopback address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata address"),
    ("http://[fe80::1]/x", "fe80::1 is a link-local address"),
    ("http://[fd00:ec2::254]/x", "cloud metadata address"),
])
def test_internal_addresses_are_refused_for_good_without_the_setting(settings, receiver, hook_for, project,
                                                                     finished_run, url, says):
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = []
    port = receiver.url.split(":")[2].split("/")[0]
    hook = hook_for(project, url.format(port=port))
    webhooks.webhooks_fire(event=WebhookEvent.RUN_FINISHED, object_id=finished_run.pk)
    delivery = WebhookDelivery.objects.get(hook=hook)
    attempt = webhooks.webhook_deliver(delivery_id=delivery.pk)
    delivery.refresh_from_db()
    assert (attempt.outcome, attempt.retry_in) == ("failed", None)
    assert delivery.status == "failed" and delivery.last_status_code is None
    assert delivery.last_error.startswith("Refused: ") and says in delivery.last_error
    assert "BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS" in delivery.last_error
    assert receiver.got == []


def test_an_event_announced_twice_makes_one_delivery_per_hook(loopback_allowed, receiver, hook_for, project,
                                                              finished_run, django_capture_on_commit_callbacks):
    one, two = hook_for(project, receiver.url), hook_for(project, receiver.url + "&two")
    deaf = hook_for(project, receiver.url, events=[WebhookEvent.RELEASE_BUILT])
    with django_capture_on_commit_callbacks(execute=True):
        assert webhooks.webhooks_fire(event=WebhookEvent.RUN_FINISHED, object_id=finished_run.pk) == 2
        assert webhooks.webhooks_fire(event=WebhookEvent.RUN_FINISHED, object_id=finished_run.pk) == 0
    assert sorted(WebhookDelivery.objects.values_list("hook_id", "status")) == [
        (one.pk, "delivered"), (two.pk, "delivered")]
    assert not deaf.deliveries.exists()
    assert len(receiver.got) == 2


def test_a_run_that_fails_again_after_a_resume_is_a_new_event(loopback_allowed, receiver, hook_for, project):
    hook = hook_for(project, receiver.url)
    run = DetectorRun.objects.create(project=project, detector="rules", status=DetectorRun.Status.FAILED,
                                     finished_at=timezone.now())
    webhooks.webhooks_fire(event=WebhookEvent.RUN_FINISHED, object_id=run.pk)
    DetectorRun.objects.filter(pk=run.pk).update(finished_at=timezone.now())  # resumed, failed again
    webhooks.webhooks_fire(event=WebhookEvent.RUN_FINISHED, object_id=run.pk)
    webhooks.webhooks_fire(event=WebhookEvent.RUN_FINISHED, object_id=run.pk)
    assert hook.deliveries.count() == 2
    assert {d.payload["status"] for d in hook.deliveries.all()} == {"failed"}


def test_a_job_running_again_announces_nothing(hook_for, project, receiver):
    hook = hook_for(project, receiver.url)
    run = DetectorRun.objects.create(project=project, detector="rules", status=DetectorRun.Status.RUNNING)
    assert webhooks.webhooks_fire(event=WebhookEvent.RUN_FINISHED, object_id=run.pk) == 0
    assert not hook.deliveries.exists()


def test_a_deleted_hook_sends_nothing(loopback_allowed, receiver, hook_for, project, finished_run, members):
    hook = hook_for(project, receiver.url)
    webhooks.webhooks_fire(event=WebhookEvent.RUN_FINISHED, object_id=finished_run.pk)
    delivery_id = hook.deliveries.get().pk
    webhooks.webhook_delete(hook=hook, by=members["admin"])
    assert webhooks.webhook_deliver(delivery_id=delivery_id).outcome.startswith("skipped")
    assert receiver.got == []


def test_the_task_retries_with_the_services_countdown_on_a_worker(loopback_allowed, receiver, hook_for, project,
                                                                  finished_run, monkeypatch, settings):
    hook = hook_for(project, receiver.url)
    webhooks.webhooks_fire(event=WebhookEvent.RUN_FINISHED, object_id=finished_run.pk)
    delivery = hook.deliveries.get()
    receiver.answers = [500]
    asked = {}

    class Retry(Exception):
        pass

    def retry(**kwargs):
        asked.update(kwargs)
        return Retry()

    monkeypatch.setattr(webhook_deliver_task, "retry", retry)
    webhook_deliver_task.push_request(is_eager=False)
    try:
        with pytest.raises(Retry):
            webhook_deliver_task.run(delivery.pk)
    finally:
        webhook_deliver_task.pop_request()
    assert asked == {"countdown": settings.BLINDSPOT_WEBHOOK_BACKOFF_SECONDS}
    assert webhook_deliver_task.max_retries is None  # Celery's default (3) would stop before the service does


def test_without_a_worker_one_attempt_is_made_and_recorded(loopback_allowed, receiver, hook_for, project,
                                                           finished_run):
    hook = hook_for(project, receiver.url)
    webhooks.webhooks_fire(event=WebhookEvent.RUN_FINISHED, object_id=finished_run.pk)
    receiver.answers = [500]
    assert webhook_deliver_task.apply(args=[hook.deliveries.get().pk]).get() == "retry"
    assert hook.deliveries.get().attempts == 1 and len(receiver.got) == 1


# ---- the job's own finishing code announces the event -------------------------------------


def test_a_runs_last_chunk_announces_run_finished(loopback_allowed, receiver, hook_for, corpus,
                                                  django_capture_on_commit_callbacks):
    from annotator.services import runs

    hook = hook_for(corpus, receiver.url, events=[WebhookEvent.RUN_FINISHED])
    run = runs.run_start(project=corpus, detector="rules", config={}, chunk_dialogues=1)
    with django_capture_on_commit_callbacks(execute=True):
        runs.run_enqueue(run)
    run.refresh_from_db()
    assert run.status == "succeeded", run.error
    chunk = run.chunks.first()
    assert runs.chunk_process(chunk_id=chunk.pk) == "already done"  # the finishing code again
    delivery = hook.deliveries.get()
    assert (delivery.event, delivery.status, delivery.payload["job_id"]) == ("run.finished", "delivered", run.pk)
    assert len(receiver.got) == 1


def test_a_built_gold_export_announces_itself_once(loopback_allowed, receiver, hook_for, corpus, members,
                                                   django_capture_on_commit_callbacks):
    from annotator.services import exports

    hook = hook_for(corpus, receiver.url, events=[WebhookEvent.GOLD_EXPORT_BUILT])
    with django_capture_on_commit_callbacks(execute=True):
        export = exports.gold_export_start(project=corpus, user=members["admin"])
    export.refresh_from_db()
    assert export.status == Export.Status.SUCCEEDED, export.error
    with django_capture_on_commit_callbacks(execute=True):
        assert exports.gold_export_build(export_id=export.pk) == "already built"
    delivery = hook.deliveries.get()
    assert (delivery.event, delivery.status) == ("gold_export.built", "delivered")
    assert delivery.payload["url"] == f"http://testserver/p/{corpus.slug}/exports/{export.pk}/"
    assert len(receiver.got) == 1


def test_no_hook_no_task(corpus, members, django_capture_on_commit_callbacks):
    """A project without webhooks queues no webhook task when a job finishes."""
    from annotator.services import exports

    with django_capture_on_commit_callbacks(execute=True) as queued:
        exports.gold_export_start(project=corpus, user=members["admin"])
    assert len(queued) == 1  # the build only


def test_a_built_release_announces_release_built(loopback_allowed, receiver, hook_for, corpus, members,
                                                 django_capture_on_commit_callbacks):
    from annotator.services import releases

    hook = hook_for(corpus, receiver.url, events=[WebhookEvent.RELEASE_BUILT])
    gold_only = hook_for(corpus, receiver.url, events=[WebhookEvent.GOLD_EXPORT_BUILT])
    with django_capture_on_commit_callbacks(execute=True):
        export = releases.release_start(project=corpus, user=members["admin"])
    export.refresh_from_db()
    assert export.status == Export.Status.SUCCEEDED, export.error
    delivery = hook.deliveries.get()
    assert (delivery.event, delivery.status, delivery.payload["job_id"]) == ("release.built", "delivered", export.pk)
    assert not gold_only.deliveries.exists()
    body = receiver.got[0]["body"].decode()
    assert "Maria" not in body and "example.com" not in body  # no text of the corpus, ever
