"""The one interface every detector implements.

A detector sees a whole dialogue at a time so each message can be judged with its neighbours and
the dialogue's anchor text (the word problem), which is what separates "Alex has 5 apples" from
"Hi Alex". Heavy models are loaded lazily on first use, never in ``__init__``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, ClassVar, TypeVar

from pipeline.errors import ConfigError, DetectorError
from pipeline.types import Detection, Detector, Dialogue

T = TypeVar("T")

__all__ = ["BaseDetector", "ConfigError", "Detector", "DetectorError"]


class BaseDetector:
    """Shared plumbing: config validation, a default ``detect_many``, version strings."""

    name: ClassVar[str] = "base"
    version: ClassVar[str] = "0"
    defaults: ClassVar[Mapping[str, Any]] = {}

    @property
    def filters(self) -> tuple[str, ...]:
        """The registered :mod:`pipeline.filters` this detector applies under its config."""
        return ()

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        config = dict(config or {})
        unknown = sorted(set(config) - set(self.defaults))
        if unknown:
            raise ConfigError(
                f"{self.name}: unknown config key(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(self.defaults)) or 'none'}"
            )
        self.config: dict[str, Any] = {**self.defaults, **config}

    def detect(self, dialogue: Dialogue) -> list[Detection]:  # pragma: no cover - abstract
        raise NotImplementedError

    def detect_many(self, dialogues: Iterable[Dialogue]) -> Iterator[list[Detection]]:
        for dialogue in dialogues:
            yield self.detect(dialogue)

    @staticmethod
    def batched(
        dialogues: Iterable[Dialogue],
        run: Callable[[list[Dialogue]], Iterable[list[Detection]]],
        *,
        max_messages: int | None = None,
        max_dialogues: int | None = None,
    ) -> Iterator[list[Detection]]:
        """Hand ``run`` consecutive dialogues a batch at a time, yielding its lists in order.

        A batch closes once it holds ``max_messages`` messages or ``max_dialogues`` dialogues
        (:func:`batches`).
        """
        for batch in batches(dialogues, lambda d: len(d.messages), max_size=max_messages, max_items=max_dialogues):
            yield from run(batch)

    @property
    def model_version(self) -> str:
        return f"{self.name}@{self.version}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}@{self.version} {self.config}>"


def batches(items: Iterable[T], size: Callable[[T], int], *, max_size: int | None = None,
            max_items: int | None = None) -> Iterator[list[T]]:
    """Consecutive ``items`` a batch at a time: a batch closes once their ``size`` adds up to
    ``max_size`` or it holds ``max_items`` items, so a stream is never read whole. The one
    chunking loop of every batching ``detect_many`` and of a release's audit."""
    batch: list[T] = []
    held = 0
    for item in items:
        batch.append(item)
        held += size(item)
        if (max_size is not None and held >= max_size) or (max_items is not None and len(batch) >= max_items):
            yield batch
            batch, held = [], 0
    if batch:
        yield batch
