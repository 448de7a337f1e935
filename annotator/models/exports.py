from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.fields import JSONField
from annotator.models.jobs import JobFields


class Export(JobFields):
    """An immutable, versioned gold export or anonymized release; its files live under var/exports."""

    class Kind(models.TextChoices):
        GOLD = "gold", "Gold export"
        RELEASE = "release", "Anonymized release"

    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="exports")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    version = models.PositiveIntegerField()
    params = JSONField(default=dict, blank=True)
    source_run = models.ForeignKey(
        "annotator.DetectorRun", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    files = JSONField(default=list, blank=True, help_text="[{name, size, sha256}]")
    manifest = JSONField(default=dict, blank=True)
    report = JSONField(default=dict, blank=True, help_text="Leak and utility reports.")
    publishable = models.BooleanField(default=False)
    gold_state = JSONField(
        default=dict, blank=True,
        help_text="The gold it was built from (annotator.selectors.exports.gold_state), to tell when it is stale.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["project", "kind", "version"], name="export_unique_version")
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} v{self.version}"

    @property
    def uses_gold(self) -> bool:
        """A gold export, or a release of the gold set (a release of a run's spans is not)."""
        return self.kind == self.Kind.GOLD or self.params.get("source", "gold") == "gold"
