"""The catalog of file formats: the import format (JSONL, CSV), the other tools' (Label Studio task
JSON, doccano JSONL, spaCy DocBin) and the gold bundle's own (gold JSONL, CoNLL, Hugging Face).

:data:`CATALOG` maps a format's name to its :class:`Format`: a reader (bytes → checked
:class:`~pipeline.types.Dialogue` objects, all or nothing, every problem with its line, task or
doc number, as :mod:`pipeline.corpus` gives them), a gold bundle writer
(:class:`~pipeline.formats.bundle.BundleWriter`), a sniffer and an example of the file; a format
has a reader, a writer or both. :func:`parse_upload` reads by ``fmt``, or by :func:`sniff`, the one
rule that guesses a format from a file's name and first bytes; see ``docs/formats.md``.
:func:`stream_upload` reads an open file in batches of dialogues for an import, through the
format's ``stream`` where it has one (JSONL), else its reader. A new format is a module here and
an entry in :data:`CATALOG`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pipeline.corpus import ParseReport
from pipeline.formats import conll, doccano, gold, hf, labelstudio, native, spacy_docbin
from pipeline.formats._common import FormatError
from pipeline.formats.bundle import BundleSpec, BundleWriter
from pipeline.types import Dialogue

Reader = Callable[..., list[Dialogue]]  # (raw, *, name, labels, max_id_length, report, max_bytes)
Streamer = Callable[..., Iterator[list[Dialogue]]]  # (binary file, *, batch, labels, max_id_length, report,
#   default_speaker)
Sniffer = Callable[[str, bytes], bool]  # (lower-cased file name, head without BOM or leading space)


@dataclass(frozen=True)
class Format:
    """One entry of :data:`CATALOG`. ``example`` is a small file of the format (None: binary);
    ``stream`` reads a file in batches without holding it (:func:`stream_upload`)."""

    name: str
    read: Reader | None = None
    write: Callable[[BundleSpec], BundleWriter] | None = None
    sniff: Sniffer | None = None
    example: bytes | None = None
    stream: Streamer | None = None


CATALOG: dict[str, Format] = {f.name: f for f in (
    Format("jsonl", native.read_jsonl, sniff=native.sniffs_jsonl, example=native.JSONL_EXAMPLE,
           stream=native.stream_jsonl),
    Format("csv", native.read_csv, sniff=native.sniffs_csv, example=native.CSV_EXAMPLE),
    Format("labelstudio", labelstudio.read, labelstudio.LabelStudioBundleWriter, labelstudio.sniffs,
           labelstudio.EXAMPLE),
    Format("doccano", doccano.read, doccano.DoccanoBundleWriter, doccano.sniffs, doccano.EXAMPLE),
    Format("spacy", spacy_docbin.read, spacy_docbin.DocBinBundleWriter, spacy_docbin.sniffs,
           spacy_docbin.EXAMPLE),
    Format("gold", write=gold.GoldJsonlWriter, example=gold.EXAMPLE),
    Format("conll", write=conll.ConllWriter, example=conll.EXAMPLE),
    Format("hf", write=hf.HfWriter, example=hf.EXAMPLE),
)}

FORMATS = tuple(name for name, f in CATALOG.items() if f.read)
"""The formats an upload may be in."""
GOLD_FORMATS = ("gold", "conll", "hf", "labelstudio", "doccano", "spacy")
"""What a gold bundle holds by default, in the order the files are listed."""
SNIFF_ORDER = ("spacy", "csv", "labelstudio", "doccano", "jsonl")
"""The order :func:`sniff` asks the sniffers in: a name ending decides first; a JSON file is the
import format only when it is neither tool's."""
SNIFF_DEFAULT = "csv"

__all__ = ["CATALOG", "FORMATS", "GOLD_FORMATS", "Format", "FormatError", "parse_upload", "read_corpus", "sniff",
           "stream_upload"]


def sniff(name: str, head: bytes) -> str:
    """The format of an upload from its name and first bytes (``fmt`` overrides it)."""
    lower = name.lower()
    body = head.removeprefix(b"\xef\xbb\xbf").lstrip()
    return next((fmt for fmt in SNIFF_ORDER if CATALOG[fmt].sniff(lower, body)), SNIFF_DEFAULT)


def parse_upload(
    raw: bytes, *, name: str = "", labels: set[str] | None = None, max_id_length: int | None = None,
    report: ParseReport | None = None, fmt: str | None = None, max_bytes: int | None = None,
    default_speaker: str | None = None,
) -> list[Dialogue]:
    """Parse an upload in any of :data:`FORMATS`, raising :class:`~pipeline.corpus.CorpusError`
    with every problem; ``fmt`` (else :func:`sniff`) says which. Message texts come out canonical
    (:func:`pipeline.corpus.canonical_text`); ``report`` counts what changed. ``max_bytes`` is the
    import limit (``BLINDSPOT_IMPORT_MAX_BYTES``) that a compressed format (spaCy DocBin) may not
    decompress past; the caller checks ``raw`` itself against it. ``default_speaker`` names the
    speaker of a message the file gives none (the import format refuses one otherwise; the other
    formats call it ``unknown``)."""
    fmt = fmt or sniff(name, raw[:65536])
    entry = CATALOG.get(fmt)
    if entry is None or entry.read is None:
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    extra = {"default_speaker": default_speaker} if default_speaker else {}
    return entry.read(raw, name=name, labels=labels, max_id_length=max_id_length, report=report,
                      max_bytes=max_bytes, **extra)


def stream_upload(
    fh: IO[bytes], *, batch: int, name: str = "", labels: set[str] | None = None, max_id_length: int | None = None,
    report: ParseReport | None = None, fmt: str | None = None, max_bytes: int | None = None,
    default_speaker: str | None = None,
) -> Iterator[list[Dialogue]]:
    """:func:`parse_upload` of an open binary file, in lists of at most ``batch`` dialogues.
    A format with a ``stream`` (the import format's JSONL) is read as the batches are asked for,
    holding one batch and the ids seen; the others are parsed whole first. All or nothing either
    way: after a problem no batch comes, and :class:`~pipeline.corpus.CorpusError` names every
    problem once the file is read, so a caller that writes the batches in one transaction writes
    nothing of a bad file."""
    fmt = fmt or sniff(name, fh.read(65536))
    fh.seek(0)
    entry = CATALOG.get(fmt)
    if entry is not None and entry.stream is not None:
        yield from entry.stream(fh, batch=batch, labels=labels, max_id_length=max_id_length, report=report,
                                default_speaker=default_speaker)
        return
    dialogues = parse_upload(fh.read(), name=name, labels=labels, max_id_length=max_id_length, report=report,
                             fmt=fmt, max_bytes=max_bytes, default_speaker=default_speaker)
    for start in range(0, len(dialogues), batch):
        yield dialogues[start:start + batch]


def read_corpus(path: str | Path, *, labels: set[str] | None = None, fmt: str | None = None) -> list[Dialogue]:
    """:func:`parse_upload` of a file, named by its file name."""
    path = Path(path)
    return parse_upload(path.read_bytes(), name=path.name, labels=labels, fmt=fmt)
