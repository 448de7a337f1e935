"""Webhooks: URLs a project admin registers for job events, and each delivery to them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.fields import JSONField


class WebhookEvent(models.TextChoices):
    """The job events a webhook can listen to (``ping`` is the page's test delivery, always sent)."""

    RUN_FINISHED = "run.finished", "Detector run finished (succeeded or failed)"
    RELEASE_BUILT = "release.built", "Release built"
    GOLD_EXPORT_BUILT = "gold_export.built", "Gold export built"


PING = "ping"


class Webhook(models.Model):
    """A URL that receives a signed POST for each event it listens to.

    ``secret`` signs every delivery (HMAC-SHA256), so it is kept as it was generated: the page shows
    it once, when the hook is registered, and never again (register a new hook to change it)."""

    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="webhooks")
    url = models.CharField(max_length=2000)
    events = JSONField(default=list)  # WebhookEvent values
    secret = models.CharField(max_length=100)
    # where the payload's links point: the site as the admin who registered the hook reached it
    site_url = models.CharField(max_length=500)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"webhook #{self.pk} → {self.url}"

    def event_labels(self) -> list[str]:
        return [WebhookEvent(e).label for e in self.events if e in WebhookEvent.values]


class WebhookDelivery(models.Model):
    """One event sent to one hook, with every attempt's outcome (the last one kept).

    ``event_key`` names the event (its kind, object, status and finish time): a hook gets one
    delivery per event however often the job's finishing code announces it (a database constraint)."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DELIVERED = "delivered", "Delivered"
        FAILED = "failed", "Failed"

    hook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40)
    event_key = models.CharField(max_length=200)
    payload = JSONField(default=dict)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-pk"]
        constraints = [
            models.UniqueConstraint(fields=["hook", "event_key"], name="webhook_delivery_once_per_event"),
        ]

    def __str__(self) -> str:
        return f"{self.event} → hook #{self.hook_id} ({self.status})"
