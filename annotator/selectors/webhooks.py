"""Webhooks, read: a project's hooks with their last delivery, a hook's deliveries, who listens."""

from __future__ import annotations

from django.db.models import OuterRef, Subquery

from annotator.models import Project, Webhook, WebhookDelivery

RECENT_DELIVERIES = 50


def hooks_listening(project_id: int, event: str) -> list[Webhook]:
    """The project's hooks that listen to ``event`` (few per project: filtered here, which works on
    every database, rather than by a JSON containment lookup that SQLite lacks)."""
    return [h for h in Webhook.objects.filter(project_id=project_id) if event in h.events]


def hooks_with_last_delivery(project: Project) -> list[Webhook]:
    """The project's hooks, each with ``last_status``, ``last_event``, ``last_code`` and ``last_at``
    of its newest delivery (None when it has none), in one query."""
    newest = WebhookDelivery.objects.filter(hook=OuterRef("pk")).order_by("-pk")
    return list(Webhook.objects.filter(project=project).annotate(
        last_status=Subquery(newest.values("status")[:1]),
        last_event=Subquery(newest.values("event")[:1]),
        last_code=Subquery(newest.values("last_status_code")[:1]),
        last_at=Subquery(newest.values("created_at")[:1]),
    ).select_related("created_by"))


def hook_deliveries(hook: Webhook, limit: int = RECENT_DELIVERIES) -> list[WebhookDelivery]:
    """A hook's newest deliveries, newest first."""
    return list(hook.deliveries.order_by("-pk")[:limit])
