from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.fields import JSONField


class AuditEvent(models.Model):
    """Append-only record of every decision, run and export."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    project = models.ForeignKey(
        "annotator.Project", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=64)
    object_type = models.CharField(max_length=64, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    details = JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["project", "action"], name="audit_by_action"),
            # a project's newest event, read on every dashboard and statistics view (its revision)
            models.Index(fields=["project", "-id"], name="audit_newest_by_project"),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.user} {self.action} {self.object_type}:{self.object_id}"
