"""Formats users already have: Label Studio task JSON, doccano JSONL and spaCy DocBin.

Each module is a pure reader (file → :class:`~pipeline.types.Dialogue` with spans, all or nothing,
every problem with its line, task or doc number, as :mod:`pipeline.corpus` gives them) and a writer
(Dialogues with spans → file). :func:`pipeline.corpus.parse_corpus` picks them by extension or by
``fmt``; see ``docs/formats.md``.
"""

from __future__ import annotations

from pipeline.formats._common import FormatError

FORMATS = ("jsonl", "csv", "labelstudio", "doccano", "spacy")

__all__ = ["FORMATS", "FormatError", "sniff"]


def sniff(name: str, head: bytes) -> str:
    """The format of an upload from its name and first bytes (``fmt`` overrides it)."""
    lower = name.lower()
    body = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    if lower.endswith(".spacy"):
        return "spacy"
    if lower.endswith((".csv", ".tsv")):
        return "csv"
    if body.startswith(b"["):
        return "labelstudio"
    if lower.endswith((".jsonl", ".json", ".ndjson")) or body.startswith(b"{"):
        first = body.split(b"\n", 1)[0]
        if b'"messages"' not in first and b'"text"' in first:
            return "labelstudio" if b'"data"' in first else "doccano"
        return "jsonl"
    return "csv"
