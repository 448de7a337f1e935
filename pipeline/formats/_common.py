"""What every foreign format's reader shares: records of one message each, grouped into dialogues
and checked by the same code as a JSONL import (:func:`pipeline.corpus._dialogue_from_obj`), so
CRLF becomes LF, control characters, unknown labels and bad offsets are refused alike, and every
problem names the line (or task, or doc) it came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pipeline.corpus import CorpusError, CorpusProblem, ParseReport, _dialogue_from_obj
from pipeline.types import Dialogue

DEFAULT_SPEAKER = "unknown"  # foreign formats have no speaker; the corpus format requires one


class FormatError(ValueError):
    """A writer cannot represent what it was given (a spaCy span off token boundaries)."""


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
        dialogue = _dialogue_from_obj(obj, recs[0].line, labels, problems, max_id_length=max_id_length, report=report)
        for j in range(before, len(problems)):  # point message problems at the record they came from
            msg = problems[j].message
            if m := _MESSAGE_PREFIX.match(msg):
                rec = recs[int(m.group(1))]
                problems[j] = CorpusProblem(rec.line, _at(rec, msg[m.end():]))
            else:
                problems[j] = CorpusProblem(problems[j].line, _at(recs[0], msg))
        if dialogue is not None:
            dialogues.append(dialogue)
    if problems:
        raise CorpusError(sorted(problems, key=lambda p: p.line))
    if not dialogues:
        raise CorpusError([CorpusProblem(1, "the file contains no messages")])
    return dialogues


def _at(rec: Record, msg: str) -> str:
    return f"{rec.where}: {msg}" if rec.where else msg


def fallback_id(value: Any, default: str) -> str:
    """A dialogue id from a foreign record's own id, else ``default`` (each message its own dialogue)."""
    if isinstance(value, bool) or value is None or (isinstance(value, str) and not value.strip()):
        return default
    return str(value).strip()


def message_index(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
