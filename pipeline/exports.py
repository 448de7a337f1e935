"""A gold bundle: the chosen writers of :data:`pipeline.formats.CATALOG` (gold JSONL, CoNLL, the
Hugging Face layout, Label Studio, doccano and spaCy DocBin files) run over one pass of the gold
dialogues, each dialogue in the split :func:`split_of` gives it, as doccano's ``data_export``
pipeline has them.

Writers take the streamed gold :class:`~pipeline.types.Dialogue` objects (each message's
``meta["gold"]`` holds its decision and span provenance) and write files under a bundle directory;
:func:`write_gold_bundle` runs them and returns the counts for the manifest; the Django service only
streams the gold set in and records the manifest.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from pipeline.formats import CATALOG, GOLD_FORMATS
from pipeline.formats.bundle import BundleSpec
from pipeline.types import Dialogue


def split_of(dialogue_id: str, *, test_fraction: float, seed: int = 0) -> str:
    """``train`` or ``test`` for a whole dialogue, stable under re-export and corpus growth."""
    digest = hashlib.sha256(f"{seed}:{dialogue_id}".encode()).digest()
    return "test" if int.from_bytes(digest[:8], "big") / 2**64 < test_fraction else "train"


@dataclass
class BundleCounts:
    """What the manifest of a gold bundle states about its contents."""

    files: list[str] = field(default_factory=list)
    messages: int = 0
    by_label: Counter = field(default_factory=Counter)
    by_provenance: Counter = field(default_factory=Counter)
    unknown_labels: Counter = field(default_factory=Counter)
    split_dialogues: Counter = field(default_factory=Counter)
    split_messages: Counter = field(default_factory=Counter)

    def add(self, dialogue: Dialogue, split: str, labels: tuple[str, ...]) -> None:
        self.split_dialogues[split] += 1
        for m in dialogue.messages:
            for g in (m.meta.get("gold") or {}).get("spans", []):
                self.by_label[g["label"]] += 1
                self.by_provenance[g["provenance"]] += 1
                if g["label"] not in labels:
                    self.unknown_labels[g["label"]] += 1
            self.split_messages[split] += 1
            self.messages += 1


def write_gold_bundle(dialogues: Iterable[Dialogue], spec: BundleSpec, *, test_fraction: float, seed: int = 0,
                      writers: Sequence[str] = GOLD_FORMATS,
                      progress: Callable[[int], None] | None = None) -> BundleCounts:
    """Write the chosen writers' files for ``dialogues`` (one pass, split by dialogue); the counts."""
    opened = [CATALOG[name].write(spec) for name in writers]
    counts = BundleCounts()
    try:
        for dialogue in dialogues:
            split = split_of(dialogue.id, test_fraction=test_fraction, seed=seed)
            for w in opened:
                w.write(dialogue, split)
            counts.add(dialogue, split, spec.labels)
            if progress:
                progress(counts.messages)
    finally:
        for w in opened:
            counts.files += w.close()
    return counts
