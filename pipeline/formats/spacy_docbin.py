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
"""

from __future__ import annotations

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
    """Gold bundle writer (:data:`pipeline.exports.GOLD_WRITERS`): ``spacy/train.spacy`` and
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


def parse_docbin(
    raw: bytes, *, labels: set[str] | None = None, max_id_length: int | None = None,
    report: ParseReport | None = None, name: str = "",
) -> list[Dialogue]:
    """A ``.spacy`` file → Dialogues (``doc.ents`` as spans); problems name the doc ("line" is its number).
    A Doc without ``user_data["blindspot"]["dialogue_id"]`` is named from ``name`` (the file's) and its
    text, entities and user data (:class:`~pipeline.formats._common.DerivedIds`)."""
    spacy = _spacy()
    from spacy.tokens import DocBin

    try:
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
            index=message_index(info.get("index")), speaker=info.get("speaker") or DEFAULT_SPEAKER,
            ts=info.get("ts"), anchor=info.get("anchor"),
            spans=ents,
        ))
    dialogues = assemble(records, [], labels=labels, max_id_length=max_id_length, report=report)
    note_derived(report, derive, dialogues)
    return dialogues
