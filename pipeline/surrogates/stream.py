"""Streams of dialogues: pair each with its spans (its own, a callable's or a detector's) and
de-identify them one at a time, so memory stays flat on large corpora."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from pipeline.surrogates.engine import Deidentifier, SurrogateProposer
from pipeline.surrogates.results import DeidResult
from pipeline.types import Detection, Dialogue, Span

SpansFor = Callable[[Dialogue], Sequence[Sequence[Span] | Detection]]


def _as_span_lists(found: Sequence[Sequence[Span] | Detection]) -> list[list[Span]]:
    return [list(f.spans) if isinstance(f, Detection) else list(f) for f in found]


def iter_spans(
    dialogues: Iterable[Dialogue], spans_for: SpansFor | Any | None
) -> Iterator[tuple[Dialogue, list[list[Span]]]]:
    """Pair each dialogue with its spans: its own (``None``), a callable's, or a detector's.

    A detector is handed the whole stream in one ``detect_many`` call, so it batches (or runs a
    process pool, :class:`pipeline.parallel.ParallelDetector`) across as many dialogues as it
    likes; only the dialogues it has read ahead wait here to be paired with its answers.
    """
    if spans_for is None:
        for d in dialogues:
            yield d, [list(m.spans) for m in d.messages]
        return
    if hasattr(spans_for, "detect_many"):
        read: deque[Dialogue] = deque()

        def feed() -> Iterator[Dialogue]:
            for d in dialogues:
                read.append(d)
                yield d

        for dets in spans_for.detect_many(feed()):
            if not read:
                raise ValueError(f"{spans_for.name}: more answers than dialogues")
            yield read.popleft(), _as_span_lists(dets)
        if read:
            raise ValueError(f"{spans_for.name}: no answer for {len(read)} dialogue(s)")
        return
    for d in dialogues:
        yield d, _as_span_lists(spans_for(d))


def deidentify_stream(
    dialogues: Iterable[Dialogue],
    spans_for: SpansFor | Any | None = None,
    *,
    key: str | bytes,
    mode: str = "surrogate",
    scope: str = "dialogue",
    propagate: bool = True,
    proposer: SurrogateProposer | None = None,
    forbidden: Iterable[tuple[str, str]] = (),
    deidentifier: Deidentifier | None = None,
) -> Iterator[DeidResult]:
    """De-identify a stream of dialogues one at a time (memory stays flat).

    ``spans_for`` is ``None`` (use each message's own spans, e.g. gold spans in the import
    format), a callable ``dialogue -> [spans or Detection per message]``, or a detector (anything
    with ``detect_many``), which is fed the stream. Pass ``forbidden``
    (``(label, text)`` of every original of the corpus, from a first pass) so that no surrogate is
    another dialogue's original; without it only originals seen so far are avoided.
    """
    deid = deidentifier or Deidentifier(
        key=key, mode=mode, scope=scope, propagate=propagate, proposer=proposer, forbidden=forbidden
    )
    for dialogue, spans in iter_spans(dialogues, spans_for):
        yield deid.deidentify(dialogue, spans)
