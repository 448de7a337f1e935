"""Detector runs and what they predicted."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.fields import JSONField
from annotator.models.jobs import JobFields
from annotator.models.spans import SpanFields


class DetectorRun(JobFields):
    """A detector over a project's messages; its progress counts messages, done in chunks."""

    class Source(models.TextChoices):
        DETECTOR = "detector", "Detector"
        IMPORT = "import", "Imported spans"

    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="runs")
    detector = models.CharField(max_length=64)
    config = JSONField(default=dict, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.DETECTOR)
    detector_version = models.CharField(max_length=64, blank=True)
    model_version = models.CharField(max_length=300, blank=True)
    total_chunks = models.PositiveIntegerField(default=0)
    done_chunks = models.PositiveIntegerField(default=0)
    usage = JSONField(default=dict, blank=True, help_text="Tokens, requests, cost (LLM runs).")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(progress_done__lte=models.F("progress_total")),
                name="run_progress_bounded",
            )
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.detector}"

    @property
    def label(self) -> str:
        preset = self.config.get("preset") or self.config.get("strategy") or self.config.get("mode")
        return f"#{self.pk} {self.detector}" + (f" ({preset})" if preset else "")


class RunChunk(models.Model):
    """A slice of a run's dialogues: the unit of work a Celery task redoes idempotently.

    Not a job of its own: nobody starts, polls or cancels a chunk; it has pending/done/failed
    and its attempts, and the run it belongs to carries the lifecycle."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    run = models.ForeignKey(DetectorRun, on_delete=models.CASCADE, related_name="chunks")
    index = models.PositiveIntegerField()
    dialogue_ids = JSONField(default=list)
    message_count = models.PositiveIntegerField(default=0)
    messages_done = models.PositiveIntegerField(
        default=0, help_text="Messages detected so far by the attempt under way: the chunk's share of "
                             "the run's progress until it is done.")
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    seconds = models.FloatField(default=0)
    error = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True, help_text="The Celery worker that finished it.")
    peak_rss_mb = models.FloatField(
        null=True, blank=True, help_text="The worker process's peak resident memory when it finished the chunk: "
                                         "flat across a run when chunks stream.")

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="chunk_unique_index")]

    def __str__(self) -> str:
        return f"run {self.run_id} chunk {self.index}"


class Prediction(SpanFields):
    run = models.ForeignKey(DetectorRun, on_delete=models.CASCADE, related_name="predictions")
    message = models.ForeignKey("annotator.Message", on_delete=models.CASCADE, related_name="predictions")
    score = models.FloatField(default=1.0)
    source_label = models.CharField(max_length=80, blank=True, help_text="The detector's own label.")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "message", "start", "end", "label"], name="prediction_unique"
            ),
            *SpanFields.span_checks("prediction"),
        ]
        indexes = [models.Index(fields=["message", "run"], name="prediction_by_message")]


class MessageSegment(models.Model):
    """MATH / NON-MATH per message, from a ``math_segments`` run."""

    run = models.ForeignKey(DetectorRun, on_delete=models.CASCADE, related_name="segments")
    message = models.ForeignKey("annotator.Message", on_delete=models.CASCADE, related_name="segments")
    segment = models.CharField(max_length=8)
    score = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "message"], name="segment_unique")]

    def __str__(self) -> str:
        return f"{self.message_id}: {self.segment}"


class MessageUncertainty(models.Model):
    """How sure a run's model was about one message: its decision ``margin`` (tagger runs).

    Model output like a prediction, so never shown to annotators; "least sure" plans rank by it
    (see :func:`pipeline.tags.decision_margin`)."""

    run = models.ForeignKey(DetectorRun, on_delete=models.CASCADE, related_name="uncertainties")
    message = models.ForeignKey("annotator.Message", on_delete=models.CASCADE, related_name="+")
    margin = models.FloatField(help_text="Smallest distance of a word's probability to its threshold.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "message"], name="uncertainty_unique"),
            models.CheckConstraint(condition=models.Q(margin__gte=0), name="uncertainty_margin_nonnegative"),
        ]
        indexes = [models.Index(fields=["run", "margin"], name="uncertainty_by_margin")]

    def __str__(self) -> str:
        return f"{self.message_id}: {self.margin:.3f}"
