"""The release review: what a release's self-audit left for people, and what they decided.

A release's self-audit (:mod:`pipeline.surrogates.audit`) finds places it cannot settle alone —
fragments of originals that are common words, structured identifiers it could not complete,
hits of an independent second detector on the released text, bare numbers in maths kept as
they are. Each is a :class:`ReleaseCandidate` of that release. A reviewer *confirms* one (it is
PII: a gold span, and the next build replaces it) or *dismisses* it ("not PII": the next build
does not ask again); the verdict is a :class:`CandidateDecision` of the project, keyed by the
candidate's fingerprint (:func:`pipeline.surrogates.candidates.candidate_key`), so it holds for
every later build that finds the same words in the same place.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.fields import JSONField
from annotator.models.spans import SpanFields
from pipeline.surrogates.candidates import REASONS

FIELD_HELP = ("Empty for the message's text; 'anchor' or 'meta.<key path>' for a place outside the messages "
              "(its dialogue's, reviewed on the dialogue's first message; offsets into that string).")


class CandidateDecision(models.Model):
    """A person's verdict on a place a release's self-audit asked about; read by every later build."""

    class Verdict(models.TextChoices):
        CONFIRMED = "confirmed", "PII (confirmed)"
        DISMISSED = "dismissed", "Not PII (dismissed)"

    project = models.ForeignKey("annotator.Project", on_delete=models.CASCADE, related_name="candidate_decisions")
    key = models.CharField(max_length=32, help_text="pipeline.surrogates.candidates.candidate_key")
    verdict = models.CharField(max_length=9, choices=Verdict.choices)
    message = models.ForeignKey("annotator.Message", on_delete=models.CASCADE, related_name="candidate_decisions")
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    label = models.CharField(max_length=64, help_text="The label a confirmation gives the span.")
    reason = models.CharField(max_length=24, choices=[(r, r) for r in REASONS])
    field = models.CharField(max_length=200, blank=True, help_text=FIELD_HELP)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-decided_at"]
        constraints = [
            models.UniqueConstraint(fields=["project", "key"], name="candidate_decision_unique_key"),
            *SpanFields.span_checks("candidate_decision"),
        ]

    def __str__(self) -> str:
        return f"{self.key[:8]} {self.verdict}"


class ReleaseCandidate(SpanFields):
    """One place a release's self-audit left for review (original offsets of ``message``).

    ``source`` says which check or detector found it; reviewers never see it (they judge the
    words, blind to who flagged them). The words themselves are not stored: they are the
    message's own text at ``start:end``.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for review"
        CONFIRMED = "confirmed", "PII (confirmed)"
        DISMISSED = "dismissed", "Not PII (dismissed)"

    export = models.ForeignKey("annotator.Export", on_delete=models.CASCADE, related_name="candidates")
    message = models.ForeignKey("annotator.Message", on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=32)
    reason = models.CharField(max_length=24, choices=[(r, r) for r in REASONS])
    source = models.CharField(max_length=120, blank=True)
    field = models.CharField(max_length=200, blank=True, help_text=FIELD_HELP)
    status = models.CharField(max_length=9, choices=Status.choices, default=Status.PENDING)
    decision = models.ForeignKey(CandidateDecision, null=True, blank=True, on_delete=models.SET_NULL,
                                 related_name="candidates")

    class Meta:
        ordering = ["export", "message_id", "start", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["export", "key"], name="release_candidate_unique_key"),
            *SpanFields.span_checks("release_candidate"),
        ]
        indexes = [models.Index(fields=["export", "status", "message"], name="release_review_queue")]

    def __str__(self) -> str:
        return f"{self.export_id}: {self.message_id} {self.start}-{self.end} {self.reason} ({self.status})"


class ReleaseChunk(models.Model):
    """A slice of a release's dialogues that one Celery task de-identifies and audits (or, under
    the corpus scope, only audits), so that every worker shares a release's work as it shares a
    run's detection (like a RunChunk).

    ``inputs`` is the storage key of what it reads of its dialogues (written by the release's job,
    private); ``result`` is what its audit settled (counts and capture tallies) and where its part
    of the release lies, and ``candidates`` its pending candidates in order, original words
    included, emptied once the release is finished. The release carries the lifecycle; a chunk is
    pending, done or failed."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    export = models.ForeignKey("annotator.Export", on_delete=models.CASCADE, related_name="audit_chunks")
    index = models.PositiveIntegerField()
    inputs = models.CharField(max_length=500)
    dialogue_pks = JSONField(default=dict, help_text="The chunk's dialogues: their ids -> rows.")
    message_count = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    result = JSONField(default=dict, blank=True)
    candidates = JSONField(default=list, blank=True)
    seconds = models.FloatField(default=0)
    error = models.TextField(blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True, help_text="The Celery worker that finished it.")

    class Meta:
        ordering = ["export", "index"]
        constraints = [models.UniqueConstraint(fields=["export", "index"], name="release_chunk_unique_index")]

    def __str__(self) -> str:
        return f"release {self.export_id} chunk {self.index}"
