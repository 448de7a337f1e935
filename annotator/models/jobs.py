from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.fields import JSONField


class JobStatus(models.TextChoices):
    """The one set of states every background job goes through (runs, exports, releases,
    plans, training, reports): queued -> running -> succeeded | failed | cancelled."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class JobFields(models.Model):
    """The fields of a job's lifecycle, shared by BackgroundJob, Export and DetectorRun; the
    service API in annotator.services.jobs is the only code that moves them."""

    Status = JobStatus
    FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED)

    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def percent(self) -> int:
        return int(100 * self.progress_done / self.progress_total) if self.progress_total else 0


class BackgroundJob(JobFields):
    """A long task (import, training, agreement) whose progress a page polls."""

    class Kind(models.TextChoices):
        IMPORT = "import", "Corpus import"
        TRAIN = "train", "Tagger training"
        RETRAIN = "retrain", "Tagger retraining (model in the loop)"
        AGREEMENT = "agreement", "Agreement report"
        CIRCULARITY = "circularity", "Circularity report"
        EVALUATION = "evaluation", "Run scored against gold"
        PLAN = "plan", "Sampling plan"
        OTHER = "other", "Other"

    project = models.ForeignKey("annotator.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    params = JSONField(default=dict, blank=True)
    message = models.CharField(max_length=300, blank=True)
    result = JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [  # at most one retrain queued or running per project
            models.UniqueConstraint(
                fields=["project"], name="job_one_open_retrain_per_project",
                condition=models.Q(kind="retrain", status__in=["queued", "running"]),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk} ({self.status})"


class UndeliveredTask(models.Model):
    """A task the broker did not take (Redis unreachable when it was sent). Its job stays queued;
    ``annotator.dispatch.redispatch_undelivered`` sends it again once the broker answers (from
    beat, and on a page view), and deletes the row in the same transaction, so each one is sent
    again once. Tasks are idempotent, so a send whose delete did not commit is harmless."""

    name = models.CharField(max_length=200)
    args = JSONField(default=list)
    error = models.CharField(max_length=300, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"{self.name}{tuple(self.args)}"
