"""The one interface every detector implements.

A detector sees a whole dialogue at a time so each message can be judged with its neighbours and
the dialogue's anchor text (the word problem), which is what separates "Alex has 5 apples" from
"Hi Alex". Heavy models are loaded lazily on first use, never in ``__init__``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar

from pipeline.errors import ConfigError, DetectorError
from pipeline.types import Detection, Detector, Dialogue

__all__ = ["BaseDetector", "ConfigError", "Detector", "DetectorError"]


class BaseDetector:
    """Shared plumbing: config validation, a default ``detect_many``, version strings."""

    name: ClassVar[str] = "base"
    version: ClassVar[str] = "0"
    defaults: ClassVar[Mapping[str, Any]] = {}

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

    @property
    def model_version(self) -> str:
        return f"{self.name}@{self.version}"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}@{self.version} {self.config}>"
