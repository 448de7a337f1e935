"""What agreement is computed on: one annotator's decision on an item, and the item with all of them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pipeline.types import MATH, NON_MATH, Span

BLIND = "blind"
AWARE = "aware"
CONDITIONS = (BLIND, AWARE)
PAIR_CONDITIONS = (BLIND, AWARE, "mixed")
SEGMENTS = (MATH, NON_MATH, "unknown")


@dataclass(frozen=True, slots=True)
class AnnotatorLabels:
    """One annotator's finished decision on one item."""

    spans: tuple[Span, ...] = ()
    condition: str = BLIND
    seconds: float | None = None  # active decision time, when known


@dataclass(frozen=True, slots=True)
class AnnotatedItem:
    """One target message with every annotator's decision on it."""

    dialogue_id: str
    index: int
    text: str
    role: str = "other"
    segment: str | None = None
    annotations: Mapping[str, AnnotatorLabels] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int]:
        return (self.dialogue_id, self.index)
