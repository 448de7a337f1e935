"""Merge joins of streamed reads: two queries sorted the same way, read side by side.

A report over a million messages cannot hold one side of a join in a dict (the run's
predictions, the gold spans, the assignments' spans: hundreds of MB each), and joining
them in SQL multiplies rows (a message's spans times its assignments). Reading both sorted by the
same key, ``(dialogue pk, position[, assignment pk])``, and matching them as they come holds
neither: memory stays flat whatever the corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import groupby
from typing import Any

from pipeline.types import Span

Order = tuple[int, ...]  # (dialogue pk, position[, assignment pk]): the order the streamed reads share


class InOrder:
    """The values of a stream of ``(order, value)`` pairs sorted by order, asked for in
    increasing order. Orders never asked for are passed over."""

    def __init__(self, pairs: Iterable[tuple[Order, Any]]):
        self._pairs = iter(pairs)
        self._next = next(self._pairs, None)

    def pop(self, order: Order, default: Any = None) -> Any:
        while self._next is not None and self._next[0] < order:
            self._next = next(self._pairs, None)
        if self._next is None or self._next[0] != order:
            return default
        value = self._next[1]
        self._next = next(self._pairs, None)
        return value


def spans_in_order(rows: Iterable[tuple], width: int,
                   make: Callable[..., Span] = Span) -> Iterator[tuple[Order, tuple[Span, ...]]]:
    """``rows`` sorted by their first ``width`` columns, the rest a span's fields (a row of
    Nones: a left join that found none): one sorted tuple of spans per order."""
    for order, group in groupby(rows, key=lambda r: r[:width]):
        yield order, tuple(sorted(make(*r[width:]) for r in group if r[width] is not None))
