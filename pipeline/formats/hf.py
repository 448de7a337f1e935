"""The Hugging Face layout of a gold bundle: ``hf/train.jsonl`` and ``hf/test.jsonl`` rows of
``tokens`` and integer BIO ``ner_tags`` (:func:`hf_row`), ``hf/labels.json`` and a dataset card
(:func:`dataset_card`). Written only.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pipeline.formats.bundle import SPLITS, BundleSpec
from pipeline.formats.gold import write_row
from pipeline.tags import LabelMap, word_labels
from pipeline.text import tokenize
from pipeline.types import Dialogue, Span

EXAMPLE = (b'{"id": "d1:0", "dialogue_id": "d1", "index": 0, "speaker": "tutor", "role": "tutor", '
           b'"text": "Hi Ana!", "tokens": ["Hi", "Ana", "!"], "token_offsets": [[0, 2], [3, 6], [6, 7]], '
           b'"ner_tags": [0, 1, 0], "spans": [{"start": 3, "end": 6, "label": "NAME"}]}\n')


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
            write_row(self.fhs[split], hf_row(dialogue.id, m.index, m.text, m.spans, self.label_map,
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
