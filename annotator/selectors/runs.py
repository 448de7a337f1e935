"""Reads of detector runs for their pages."""

from __future__ import annotations

from django.core.cache import cache
from django.db.models import Count

from annotator.models import DetectorRun, MessageSegment, Prediction

TIMEOUT = 24 * 3600


def finished_run_counts(run: DetectorRun) -> tuple[list[tuple[str, int]], dict[str, int]]:
    """A finished run's spans by label (most first) and messages by segment.

    A finished run's output does not change (resuming one makes it run, and finish, again), so
    the counts are read once per finish and kept in the cache under the run's finish, instead of
    counting its predictions, as many as the corpus has messages, on every view of its page."""
    finished = run.finished_at.isoformat() if run.finished_at else ""
    key = f"run-counts:{run.pk}:{run.created_at.timestamp():.6f}:{run.status}:{finished}:{run.progress_done}"
    counts = cache.get(key)
    if counts is None:
        labels = list(Prediction.objects.filter(run=run).values_list("label").annotate(n=Count("pk"))
                      .order_by("-n"))
        segments = dict(MessageSegment.objects.filter(run=run).values_list("segment").annotate(n=Count("pk")))
        counts = (labels, segments)
        cache.set(key, counts, timeout=TIMEOUT)
    return counts
