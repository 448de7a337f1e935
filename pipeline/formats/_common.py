"""What the readers of :mod:`pipeline.formats` share: decoding an upload (:func:`decode`), the
first-line look the sniffers take (:func:`json_head`), and, for the foreign formats, records of
one message each, grouped into dialogues and checked by the same code as a JSONL import
(:func:`pipeline.corpus.dialogue_from_obj`), so CRLF becomes LF, control characters, unknown labels
and bad offsets are refused alike, and every problem names the line (or task, or doc) it came from.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import IO, Any

from pipeline.corpus import CorpusError, CorpusProblem, ParseReport, dialogue_from_obj
from pipeline.types import Dialogue

DEFAULT_SPEAKER = "unknown"  # foreign formats have no speaker; the corpus format requires one


class FormatError(ValueError):
    """A writer cannot represent what it was given (a spaCy span off token boundaries)."""


def decode(raw: bytes) -> str:
    """An upload's text: UTF-8 with any BOM dropped; invalid UTF-8 is a :class:`CorpusError`
    naming its line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CorpusError(
            [CorpusProblem(line, f"not valid UTF-8 (byte {exc.start}); save the file as UTF-8")]
        ) from None
    return text.removeprefix("\ufeff")


def utf8_lines(fh: IO[bytes]) -> Iterator[str]:
    """The lines of an open binary file decoded one at a time, as :func:`decode` would give them
    (any BOM dropped; invalid UTF-8 is a :class:`CorpusError` naming its line and byte, and the
    only problem reported, as :func:`decode` stops at it before any line is read)."""
    offset = 0
    for lineno, raw in enumerate(fh, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorpusError(
                [CorpusProblem(lineno, f"not valid UTF-8 (byte {offset + exc.start}); save the file as UTF-8")]
            ) from None
        offset += len(raw)
        yield line.removeprefix("\ufeff") if lineno == 1 else line


JSON_NAMES = (".jsonl", ".json", ".ndjson")


def json_head(lower: str, body: bytes) -> bytes | None:
    """The first line of an upload that its name (``lower``, lower-cased) or its first byte says is
    JSON objects, else None; ``body`` is its head without BOM or leading white space."""
    if lower.endswith(JSON_NAMES) or body.startswith(b"{"):
        return body.split(b"\n", 1)[0]
    return None


def foreign_record(first: bytes) -> bool:
    """Whether a JSON first line is one message of another tool (``"text"`` and no ``"messages"``)."""
    return b'"messages"' not in first and b'"text"' in first


@dataclass
class Record:
    """One message as a foreign format gives it, before it is checked.

    ``line`` is where errors point; ``where`` prefixes them ("task 3", "doc 2") when a line alone
    does not say it. ``spans`` are ``{"start", "end", "label"[, "score"]}`` against ``text`` as
    written (before CRLF becomes LF)."""

    line: int
    dialogue_id: str
    index: int | None
    text: Any
    speaker: Any = DEFAULT_SPEAKER
    ts: Any = None
    spans: list[dict[str, Any]] = field(default_factory=list)
    anchor: Any = None
    meta: Any = None
    where: str = ""


_MESSAGE_PREFIX = re.compile(r"^message (\d+):? ")


def assemble(
    records: Iterable[Record], problems: list[CorpusProblem], *, labels: set[str] | None = None,
    max_id_length: int | None = None, report: ParseReport | None = None,
) -> list[Dialogue]:
    """Group records by dialogue id (ordered by ``index``, else file order) into checked Dialogues.

    All or nothing: raises :class:`CorpusError` with ``problems`` plus any found here."""
    grouped: dict[str, list[Record]] = {}
    for rec in records:
        grouped.setdefault(rec.dialogue_id, []).append(rec)
    dialogues = []
    for did, recs in grouped.items():
        if all(r.index is not None for r in recs):
            recs.sort(key=lambda r: r.index)
            seen: dict[int, Record] = {}
            dup = None
            for r in recs:
                if r.index in seen:
                    dup = r
                    break
                seen[r.index] = r
            if dup is not None:
                problems.append(CorpusProblem(dup.line, _at(dup, f"dialogue {did!r} has message index {dup.index} "
                                                              f"twice (first on line {seen[dup.index].line})")))
                continue
        anchor = next((r.anchor for r in recs if r.anchor), "")
        meta = next((r.meta for r in recs if r.meta), None)
        obj = {"id": did, "anchor": anchor, "meta": meta, "messages": [
            {"speaker": r.speaker, "text": r.text, "ts": r.ts, "spans": r.spans} for r in recs]}
        before = len(problems)
        dialogue = dialogue_from_obj(obj, recs[0].line, labels, problems, max_id_length=max_id_length, report=report)
        for j in range(before, len(problems)):  # point message problems at the record they came from
            msg = problems[j].message
            if m := _MESSAGE_PREFIX.match(msg):
                rec = recs[int(m.group(1))]
                problems[j] = CorpusProblem(rec.line, _at(rec, msg[m.end():]))
            else:
                problems[j] = CorpusProblem(problems[j].line, _at(recs[0], msg))
        if dialogue is not None:
            dialogues.append(dialogue)
    return all_or_nothing(dialogues, problems, empty="the file contains no messages")


def _at(rec: Record, msg: str) -> str:
    return f"{rec.where}: {msg}" if rec.where else msg


def own_id(*values: Any) -> str | None:
    """A dialogue id from the first of a foreign record's own ids that is set, else None."""
    for value in values:
        if has_id(value):
            return str(value).strip()
    return None


def message_index(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_UNSAFE = re.compile(r"[^\w.-]+")
STEM_CHARS = 80  # of the file name kept in a derived id: with the hash, well under any id limit
HASH_CHARS = 12  # hex digits of SHA-1: 48 bits, so two different items of one file share them ~never


class DerivedIds:
    """Ids for the items of one file that have none: ``{stem}-{hash}``, the file name's stem and the
    first :data:`HASH_CHARS` hex digits of the SHA-1 of the item's content (canonical JSON).

    Two files no longer both make ``task-1``: a file with another name gets other ids, and so does
    another item, so an import is neither refused nor, with ``skip_existing``, silently skipped
    because an unrelated file came first. Reading the same file again gives the same ids (the
    stem and the content decide, not the position), so ``skip_existing`` skips exactly what was
    imported; an item added to or edited in the file gets a new id and is imported, the others
    are skipped. A second identical item in the same file (or a hash clash) gets ``-2``, ``-3``…
    in file order. Only a file of the same name holding the very same item gets the same id: the
    same message, already there. ``made`` lists the ids given, for the import report."""

    def __init__(self, name: str, default_stem: str) -> None:
        stem = _UNSAFE.sub("-", PurePath(name.replace("\\", "/")).stem if name else "").strip("-.")
        self.stem = stem[:STEM_CHARS] or default_stem
        self.seen: dict[str, int] = {}
        self.made: list[str] = []

    def __call__(self, content: Any) -> str:
        blob = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        base = f"{self.stem}-{hashlib.sha1(blob.encode('utf-8', 'surrogatepass')).hexdigest()[:HASH_CHARS]}"
        n = self.seen.get(base, 0) + 1
        self.seen[base] = n
        did = base if n == 1 else f"{base}-{n}"
        self.made.append(did)
        return did


def has_id(value: Any) -> bool:
    """Whether ``value`` is an id (not None, a bool or blank)."""
    return not (isinstance(value, bool) or value is None or (isinstance(value, str) and not value.strip()))


def note_derived(report: ParseReport | None, derive: DerivedIds, dialogues: list[Dialogue]) -> None:
    """Record in ``report`` which of ``dialogues`` got a derived id."""
    if report is not None and derive.made:
        made = set(derive.made)
        report.derived_ids.update(d.id for d in dialogues if d.id in made)


def all_or_nothing(dialogues: list[Dialogue], problems: list[CorpusProblem], *, empty: str) -> list[Dialogue]:
    """The dialogues a reader made, or every problem it found in line order (an import is all or
    nothing); ``empty`` says what a file with nothing in it lacks."""
    if problems:
        raise CorpusError(sorted(problems, key=lambda p: p.line))
    if not dialogues:
        raise CorpusError([CorpusProblem(1, empty)])
    return dialogues
