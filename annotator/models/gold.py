"""The gold set: final spans with provenance, and the adjudication that produced them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.fields import JSONField
from annotator.models.spans import SpanFields


class AdjudicationDecision(models.Model):
    class Outcome(models.TextChoices):
        UNANIMOUS = "unanimous", "Unanimous (merged automatically)"
        MAJORITY = "majority", "Majority (merged automatically)"
        ADJUDICATED = "adjudicated", "Adjudicated"
        IMPORTED = "imported", "Imported as gold"
        AUDITED = "audited", "Confirmed in a release review"

    message = models.OneToOneField("annotator.Message", on_delete=models.CASCADE, related_name="decision")
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    risk = models.PositiveSmallIntegerField(default=0, help_text="0 agree, 1 label/boundary, 2 possible leak.")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    model_favoured = models.BooleanField(null=True, blank=True, help_text="Settled in the model's favour?")
    notes = models.TextField(blank=True, help_text="The adjudicator's own notes (never shown to annotators).")
    reply = models.TextField(
        blank=True, help_text="The adjudicator's answer to the item's annotators: each of them sees it, with the gold "
                              "spans, on their own submitted item.")
    details = JSONField(default=dict, blank=True)
    decided_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-decided_at"]

    def __str__(self) -> str:
        return f"{self.message_id}: {self.outcome}"


class GoldSpan(SpanFields):
    Provenance = AdjudicationDecision.Outcome

    message = models.ForeignKey("annotator.Message", on_delete=models.CASCADE, related_name="gold_spans")
    provenance = models.CharField(max_length=12, choices=AdjudicationDecision.Outcome.choices)
    annotators = JSONField(
        default=list, blank=True, help_text="[{'annotator': pseudonym, 'condition': 'blind'|'aware'}]"
    )
    model_matched = models.BooleanField(default=False)
    decision = models.ForeignKey(
        AdjudicationDecision, null=True, blank=True, on_delete=models.CASCADE, related_name="spans"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["message", "start"]
        constraints = [
            models.UniqueConstraint(fields=["message", "start", "end", "label"], name="gold_unique"),
            *SpanFields.span_checks("gold"),
        ]
