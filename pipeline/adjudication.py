"""Merging annotators' spans into gold, and ranking the disagreements a person must settle.

Pure functions: the Django services call :func:`merge_item` for every finished item and store the
result with its provenance; unresolved items go to the adjudication queue ordered by
:class:`Risk`. A span one annotator marked and another did not is a *possible leak* (if the one
who skipped it was wrong, real PII stays in the release) and is settled before a label or a
boundary difference, which only changes how a span is redacted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.types import Span

UNANIMOUS = "unanimous"
MAJORITY = "majority"
ADJUDICATED = "adjudicated"
RULES = (UNANIMOUS, MAJORITY)

# Risk levels, highest first in the queue.
LEAK = 3
LABEL = 2
BOUNDARY = 1
NONE = 0
RISK_NAMES = {LEAK: "possible leak", LABEL: "label", BOUNDARY: "boundary", NONE: "none"}


@dataclass(frozen=True, slots=True, order=True)
class Risk:
    """How dangerous an item's disagreement is; compares so that ``max`` is the most urgent.

    ``level`` is LEAK / LABEL / BOUNDARY / NONE; ``weight`` breaks ties within a level (for a
    leak: characters marked by some annotators and not by others).
    """

    level: int = NONE
    weight: int = 0
    leaks: int = 0
    label_conflicts: int = 0
    boundary_conflicts: int = 0

    @property
    def kind(self) -> str:
        return RISK_NAMES[self.level]

    @property
    def sort_key(self) -> tuple[int, int]:
        """Ascending sort puts the most urgent first."""
        return (-self.level, -self.weight)

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "kind": self.kind, "weight": self.weight,
                "leaks": self.leaks, "label_conflicts": self.label_conflicts,
                "boundary_conflicts": self.boundary_conflicts}


@dataclass(frozen=True, slots=True)
class GoldCandidate:
    """A span proposed for gold, with who marked it."""

    span: Span
    annotators: tuple[str, ...]
    provenance: str  # unanimous | majority


def _spans_of(value: Any) -> tuple[Span, ...]:
    spans = getattr(value, "spans", value)
    return tuple(spans)


def assess_risk(annotations: Mapping[str, Any]) -> Risk:
    """Classify every disagreement among annotators' spans on one item.

    ``annotations`` maps an annotator to their spans (or to an object with ``.spans``).
    """
    by_ann = {a: _spans_of(v) for a, v in annotations.items()}
    if len(by_ann) < 2:
        return Risk()
    leaks = labels = bounds = 0
    leak_chars = 0
    seen_pairs: set[tuple[Any, Any]] = set()
    for a, spans in by_ann.items():
        for s in spans:
            for b, other in by_ann.items():
                if b == a:
                    continue
                hits = [o for o in other if o.overlaps(s)]
                if not hits:
                    leaks += 1
                    leak_chars += s.end - s.start
                    continue
                for o in hits:
                    key = (min(s.key(), o.key()), max(s.key(), o.key()))
                    if key in seen_pairs or s.key() == o.key():
                        continue
                    seen_pairs.add(key)
                    if s.label != o.label:
                        labels += 1
                    else:
                        bounds += 1
    if leaks:
        level, weight = LEAK, leak_chars
    elif labels:
        level, weight = LABEL, labels
    elif bounds:
        level, weight = BOUNDARY, bounds
    else:
        level, weight = NONE, 0
    return Risk(level, weight, leaks, labels, bounds)


def merge_item(
    annotations_by_annotator: Mapping[str, Any], rule: str = UNANIMOUS
) -> tuple[tuple[Span, ...] | None, Risk]:
    """Gold spans for one item, or ``None`` when a person must decide; plus the item's risk.

    ``unanimous``: gold only when every annotator has exactly the same spans (start, end, label).
    ``majority``: a span is gold when more than half of the annotators marked it exactly and out
    when fewer than half did; a tie on any span (possible with an even number) or overlapping
    winners leaves the item for adjudication.
    """
    if rule not in RULES:
        raise ValueError(f"unknown merge rule {rule!r}: use one of {', '.join(RULES)}")
    cands = merge_candidates(annotations_by_annotator, rule)
    risk = assess_risk(annotations_by_annotator)
    if cands is None:
        return None, risk
    return tuple(c.span for c in cands), risk


def merge_candidates(
    annotations_by_annotator: Mapping[str, Any], rule: str = UNANIMOUS
) -> tuple[GoldCandidate, ...] | None:
    """Like :func:`merge_item` but keeps each gold span's annotators and provenance."""
    by_ann = {a: {s.key(): s for s in _spans_of(v)} for a, v in annotations_by_annotator.items()}
    k = len(by_ann)
    if k == 0:
        return None
    marked: dict[tuple[int, int, str], list[str]] = {}
    for a in sorted(by_ann):
        for key in by_ann[a]:
            marked.setdefault(key, []).append(a)
    winners: list[GoldCandidate] = []
    for key in sorted(marked):
        who = marked[key]
        span = Span(*key)
        if len(who) == k:
            winners.append(GoldCandidate(span, tuple(who), UNANIMOUS))
        elif rule == UNANIMOUS:
            return None
        elif 2 * len(who) > k:
            winners.append(GoldCandidate(span, tuple(who), MAJORITY))
        elif 2 * len(who) == k:
            return None  # a tie: a person decides
    for i, c in enumerate(winners):
        if any(c.span.overlaps(o.span) for o in winners[i + 1:]):
            return None
    return tuple(winners)


@dataclass(frozen=True, slots=True)
class SettledItem:
    """An adjudicated item: what each annotator marked, the model's suggestion, the final gold."""

    annotations: Mapping[str, Sequence[Span]]
    model_spans: Sequence[Span]
    gold: Sequence[Span]


def model_favour(settled: Iterable[SettledItem]) -> dict[str, float | int | None]:
    """How many disputed spans the adjudicator settled the way the model had it.

    A span is disputed when some but not all annotators marked it exactly. The model's side is
    "in" when it predicted that span exactly and "out" otherwise; the decision agrees with the
    model when the span's presence in gold matches that side. Among disputes where the model's
    side was "in" and "out", the rate is compared with the share a coin would give (0.5).
    With no dispute the rate is ``None``, not NaN: it is stored in JSON, which has no NaN.
    """
    tally = FavourTally()
    for item in settled:
        tally.add(item)
    return tally.figures()


class FavourTally:
    """:func:`model_favour` counted one settled item at a time, for a report that reads its
    items once and keeps none of them (the circularity check on a million messages)."""

    __slots__ = ("disputed", "favour", "model_in", "favour_in")

    def __init__(self) -> None:
        self.disputed = self.favour = self.model_in = self.favour_in = 0

    def add(self, item: SettledItem) -> None:
        keys = {a: {s.key() for s in spans} for a, spans in item.annotations.items()}
        if len(keys) < 2:
            return
        union = set().union(*keys.values())
        common = set.intersection(*keys.values())
        model = {s.key() for s in item.model_spans}
        gold = {s.key() for s in item.gold}
        for key in union - common:
            self.disputed += 1
            agrees = (key in model) == (key in gold)
            self.favour += agrees
            if key in model:
                self.model_in += 1
                self.favour_in += agrees

    def figures(self) -> dict[str, float | int | None]:
        return {
            "disputed": self.disputed,
            "settled_for_model": self.favour,
            "rate": self.favour / self.disputed if self.disputed else None,
            "disputed_model_in": self.model_in,
            "kept_model_in": self.favour_in,
        }
