"""Ground-floor span helpers shared by detectors and metrics (imports only :mod:`pipeline.types`)."""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.types import Span


def overlaps_any(span: Span, others: Iterable[Span], *, label: str | None = None) -> bool:
    """Does ``span`` overlap any of ``others`` (of ``label``, when given)?"""
    return any(
        span.start < o.end and o.start < span.end and (label is None or o.label == label)
        for o in others
    )
