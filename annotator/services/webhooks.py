"""Webhooks: register and remove a project's hooks, turn a job event into one delivery per hook,
and deliver each one, signed, to an address :mod:`annotator.outbound` checked (docs/webhooks.md).

A job's finishing code announces its event by name (``enqueue(names.WEBHOOKS_FIRE, event, pk)``,
after commit, only when a hook listens); :func:`webhooks_fire` then records one delivery per hook
under the event's key (kind, object, status, finish time: a database constraint keeps it one
however often the event is announced) and queues each new one. :func:`webhook_deliver` makes one
attempt under a row lock and records it; the task retries a failed attempt with exponential
backoff until :data:`MAX_ATTEMPTS`. A delivery already delivered (or failed for good) is never
sent again, so a redelivered or retried task sends nothing twice.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from annotator import outbound
from annotator import task_names as names
from annotator.dispatch import enqueue
from annotator.models import DetectorRun, Export, Project, Webhook, WebhookDelivery, WebhookEvent
from annotator.models.webhooks import PING
from annotator.selectors.webhooks import hooks_listening
from annotator.services.audit import audit_record

MAX_ATTEMPTS = 6  # after failed attempt n the next waits BLINDSPOT_WEBHOOK_BACKOFF_SECONDS · 2**(n-1)
TIMEOUT_SECONDS = 10.0
SIGNATURE_HEADER = "Blindspot-Signature"
SECRET_PREFIX = "whsec_"
# the job an event is about, and the page its payload links to
EVENT_JOBS = {
    WebhookEvent.RUN_FINISHED: (DetectorRun, {}, "run-detail", "run_id"),
    WebhookEvent.RELEASE_BUILT: (Export, {"kind": Export.Kind.RELEASE}, "export-detail", "export_id"),
    WebhookEvent.GOLD_EXPORT_BUILT: (Export, {"kind": Export.Kind.GOLD}, "export-detail", "export_id"),
}


class WebhookError(ValueError):
    """A hook cannot be registered as asked; the message is for the admin."""


@dataclass(frozen=True)
class Attempt:
    """What one call of :func:`webhook_deliver` did; ``retry_in`` (seconds) when it should try again."""

    outcome: str
    retry_in: int | None = None


def webhook_create(*, project: Project, url: str, events: list[str], site_url: str, by) -> tuple[Webhook, str]:
    """Register ``url`` for ``events``; returns the hook and its signing secret (shown once)."""
    url = url.strip()
    unknown = sorted(set(events) - set(WebhookEvent.values))
    if unknown or not events:
        raise WebhookError(f"Unknown event(s): {', '.join(unknown)}." if unknown else "Choose at least one event.")
    try:
        outbound.url_check(url)
    except outbound.OutboundRefused as exc:
        raise WebhookError(str(exc)) from None
    except outbound.OutboundError as exc:
        raise WebhookError(f"{exc}: check the host name (each delivery resolves it again).") from None
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    hook = Webhook.objects.create(project=project, url=url, events=sorted(set(events)), secret=secret,
                                  site_url=site_url.rstrip("/"), created_by=by)
    audit_record(user=by, action="webhook.created", obj=hook, project=project, url=url, events=hook.events)
    return hook, secret


def webhook_delete(*, hook: Webhook, by) -> None:
    """Remove a hook and its delivery history; a delivery under way finds it gone and sends nothing."""
    audit_record(user=by, action="webhook.deleted", obj=hook, project=hook.project, url=hook.url)
    hook.delete()


def webhook_ping(*, hook: Webhook, by) -> WebhookDelivery:
    """Queue a test delivery (event ``ping``) to ``hook``: each one is a new delivery."""
    payload = {"event": PING, "project": hook.project.slug, "job_id": None, "object_id": hook.pk, "status": "ok",
               "timestamp": timezone.now().isoformat(),
               "url": hook.site_url + reverse("webhook-list", kwargs={"slug": hook.project.slug})}
    delivery = WebhookDelivery.objects.create(hook=hook, event=PING, event_key=f"{PING}:{uuid.uuid4().hex}",
                                              payload=payload)
    audit_record(user=by, action="webhook.ping", obj=hook, project=hook.project)
    enqueue(names.WEBHOOKS_DELIVER, delivery.pk)
    return delivery


def webhook_redeliver(*, delivery: WebhookDelivery, by) -> bool:
    """Queue a failed or pending delivery again, with a fresh round of attempts (a receiver that
    was fixed; or no worker, where a failed attempt is not retried by itself). A delivered one is
    never sent again: False."""
    previous = delivery.attempts
    updated = WebhookDelivery.objects.filter(pk=delivery.pk).exclude(status=WebhookDelivery.Status.DELIVERED).update(
        status=WebhookDelivery.Status.PENDING, attempts=0)
    if updated:
        audit_record(user=by, action="webhook.redeliver", obj=delivery.hook, project=delivery.hook.project,
                     delivery=delivery.pk, attempts_before=previous)
        enqueue(names.WEBHOOKS_DELIVER, delivery.pk)
    return bool(updated)


# ---------------------------------------------------------------------------------- events


def _event_job(event: str, object_id: int) -> DetectorRun | Export | None:
    model, where, _, _ = EVENT_JOBS[WebhookEvent(event)]
    return model.objects.select_related("project").filter(pk=object_id, **where).first()


def event_payload(hook: Webhook, event: str, job: DetectorRun | Export) -> dict:
    """What a delivery says: the event, its project, job and status, when, and the page to look at;
    never a text, a span, a name or a model's output."""
    _, _, page, arg = EVENT_JOBS[WebhookEvent(event)]
    path = reverse(page, kwargs={"slug": job.project.slug, arg: job.pk})
    return {"event": event, "project": job.project.slug, "job_id": job.pk, "object_id": job.pk,
            "status": job.status, "timestamp": job.finished_at.isoformat(), "url": hook.site_url + path}


def webhooks_fire(*, event: str, object_id: int) -> int:
    """One delivery per hook listening to ``event`` for the finished job ``object_id``; each new one
    is queued (after commit). Idempotent: the event's key names the job's status and finish time,
    and a hook has one delivery per key. Returns how many deliveries it queued."""
    job = _event_job(event, object_id)
    if job is None or not job.is_finished or job.finished_at is None:
        return 0  # gone, or started again since it announced the event
    key = f"{event}:{job.pk}:{job.status}:{job.finished_at.isoformat()}"
    queued = 0
    with transaction.atomic():  # rows and their queueing commit together: a retried task redoes both
        for hook in hooks_listening(job.project_id, event):
            delivery, created = WebhookDelivery.objects.get_or_create(
                hook=hook, event_key=key, defaults={"event": event, "payload": event_payload(hook, event, job)})
            if created:
                enqueue(names.WEBHOOKS_DELIVER, delivery.pk)
                queued += 1
    return queued


# ---------------------------------------------------------------------------------- delivery


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The ``Blindspot-Signature`` header: ``t=<unix time>,v1=<hex HMAC-SHA256 of "<t>.<body>">``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def _send(delivery: WebhookDelivery) -> tuple[int | None, str, bool]:
    """One POST: (status code or None, the error, whether it is final), signed at this moment."""
    body = json.dumps(delivery.payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "Blindspot-Webhooks/1",
               "Blindspot-Event": delivery.event, "Blindspot-Delivery": str(delivery.pk),
               SIGNATURE_HEADER: signature(delivery.hook.secret, int(time.time()), body)}
    try:
        code = outbound.post(delivery.hook.url, body, headers, timeout=TIMEOUT_SECONDS)
    except outbound.OutboundRefused as exc:
        return None, f"Refused: {exc}", True
    except outbound.OutboundError as exc:
        return None, f"No answer: {exc}", False
    if 200 <= code < 300:
        return code, "", False
    note = " (a redirect, which is not followed: register the URL it points to)" if 300 <= code < 400 else ""
    return code, f"The receiver answered {code}{note}.", False


def webhook_deliver(*, delivery_id: int) -> Attempt:
    """One attempt at a pending delivery, recorded on it. Sent under the row's lock (a second task
    for the same delivery skips it meanwhile); a delivered or failed one is never sent again."""
    with transaction.atomic():
        delivery = (WebhookDelivery.objects.select_for_update(skip_locked=True, of=("self",))
                    .select_related("hook", "hook__project").filter(pk=delivery_id).first())
        if delivery is None:
            return Attempt("skipped: gone, or being sent by another task")
        if delivery.status != WebhookDelivery.Status.PENDING:
            return Attempt(f"already {delivery.status}")
        code, error, final = _send(delivery)
        now = timezone.now()
        delivery.attempts += 1
        delivery.last_status_code, delivery.last_error, delivery.last_attempt_at = code, error, now
        retry_in = None
        if not error:
            delivery.status, delivery.delivered_at = WebhookDelivery.Status.DELIVERED, now
        elif final or delivery.attempts >= MAX_ATTEMPTS:
            delivery.status = WebhookDelivery.Status.FAILED
        else:
            retry_in = settings.BLINDSPOT_WEBHOOK_BACKOFF_SECONDS * 2 ** (delivery.attempts - 1)
        delivery.save(update_fields=["attempts", "last_status_code", "last_error", "last_attempt_at", "status",
                                     "delivered_at"])
    return Attempt(delivery.status if retry_in is None else "retry", retry_in)
