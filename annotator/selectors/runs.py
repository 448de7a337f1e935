"""Reads of detector runs for their pages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count
from django.utils import timezone

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


def run_progress(run: DetectorRun) -> dict[str, Any]:
    """Messages done/total, rate and ETA for the progress bar."""
    elapsed = ((run.finished_at or timezone.now()) - run.started_at).total_seconds() if run.started_at else 0
    rate = run.progress_done / elapsed if elapsed > 0 else 0.0
    remaining = run.progress_total - run.progress_done
    return {
        "done": run.progress_done, "total": run.progress_total,
        "percent": int(100 * run.progress_done / run.progress_total) if run.progress_total else 0,
        "rate": rate, "elapsed": elapsed,
        "eta": remaining / rate if rate > 0 and not run.is_finished else None,
    }


def run_label_counts(run: DetectorRun) -> list[tuple[str, int]]:
    """A run's spans by label, most first (uncached: the command line's summary of a run)."""
    return list(
        Prediction.objects.filter(run=run).values_list("label").annotate(n=Count("pk")).order_by("-n")
    )


MODELS_DIR = "BLINDSPOT_MODELS_DIR"


def config_shown(run: DetectorRun) -> Any:
    """The run's config as its page shows it: a path inside the models folder is written from
    ``BLINDSPOT_MODELS_DIR`` on, since the server's absolute path says nothing an admin can act on
    and shows how the server's disk is laid out; the stored config keeps the path the run used."""
    root = Path(settings.BLINDSPOT_MODELS_DIR).resolve()

    def shown(value):
        if isinstance(value, dict):
            return {k: shown(v) for k, v in value.items()}
        if isinstance(value, list):
            return [shown(v) for v in value]
        if isinstance(value, str) and Path(value).is_absolute():
            try:
                inside = Path(value).resolve().relative_to(root)
            except ValueError:
                return value
            return MODELS_DIR if inside == Path() else f"{MODELS_DIR}/{inside.as_posix()}"
        return value

    return shown(run.config)
