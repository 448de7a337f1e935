"""spaCy ``DocBin`` (``.spacy``): one ``Doc`` per message with the spans as ``doc.ents``, the file
``spacy train`` reads.

Docs are tokenised by ``spacy.blank("en")`` and spans become entities with
``alignment_mode="strict"``: a span whose edges fall inside a spaCy token (or that overlaps another,
which ``doc.ents`` cannot hold) is not silently widened or dropped — the writer raises
:class:`FormatError` listing them, or, with ``strict=False``, leaves them out and returns them so
the caller can report them. ``doc.user_data["blindspot"]`` carries ``dialogue_id``, ``index``,
``speaker`` (and ``ts``, ``anchor``), so reading the file back restores the dialogues; a Doc from
elsewhere becomes a one-message dialogue named after the file's name and a hash of the Doc
(:class:`~pipeline.formats._common.DerivedIds`).

A ``.spacy`` file is zlib-compressed msgpack, so a few KB can declare hundreds of MB or hundreds of
thousands of docs (a decompression bomb). :func:`parse_docbin` therefore inflates it itself, a chunk at
a time, and refuses it before spaCy expands anything when

* it decompresses to more than ``max_bytes`` (the caller's ``BLINDSPOT_IMPORT_MAX_BYTES``): the
  setting bounds the bytes one import makes the worker parse, and a compressed container is no way
  around it — what is charged is what gets parsed, not the envelope. (A real DocBin inflates to
  about 6× the JSONL of the same messages, so at a given setting a DocBin holds fewer messages than
  a JSONL file; raise the setting if that bites.)
* it decompresses to more than :data:`MAX_RATIO` × its own size (above :data:`RATIO_FLOOR`): real
  DocBins compress 10–60× (13× for a synthetic corpus, 63× for one short message repeated 20,000
  times), a bomb of zeros ~1000×; this catches bombs even under a generous setting, at a cost of at
  most ``MAX_RATIO`` × the upload.
* it declares more docs than a JSONL file within ``max_bytes`` could hold messages
  (``max_bytes // MIN_MESSAGE_BYTES``) or more tokens than ``max_bytes`` characters, or its
  declared lengths do not match the token data it holds (spaCy would expand or reshape them).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pipeline.corpus import CorpusError, CorpusProblem, ParseReport
from pipeline.formats._common import (
    DEFAULT_SPEAKER,
    DerivedIds,
    FormatError,
    Record,
    assemble,
    message_index,
    note_derived,
    own_id,
)
from pipeline.types import Dialogue, Span

USER_KEY = "blindspot"
DEFAULT_MAX_BYTES = 512 * 1024 * 1024  # the default of annotator.settings.BLINDSPOT_IMPORT_MAX_BYTES
MAX_RATIO = 200  # decompressed / compressed; real DocBins are 10–60×, zlib's ceiling is ~1030×
RATIO_FLOOR = 1024 * 1024  # files this small when inflated are never refused for their ratio
MIN_MESSAGE_BYTES = 16  # shorter than any JSONL line holding one message: '{"messages":[{"speaker":…'
_CHUNK = 1024 * 1024
EXAMPLE = None  # binary: :func:`to_docbin` makes one


def sniffs(lower: str, body: bytes) -> bool:
    return lower.endswith(".spacy")


def read(raw: bytes, *, name: str = "", max_bytes: int | None = None, **kwargs: Any) -> list[Dialogue]:
    return parse_docbin(raw, name=name, max_bytes=max_bytes, **kwargs)


@dataclass(frozen=True, slots=True)
class Unaligned:
    """A span the DocBin could not hold, and why."""

    dialogue_id: str
    index: int
    span: Span
    text: str
    reason: str

    def __str__(self) -> str:
        return (f"dialogue {self.dialogue_id!r} message {self.index}: {self.span.label} "
                f"{self.span.start}..{self.span.end} {self.text!r} {self.reason}")


def _spacy() -> Any:
    try:
        import spacy
    except ImportError as exc:  # pragma: no cover - spaCy comes with presidio-analyzer
        raise FormatError("the spaCy DocBin format needs spaCy: pip install spacy") from exc
    return spacy


class DocBinBuilder:
    """Docs added a dialogue at a time (one blank English tokenizer for all); ``left_out`` lists the
    spans that could not become entities."""

    def __init__(self) -> None:
        spacy = _spacy()
        from spacy.tokens import DocBin

        self.nlp = spacy.blank("en")
        self.docbin = DocBin(store_user_data=True)
        self.left_out: list[Unaligned] = []

    def add(self, d: Dialogue) -> None:
        for pos, m in enumerate(d.messages):
            doc = self.nlp.make_doc(m.text)
            ents = []
            for s in sorted(m.spans):
                ent = doc.char_span(s.start, s.end, label=s.label, alignment_mode="strict")
                if ent is None:
                    self.left_out.append(Unaligned(d.id, m.index, s, m.text[s.start:s.end],
                                                   "does not align to spaCy tokens"))
                elif ents and ent.start < ents[-1].end:
                    self.left_out.append(Unaligned(
                        d.id, m.index, s, m.text[s.start:s.end],
                        f"overlaps {ents[-1].label_} {ents[-1].start_char}..{ents[-1].end_char}"))
                else:
                    ents.append(ent)
            doc.ents = ents
            info: dict[str, Any] = {"dialogue_id": d.id, "index": m.index, "speaker": m.speaker}
            if m.ts is not None:
                info["ts"] = m.ts
            if pos == 0 and d.anchor:
                info["anchor"] = d.anchor
            doc.user_data[USER_KEY] = info
            self.docbin.add(doc)

    def __len__(self) -> int:
        return len(self.docbin)

    def to_bytes(self) -> bytes:
        return self.docbin.to_bytes()


def to_docbin(dialogues: Iterable[Dialogue], *, strict: bool = True) -> tuple[bytes, list[Unaligned]]:
    """The ``.spacy`` bytes and the spans left out (only when ``strict`` is False)."""
    builder = DocBinBuilder()
    for d in dialogues:
        builder.add(d)
    if strict and builder.left_out:
        left_out = builder.left_out
        shown = "\n".join(str(u) for u in left_out[:20])
        more = f"\n… and {len(left_out) - 20} more" if len(left_out) > 20 else ""
        raise FormatError(f"{len(left_out)} span(s) cannot be spaCy entities:\n{shown}{more}")
    return builder.to_bytes(), builder.left_out


class DocBinBundleWriter:
    """Gold bundle writer (its entry in :data:`pipeline.formats.CATALOG`): ``spacy/train.spacy`` and
    ``spacy/test.spacy`` for ``spacy train``, and ``spacy/unaligned.jsonl`` listing every gold span
    the DocBins could not hold (empty when none), so nothing is dropped unreported."""

    def __init__(self, spec: Any) -> None:
        self.dir = spec.root / "spacy"
        self.dir.mkdir(exist_ok=True)
        self.builders = {"train": DocBinBuilder(), "test": DocBinBuilder()}

    def write(self, dialogue: Dialogue, split: str) -> None:
        self.builders[split].add(dialogue)

    def close(self) -> list[str]:
        import json

        names = []
        for split, builder in self.builders.items():
            (self.dir / f"{split}.spacy").write_bytes(builder.to_bytes())
            names.append(f"spacy/{split}.spacy")
        with open(self.dir / "unaligned.jsonl", "w", encoding="utf-8") as fh:
            for u in (u for b in self.builders.values() for u in b.left_out):
                fh.write(json.dumps({"dialogue_id": u.dialogue_id, "index": u.index, "start": u.span.start,
                                     "end": u.span.end, "label": u.span.label, "text": u.text,
                                     "reason": u.reason}, ensure_ascii=False) + "\n")
        return [*names, "spacy/unaligned.jsonl"]


def _refuse(message: str) -> CorpusError:
    return CorpusError([CorpusProblem(1, message)])


def _inflate(raw: bytes, max_bytes: int, max_ratio: int) -> bytearray:
    """The decompressed file, inflated a chunk at a time and never past the bound (see the module
    docstring); bytes after the zlib stream are ignored, as spaCy ignores them."""
    by_ratio = max(len(raw) * max_ratio, RATIO_FLOOR)
    bound = min(max_bytes, by_ratio)
    inflater = zlib.decompressobj()
    out = bytearray()
    data = raw
    try:
        while not inflater.eof:
            chunk = inflater.decompress(data, min(_CHUNK, bound + 1 - len(out)))
            out += chunk
            if len(out) > bound:
                if bound == max_bytes:
                    raise _refuse(f"the spaCy DocBin file decompresses to more than {max_bytes:,} bytes, "
                                  f"over the {max_bytes:,}-byte import limit")
                raise _refuse(f"the spaCy DocBin file decompresses to more than {max_ratio}× its "
                              f"{len(raw):,} bytes (over {bound:,} bytes); a real DocBin compresses 10–60×, "
                              f"so this looks like a decompression bomb")
            data = inflater.unconsumed_tail
            if not chunk and not data:
                raise zlib.error("incomplete or truncated stream")
    except zlib.error as exc:
        raise _refuse(f"not a spaCy DocBin file: zlib: {exc}") from None
    return out


def _check_declared(msg: Any, max_bytes: int) -> None:
    """Refuse a DocBin whose declared counts exceed the limit or do not match its token data, before
    spaCy unflattens them."""
    import numpy

    if not isinstance(msg, dict):
        raise _refuse("not a spaCy DocBin file: the decompressed data is not a msgpack map")
    attrs = msg.get("attrs")
    if not (isinstance(attrs, list) and attrs and all(isinstance(a, int) for a in attrs)):
        raise _refuse("not a spaCy DocBin file: 'attrs' must be a non-empty list of attribute ids")
    for key in ("tokens", "spaces", "lengths"):
        if not isinstance(msg.get(key), bytes):
            raise _refuse(f"not a spaCy DocBin file: {key!r} must be bytes")
    if len(msg["lengths"]) % 4:
        raise _refuse("not a spaCy DocBin file: 'lengths' is not a whole number of int32 values")
    lengths = numpy.frombuffer(msg["lengths"], dtype="int32")
    docs = len(lengths)
    max_docs = max_bytes // MIN_MESSAGE_BYTES
    if docs > max_docs:
        raise _refuse(f"the spaCy DocBin file declares {docs:,} docs; the {max_bytes:,}-byte import limit "
                      f"allows at most {max_docs:,} (as many as a JSONL file of that size could hold)")
    if docs and int(lengths.min()) < 0:
        raise _refuse("not a spaCy DocBin file: a doc's declared length is negative")
    tokens = int(lengths.sum(dtype="int64"))
    if tokens > max_bytes:
        raise _refuse(f"the spaCy DocBin file declares {tokens:,} tokens, more than the {max_bytes:,}-byte "
                      f"import limit allows (each token is a character at least)")
    held = len(msg["tokens"]) // (8 * len(attrs))
    if held != tokens or len(msg["tokens"]) % (8 * len(attrs)) or len(msg["spaces"]) != tokens:
        raise _refuse(f"not a spaCy DocBin file: its lengths declare {tokens:,} tokens but it holds {held:,}"
                      + ("" if len(msg["spaces"]) == held else f" ({len(msg['spaces']):,} spaces)"))
    for key, required in (("cats", True), ("flags", False), ("span_groups", False)):
        value = msg.get(key)
        if value is None and not required:
            continue
        if not isinstance(value, list) or len(value) != docs:
            have = f"{len(value):,} entries" if isinstance(value, list) else "no list"
            raise _refuse(f"not a spaCy DocBin file: {key!r} has {have} for {docs:,} docs")
    for key in ("strings", "user_data"):
        if key in msg and not isinstance(msg[key], list):
            raise _refuse(f"not a spaCy DocBin file: {key!r} must be a list")


def parse_docbin(
    raw: bytes, *, labels: set[str] | None = None, max_id_length: int | None = None,
    report: ParseReport | None = None, name: str = "", max_bytes: int | None = None,
    max_ratio: int = MAX_RATIO, default_speaker: str | None = None,
) -> list[Dialogue]:
    """A ``.spacy`` file → Dialogues (``doc.ents`` as spans); problems name the doc ("line" is its number).
    A Doc without ``user_data["blindspot"]["dialogue_id"]`` is named from ``name`` (the file's) and its
    text, entities and user data (:class:`~pipeline.formats._common.DerivedIds`).

    ``max_bytes`` (the caller's ``BLINDSPOT_IMPORT_MAX_BYTES``; :data:`DEFAULT_MAX_BYTES` when None)
    bounds what the file may decompress to and declare, ``max_ratio`` its compression ratio; see the
    module docstring for why. Both are checked before spaCy expands anything."""
    spacy = _spacy()
    import srsly
    from spacy.tokens import DocBin

    max_bytes = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    inflated = _inflate(raw, max_bytes, max_ratio)
    try:
        msg = srsly.msgpack_loads(inflated)
    except Exception as exc:  # msgpack errors have no common base
        raise _refuse(f"not a spaCy DocBin file: {type(exc).__name__}: {exc}") from None
    del inflated
    _check_declared(msg, max_bytes)
    del msg
    try:  # spaCy inflates the (now bounded) stream again: simpler than mirroring its private layout
        docs = list(DocBin().from_bytes(raw).get_docs(spacy.blank("en").vocab))
    except Exception as exc:  # msgpack/zlib errors have no common base
        raise CorpusError([CorpusProblem(1, f"not a spaCy DocBin file: {type(exc).__name__}: {exc}")]) from None
    records = []
    derive = DerivedIds(name, "doc")
    for n, doc in enumerate(docs, start=1):
        info = doc.user_data.get(USER_KEY)
        info = info if isinstance(info, dict) else {}
        ents = [{"start": e.start_char, "end": e.end_char, "label": e.label_} for e in doc.ents]
        did = own_id(info.get("dialogue_id")) or derive({"text": doc.text, "ents": ents, "info": info})
        records.append(Record(
            line=n, where=f"doc {n}", text=doc.text,
            dialogue_id=did,
            index=message_index(info.get("index")), speaker=info.get("speaker") or default_speaker or DEFAULT_SPEAKER,
            ts=info.get("ts"), anchor=info.get("anchor"),
            spans=ents,
        ))
    dialogues = assemble(records, [], labels=labels, max_id_length=max_id_length, report=report)
    note_derived(report, derive, dialogues)
    return dialogues
