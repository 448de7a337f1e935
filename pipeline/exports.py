"""File formats of a gold export: CoNLL (IO and BIO over word tokens) and a Hugging Face layout.

Pure functions over ``(dialogue id, message index, text, spans)``; the Django service that
gathers the gold set writes their output to disk. Words are :func:`pipeline.text.tokenize`
tokens — the same units the tagger and the token-level metrics use — and a word takes the label of
the first gold span it overlaps (:func:`pipeline.tagger.labels.word_labels`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pipeline.tagger.labels import LabelMap, word_labels
from pipeline.text import tokenize
from pipeline.types import Span

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


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
