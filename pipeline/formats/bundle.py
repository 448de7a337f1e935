"""What every writer of a gold bundle is given (:class:`BundleSpec`) and what it must offer
(:class:`BundleWriter`); the writers are the ``write`` entries of :data:`pipeline.formats.CATALOG`
and :func:`pipeline.exports.write_gold_bundle` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pipeline.tags import LabelMap
from pipeline.types import Dialogue

SPLITS = ("train", "test")


@dataclass(frozen=True)
class BundleSpec:
    """What every writer of one gold bundle needs to know."""

    root: Path
    name: str
    version: int
    labels: tuple[str, ...]

    @property
    def label_map(self) -> LabelMap:
        return LabelMap("bio", self.labels)


class BundleWriter(Protocol):
    """A writer of one format's files of a gold bundle, made from a :class:`BundleSpec`."""

    def write(self, dialogue: Dialogue, split: str) -> None: ...

    def close(self) -> list[str]:
        """Finish the files; their names relative to the bundle's root."""
        ...
