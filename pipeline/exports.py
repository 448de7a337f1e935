"""File formats of a gold export: gold JSONL, CoNLL (IO and BIO over word tokens), a Hugging
Face layout, and Label Studio, doccano and spaCy DocBin files (:mod:`pipeline.formats`) —
formatters and writers, as doccano's ``data_export`` pipeline has them.

Formatters are pure functions over ``(dialogue id, message index, text, spans)``. Writers take the
streamed gold :class:`~pipeline.types.Dialogue` objects (each message's ``meta["gold"]`` holds its
decision and span provenance) and write files under a bundle directory; :data:`GOLD_WRITERS` is
their registry (name → writer class): add a format by adding an entry. :func:`write_gold_bundle`
runs the chosen writers over one pass of the dialogues and returns the counts for the manifest; the
Django service only streams the gold set in and records the manifest. Words are :func:`pipeline.text.tokenize`
tokens — the same units the tagger and the token-level metrics use — and a word takes the label of
the first gold span it overlaps (:func:`pipeline.tags.word_labels`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pipeline.formats.doccano import DoccanoBundleWriter
from pipeline.formats.labelstudio import LabelStudioBundleWriter
from pipeline.formats.spacy_docbin import DocBinBundleWriter
from pipeline.tags import LabelMap, word_labels
from pipeline.text import tokenize
from pipeline.types import Dialogue, Message, Span

SPLITS = ("train", "test")


def split_of(dialogue_id: str, *, test_fraction: float, seed: int = 0) -> str:
    """``train`` or ``test`` for a whole dialogue, stable under re-export and corpus growth."""
    digest = hashlib.sha256(f"{seed}:{dialogue_id}".encode()).digest()
    return "test" if int.from_bytes(digest[:8], "big") / 2**64 < test_fraction else "train"


def word_tags(text: str, spans: Sequence[Span], scheme: str) -> list[tuple[str, str]]:
    """``(word, tag)`` pairs: ``O``, ``LABEL`` (IO) or ``B-LABEL``/``I-LABEL`` (BIO)."""
    words = tokenize(text)
    out = []
    for word, (label, begin) in zip(words, word_labels(words, spans), strict=True):
        if label is None:
            tag = "O"
        elif scheme == "io":
            tag = f"I-{label}"
        else:
            tag = f"{'B' if begin else 'I'}-{label}"
        out.append((word.text, tag))
    return out


def conll_block(dialogue_id: str, index: int, text: str, spans: Sequence[Span], scheme: str) -> str:
    """One message: a ``# id`` comment, ``word<TAB>tag`` lines, a blank line."""
    lines = [f"# id = {dialogue_id}:{index}"]
    lines += [f"{w.replace(chr(9), ' ')}\t{t}" for w, t in word_tags(text, spans, scheme)]
    return "\n".join(lines) + "\n\n"


def hf_row(
    dialogue_id: str,
    index: int,
    text: str,
    spans: Sequence[Span],
    label_map: LabelMap,
    *,
    speaker: str = "",
    role: str = "",
) -> dict[str, Any]:
    """A ``datasets``-ready row: ``tokens`` and integer ``ner_tags`` (BIO), plus text and spans."""
    words = tokenize(text)
    known = set(label_map.labels)
    tags = [
        label_map.tag_id(lab if lab in known else None, begin)
        for lab, begin in word_labels(words, spans)
    ]
    return {
        "id": f"{dialogue_id}:{index}",
        "dialogue_id": dialogue_id,
        "index": index,
        "speaker": speaker,
        "role": role,
        "text": text,
        "tokens": [w.text for w in words],
        "token_offsets": [[w.start, w.end] for w in words],
        "ner_tags": tags,
        "spans": [s.to_dict(with_score=False) for s in sorted(spans)],
    }


def dataset_card(*, name: str, label_map: LabelMap, counts: dict[str, int], version: int) -> str:
    """``README.md`` of the Hugging Face layout: how to load it and what the tags mean."""
    tags = "\n".join(f"| {i} | `{t}` |" for i, t in enumerate(label_map.tags))
    splits = ", ".join(f"{k}: {v:,} messages" for k, v in counts.items())
    return f"""---
pretty_name: {name} (gold v{version})
task_categories: [token-classification]
---
# {name} — gold set, version {version}

One row per message; splits are by dialogue ({splits}).

```python
from datasets import load_dataset
ds = load_dataset("json", data_files={{"train": "train.jsonl", "test": "test.jsonl"}})
```

`tokens` are Blindspot's word tokens (`pipeline.text.tokenize`), `token_offsets` their character
offsets in `text`, `ner_tags` BIO tag ids ({label_map.scheme.upper()}), `spans` the gold spans with
code-point offsets (end exclusive).

| id | tag |
|---|---|
{tags}
"""


# ----------------------------------------------------------------------------------- writers


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


def gold_record(dialogue: Dialogue, message: Message, split: str) -> dict[str, Any]:
    """A ``gold.jsonl`` row: the message, its decision and its spans with their provenance."""
    gold = message.meta.get("gold") or {}
    return {
        "dialogue_id": dialogue.id,
        "index": message.index,
        "speaker": message.speaker,
        "role": message.role,
        "text": message.text,
        "split": split,
        "decision": gold.get("decision"),
        "decided_by": gold.get("decided_by"),
        "spans": [{"start": g["start"], "end": g["end"], "label": g["label"],
                   "text": message.text[g["start"]:g["end"]], "provenance": g["provenance"],
                   "annotators": g["annotators"], "model_matched": g["model_matched"]}
                  for g in gold.get("spans", [])],
    }


def _jsonl(fh: IO[str], row: dict[str, Any]) -> None:
    fh.write(json.dumps(row, ensure_ascii=False) + "\n")


class GoldJsonlWriter:
    """``gold.jsonl``: one row per gold message with provenance (:func:`gold_record`)."""

    def __init__(self, spec: BundleSpec):
        self.fh = open(spec.root / "gold.jsonl", "w", encoding="utf-8")  # noqa: SIM115

    def write(self, dialogue: Dialogue, split: str) -> None:
        for m in dialogue.messages:
            _jsonl(self.fh, gold_record(dialogue, m, split))

    def close(self) -> list[str]:
        self.fh.close()
        return ["gold.jsonl"]


class ConllWriter:
    """``conll/gold.io.conll`` and ``conll/gold.bio.conll`` (:func:`conll_block`)."""

    SCHEMES = ("io", "bio")

    def __init__(self, spec: BundleSpec):
        (spec.root / "conll").mkdir(exist_ok=True)
        self.fhs = {s: open(spec.root / "conll" / f"gold.{s}.conll", "w", encoding="utf-8")  # noqa: SIM115
                    for s in self.SCHEMES}

    def write(self, dialogue: Dialogue, split: str) -> None:
        for m in dialogue.messages:
            for scheme, fh in self.fhs.items():
                fh.write(conll_block(dialogue.id, m.index, m.text, m.spans, scheme))

    def close(self) -> list[str]:
        for fh in self.fhs.values():
            fh.close()
        return [f"conll/gold.{s}.conll" for s in self.SCHEMES]


class HfWriter:
    """``hf/train.jsonl``, ``hf/test.jsonl``, ``hf/labels.json`` and the dataset card."""

    def __init__(self, spec: BundleSpec):
        self.spec, self.label_map = spec, spec.label_map
        self.dir = spec.root / "hf"
        self.dir.mkdir(exist_ok=True)
        self.fhs = {s: open(self.dir / f"{s}.jsonl", "w", encoding="utf-8") for s in SPLITS}  # noqa: SIM115
        self.counts: Counter = Counter()

    def write(self, dialogue: Dialogue, split: str) -> None:
        for m in dialogue.messages:
            _jsonl(self.fhs[split], hf_row(dialogue.id, m.index, m.text, m.spans, self.label_map,
                                           speaker=m.speaker, role=m.role))
            self.counts[split] += 1

    def close(self) -> list[str]:
        for fh in self.fhs.values():
            fh.close()
        (self.dir / "labels.json").write_text(json.dumps(self.label_map.to_dict(), indent=2), encoding="utf-8")
        card = dataset_card(name=self.spec.name, label_map=self.label_map, version=self.spec.version,
                            counts={s: self.counts[s] for s in SPLITS})
        (self.dir / "README.md").write_text(card, encoding="utf-8")
        return [f"hf/{s}.jsonl" for s in SPLITS] + ["hf/labels.json", "hf/README.md"]


GOLD_WRITERS: dict[str, Callable[[BundleSpec], Any]] = {
    "gold": GoldJsonlWriter,
    "conll": ConllWriter,
    "hf": HfWriter,
    "labelstudio": LabelStudioBundleWriter,
    "doccano": DoccanoBundleWriter,
    "spacy": DocBinBundleWriter,
}
"""Writers of a gold bundle by name: a class taking a :class:`BundleSpec` whose instances have
``write(dialogue, split)`` and ``close() -> [relative file names]``."""


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
                      writers: Sequence[str] = ("gold", "conll", "hf", "labelstudio", "doccano", "spacy"),
                      progress: Callable[[int], None] | None = None) -> BundleCounts:
    """Write the chosen writers' files for ``dialogues`` (one pass, split by dialogue); the counts."""
    opened = [GOLD_WRITERS[name](spec) for name in writers]
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
