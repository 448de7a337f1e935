"""Who labels what, and every span decision they make."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models, transaction

from annotator.models import counters
from annotator.models.fields import JSONField
from annotator.models.spans import SpanFields


class Condition(models.TextChoices):
    BLIND = "blind", "Blind"
    AWARE = "aware", "Aware"


class AssignmentPlan(models.Model):
    """A reproducible sampling plan: its parameters and seed are shown to admins."""

    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="plans")
    params = JSONField(default=dict)
    seed = models.BigIntegerField(default=0)
    summary = JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"plan #{self.pk} (seed {self.seed})"


class Assignment(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "To do"
        IN_PROGRESS = "in_progress", "In progress"
        DONE = "done", "Done"
        SKIPPED = "skipped", "Skipped"

    Condition = Condition

    public_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="assignments")
    plan = models.ForeignKey(AssignmentPlan, null=True, blank=True, on_delete=models.SET_NULL, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    message = models.ForeignKey("annotator.Message", on_delete=models.CASCADE, related_name="assignments")
    condition = models.CharField(max_length=8, choices=Condition.choices, default=Condition.BLIND)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    # The sampling design, per message: scores and residual risk weigh the message 1/p.
    inclusion_probability = models.FloatField(
        default=1.0, help_text="Probability that the plan's design sampled this message: 1 for flagged "
                               "messages, the audit share r for audit messages, n/N for a dialogue sample.")
    flagged = models.BooleanField(
        null=True, blank=True, help_text="Whether the plan's detector runs flagged the message (empty: the "
                                         "plan used no runs).")
    order = models.PositiveIntegerField(default=0, help_text="Queue position (dialogue order).")
    version = models.PositiveIntegerField(default=0, help_text="Optimistic lock: bumped on every change.")
    no_pii = models.BooleanField(default=False)
    uncertain = models.BooleanField(default=False)
    comment = models.TextField(blank=True)
    active_seconds = models.FloatField(default=0)
    undo_log = JSONField(default=list, blank=True, help_text="Inverse of the last edits (undo).")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    timed_at = models.DateTimeField(
        null=True, blank=True,
        help_text="When the item was opened or active time last credited: the next credit is capped by the time since.",
    )

    class Meta:
        ordering = ["annotator", "order"]
        constraints = [
            models.UniqueConstraint(fields=["annotator", "message"], name="assignment_once_per_annotator")
        ]
        indexes = [
            models.Index(fields=["annotator", "project", "status", "order"], name="assignment_queue"),
            # an annotator's whole queue in order, any status (the queue list's pages)
            models.Index(fields=["annotator", "project", "order"], name="assignment_queue_order"),
            # the next unfinished item: without it, a queue all done is read to its end to find none
            models.Index(fields=["annotator", "project", "order"], name="assignment_open_queue",
                         condition=models.Q(status__in=["pending", "in_progress"])),
            models.Index(fields=["project", "message"], name="assignment_by_message"),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} → {self.message} ({self.condition})"

    def save(self, *args, **kwargs):
        """Save, and move the annotator's :class:`~annotator.models.counters.QueueCount` in the same
        transaction when the status, the annotator or the project changed: the stored row is re-read
        under its lock, so two writers of one item never count the same move twice."""
        fields = kwargs.get("update_fields")
        if fields is not None and not _COUNTED & set(fields):
            return super().save(*args, **kwargs)
        with transaction.atomic():
            stored = None
            if not self._state.adding and self.pk is not None:
                stored = (Assignment.objects.select_for_update().filter(pk=self.pk)
                          .values_list("project_id", "annotator_id", "status").first())
            super().save(*args, **kwargs)
            counters.moved(self, stored)


_COUNTED = {"status", "annotator", "annotator_id", "project", "project_id"}


class Annotation(SpanFields):
    class Origin(models.TextChoices):
        ACCEPTED = "accepted_model", "Accepted model suggestion"
        EDITED = "edited_model", "Edited model suggestion"
        ADDED = "added", "Added by annotator"
        REJECTED = "rejected_model", "Rejected model suggestion"

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="annotations")
    condition = models.CharField(max_length=8, choices=Condition.choices)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.ADDED)
    prediction = models.ForeignKey(
        "annotator.Prediction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["assignment", "start"]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "start", "end", "label", "origin"], name="annotation_unique"
            ),
            *SpanFields.span_checks("annotation"),
        ]

    @property
    def is_span(self) -> bool:
        """Rejections are decisions, not spans of the annotator's labelling."""
        return self.origin != self.Origin.REJECTED
