"""The span columns and their database guards, shared by every table that stores a span."""

from django.db import models
from django.db.models import F, Q


class SpanFields(models.Model):
    """``start``/``end`` are code-point offsets into the message text, end exclusive."""

    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    label = models.CharField(max_length=64)

    class Meta:
        abstract = True

    @classmethod
    def span_checks(cls, prefix: str) -> list[models.CheckConstraint]:
        return [
            models.CheckConstraint(
                condition=Q(start__gte=0) & Q(end__gt=F("start")), name=f"{prefix}_span_nonempty"
            )
        ]
