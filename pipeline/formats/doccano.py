"""doccano sequence-labelling JSONL: one message per line, ``{"text", "label": [[start, end, L]]}``.

doccano's other export shape, ``"entities": [{"start_offset", "end_offset", "label"}]`` (its
relation mode), is read too. Offsets are code points. The writer adds ``dialogue_id``, ``index``
and ``speaker`` (and ``ts``, and ``anchor`` on a dialogue's first message) — doccano keeps extra
keys as metadata — so reading its file back restores the dialogues; a line from elsewhere without
them becomes a one-message dialogue named after its ``id``, else after the file's name and a hash
of the line (:class:`~pipeline.formats._common.DerivedIds`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import IO, Any

from pipeline.corpus import CorpusProblem, ParseReport, json_lines
from pipeline.formats._common import (
    DEFAULT_SPEAKER,
    DerivedIds,
    Record,
    assemble,
    decode,
    foreign_record,
    json_head,
    message_index,
    note_derived,
    own_id,
)
from pipeline.types import Dialogue

EXAMPLE = b'{"text": "Hi Ana!", "label": [[3, 6, "NAME"]]}\n'


def sniffs(lower: str, body: bytes) -> bool:
    """JSON objects whose first is one message (``"text"``, no ``"messages"``) outside a task."""
    first = json_head(lower, body)
    return first is not None and foreign_record(first) and b'"data"' not in first


def read(raw: bytes, *, name: str = "", max_bytes: int | None = None, **kwargs: Any) -> list[Dialogue]:
    return parse_doccano(decode(raw), name=name, **kwargs)


def to_rows(dialogues: Iterable[Dialogue]) -> Iterable[dict[str, Any]]:
    for d in dialogues:
        for pos, m in enumerate(d.messages):
            row: dict[str, Any] = {"text": m.text, "label": [[s.start, s.end, s.label] for s in sorted(m.spans)],
                                   "dialogue_id": d.id, "index": m.index, "speaker": m.speaker}
            if m.ts is not None:
                row["ts"] = m.ts
            if pos == 0 and d.anchor:
                row["anchor"] = d.anchor
            yield row


def write_doccano(dialogues: Iterable[Dialogue], fh: IO[str]) -> int:
    n = 0
    for row in to_rows(dialogues):
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        n += 1
    return n


class DoccanoBundleWriter:
    """Gold bundle writer (its entry in :data:`pipeline.formats.CATALOG`): ``doccano/gold.jsonl``, the split
    in each row's ``split``."""

    def __init__(self, spec: Any) -> None:
        (spec.root / "doccano").mkdir(exist_ok=True)
        self.fh = open(spec.root / "doccano" / "gold.jsonl", "w", encoding="utf-8")  # noqa: SIM115

    def write(self, dialogue: Dialogue, split: str) -> None:
        for row in to_rows([dialogue]):
            self.fh.write(json.dumps({**row, "split": split}, ensure_ascii=False) + "\n")

    def close(self) -> list[str]:
        self.fh.close()
        return ["doccano/gold.jsonl"]


def _spans(obj: dict, at: str, problems: list, line: int) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = []
    if "entities" in obj and "label" not in obj:
        raw = obj["entities"]
        if not isinstance(raw, list):
            problems.append(CorpusProblem(line, f"{at}'entities' must be a list"))
            return spans
        for k, e in enumerate(raw):
            if not isinstance(e, dict) or not {"start_offset", "end_offset", "label"} <= set(e):
                problems.append(CorpusProblem(line, f"{at}entity {k}: needs 'start_offset', 'end_offset' and 'label'"))
                continue
            spans.append({"start": e["start_offset"], "end": e["end_offset"], "label": e["label"]})
        return spans
    raw = obj.get("label", [])
    if not isinstance(raw, list):
        problems.append(CorpusProblem(line, f"{at}'label' must be a list of [start, end, label]"))
        return spans
    for k, item in enumerate(raw):
        if not (isinstance(item, list) and len(item) == 3):
            problems.append(CorpusProblem(line, f"{at}label {k}: must be [start, end, label], got {item!r}"))
            continue
        spans.append({"start": item[0], "end": item[1], "label": item[2]})
    return spans


def parse_doccano(
    text: str, *, labels: set[str] | None = None, max_id_length: int | None = None,
    report: ParseReport | None = None, name: str = "", default_speaker: str | None = None,
) -> list[Dialogue]:
    """doccano JSONL → Dialogues, all or nothing; problems name their line. A line without
    ``dialogue_id`` or ``id`` is named from ``name`` (the file's) and its content
    (:class:`~pipeline.formats._common.DerivedIds`)."""
    problems: list[CorpusProblem] = []
    records: list[Record] = []
    derive = DerivedIds(name, "line")
    for lineno, obj in json_lines(text, problems):
        if not isinstance(obj, dict):
            problems.append(CorpusProblem(lineno, "each line must be a JSON object"))
            continue
        if not isinstance(obj.get("text"), str):
            problems.append(CorpusProblem(lineno, "'text' must be a string"))
            continue
        records.append(Record(
            line=lineno, text=obj["text"], spans=_spans(obj, "", problems, lineno),
            dialogue_id=own_id(obj.get("dialogue_id"), obj.get("id")) or derive(obj),
            index=message_index(obj.get("index", obj.get("seq"))),
            speaker=obj.get("speaker") or default_speaker or DEFAULT_SPEAKER, ts=obj.get("ts"), anchor=obj.get("anchor"),
        ))
    dialogues = assemble(records, problems, labels=labels, max_id_length=max_id_length, report=report)
    note_derived(report, derive, dialogues)
    return dialogues
