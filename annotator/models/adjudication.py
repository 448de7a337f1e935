"""The adjudication queue: finished items whose annotators disagree, ordered by risk."""

from __future__ import annotations

from django.db import models

from annotator.models.fields import JSONField


class AdjudicationItem(models.Model):
    """One message a person must settle. ``risk`` follows :mod:`pipeline.adjudication`:
    3 possible leak, 2 label, 1 boundary, 0 none; ``risk_weight`` orders within a level."""

    class Status(models.TextChoices):
        OPEN = "open", "Waiting for an adjudicator"
        SETTLED = "settled", "Settled"

    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="adjudication_items")
    message = models.OneToOneField("annotator.Message", on_delete=models.CASCADE, related_name="adjudication_item")
    # The message's dialogue and position, copied for the queue's order (risk, then dialogue order)
    # so that one index serves it and a cursor pages it at any depth; a message never moves. The item
    # goes with its message; DO_NOTHING keeps a dialogue's deletion from looking items up by it.
    dialogue = models.ForeignKey("annotator.Dialogue", on_delete=models.DO_NOTHING, related_name="+",
                                 db_index=False)
    position = models.PositiveIntegerField(help_text="The message's position in its dialogue.")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.OPEN)
    risk = models.PositiveSmallIntegerField(default=0)
    risk_weight = models.PositiveIntegerField(default=0)
    risk_details = JSONField(default=dict, blank=True)
    version = models.PositiveIntegerField(default=0, help_text="Optimistic lock: bumped on every decision.")
    decision = models.OneToOneField(
        "annotator.AdjudicationDecision", null=True, blank=True, on_delete=models.SET_NULL, related_name="item"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    settled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-risk", "-risk_weight", "dialogue_id", "position", "id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(risk__lte=3), name="adjudication_item_risk_range"),
        ]
        indexes = [
            models.Index(fields=["project", "status", "-risk", "-risk_weight", "dialogue", "position", "id"],
                         name="adjudication_queue_order"),
        ]

    QUEUE_ORDER = ("-risk", "-risk_weight", "dialogue_id", "position", "id")  # the index above

    def __str__(self) -> str:
        return f"{self.message} ({self.get_status_display()}, risk {self.risk})"

    @classmethod
    def for_message(cls, message, **fields) -> AdjudicationItem:
        """An unsaved item of ``message``, carrying its dialogue and position (no query)."""
        return cls(project_id=message.project_id, message=message, dialogue_id=message.dialogue_id,
                   position=message.position, **fields)

    @property
    def changed_after_decision(self) -> bool:
        """Open again although decided: an annotator changed a submitted item after the decision
        (only a re-merge reopens a decided item; the decision's gold stands until it is revised)."""
        return self.status == self.Status.OPEN and self.decision_id is not None
