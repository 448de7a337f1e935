"""Formats users already have: Label Studio task JSON, doccano JSONL and spaCy DocBin.

Each module is a pure reader (file → :class:`~pipeline.types.Dialogue` with spans, all or nothing,
every problem with its line, task or doc number, as :mod:`pipeline.corpus` gives them) and a writer
(Dialogues with spans → file). :func:`parse_upload` picks one by ``fmt``, or by the file's name and
first bytes, and hands the import format itself to :mod:`pipeline.corpus`; see ``docs/formats.md``.
"""

from __future__ import annotations

from typing import Any

from pipeline.corpus import ParseReport, _decode, parse_corpus
from pipeline.formats._common import FormatError
from pipeline.types import Dialogue

FORMATS = ("jsonl", "csv", "labelstudio", "doccano", "spacy")

__all__ = ["FORMATS", "FormatError", "parse_upload", "sniff"]


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


def parse_upload(
    raw: bytes, *, name: str = "", labels: set[str] | None = None, max_id_length: int | None = None,
    report: ParseReport | None = None, fmt: str | None = None, max_bytes: int | None = None,
) -> list[Dialogue]:
    """Parse an upload in any of :data:`FORMATS`, raising :class:`~pipeline.corpus.CorpusError`
    with every problem; ``fmt`` (else :func:`sniff`) says which. ``max_bytes`` is the import limit
    (``BLINDSPOT_IMPORT_MAX_BYTES``) that a compressed format (spaCy DocBin) may not decompress past;
    the caller checks ``raw`` itself against it."""
    fmt = fmt or sniff(name, raw[:65536])
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    kwargs: dict[str, Any] = {"labels": labels, "max_id_length": max_id_length, "report": report}
    if fmt == "spacy":
        from pipeline.formats.spacy_docbin import parse_docbin

        return parse_docbin(raw, name=name, max_bytes=max_bytes, **kwargs)
    if fmt == "labelstudio":
        from pipeline.formats.labelstudio import parse_labelstudio

        return parse_labelstudio(_decode(raw), name=name, **kwargs)
    if fmt == "doccano":
        from pipeline.formats.doccano import parse_doccano

        return parse_doccano(_decode(raw), name=name, **kwargs)
    return parse_corpus(raw, fmt=fmt, **kwargs)
