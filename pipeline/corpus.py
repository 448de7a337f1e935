"""Reading and writing the corpus import format and the per-message prediction format.

Parsing collects *every* problem with its line number instead of stopping at the first, so a user
fixes a file in one pass; callers decide to write nothing when any error was found.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pipeline.types import Detection, Dialogue, Message, Span, SpanError

STUDENT_WORDS = ("student", "learner", "pupil", "kid", "child")
TUTOR_WORDS = ("tutor", "teacher", "instructor", "coach", "mentor", "ta", "assistant")


@dataclass(frozen=True, slots=True)
class CorpusProblem:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


class CorpusError(ValueError):
    """The file cannot be imported; ``problems`` lists every line at fault."""

    def __init__(self, problems: list[CorpusProblem]):
        self.problems = problems
        shown = "\n".join(str(p) for p in problems[:20])
        more = f"\n… and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__(f"{len(problems)} problem(s) in the file:\n{shown}{more}")


def speaker_role(speaker: str) -> str:
    """Map a raw speaker label ("Tutor", "student_2", "T") to tutor / student / other."""
    low = speaker.strip().lower()
    if low in ("t", "tutor") or any(low.startswith(w) for w in TUTOR_WORDS):
        return "tutor"
    if low in ("s", "student") or any(low.startswith(w) for w in STUDENT_WORDS):
        return "student"
    return "other"


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _parse_spans(
    raw: Any, text: str, line: int, where: str, labels: set[str] | None, problems: list
) -> tuple[Span, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        problems.append(CorpusProblem(line, f"{where}: 'spans' must be a list"))
        return ()
    spans = []
    for k, item in enumerate(raw):
        at = f"{where} span {k}"
        if not isinstance(item, dict) or not {"start", "end", "label"} <= set(item):
            problems.append(CorpusProblem(line, f"{at}: needs 'start', 'end' and 'label'"))
            continue
        start, end, label = item["start"], item["end"], item["label"]
        if isinstance(start, bool) or isinstance(end, bool):
            start = end = None
        if not (isinstance(start, int) and isinstance(end, int)):
            problems.append(CorpusProblem(line, f"{at}: 'start' and 'end' must be integers"))
            continue
        if not _nonempty_str(label):
            problems.append(CorpusProblem(line, f"{at}: 'label' must be a non-empty string"))
            continue
        if labels is not None and label not in labels:
            problems.append(
                CorpusProblem(line, f"{at}: unknown label {label!r} (known: {', '.join(sorted(labels))})")
            )
            continue
        try:
            spans.append(Span(start, end, label, float(item.get("score", 1.0))).check(text))
        except (SpanError, TypeError, ValueError) as exc:
            problems.append(CorpusProblem(line, f"{at}: {exc}"))
    return tuple(spans)


def _dialogue_from_obj(
    obj: Any, line: int, labels: set[str] | None, problems: list
) -> Dialogue | None:
    before = len(problems)
    if not isinstance(obj, dict):
        problems.append(CorpusProblem(line, "each line must be a JSON object"))
        return None
    did = obj.get("id")
    if isinstance(did, int) and not isinstance(did, bool):
        did = str(did)
    if not _nonempty_str(did):
        problems.append(CorpusProblem(line, "missing or empty 'id'"))
    anchor = obj.get("anchor") or ""
    if not isinstance(anchor, str):
        problems.append(CorpusProblem(line, "'anchor' must be a string"))
        anchor = ""
    meta = obj.get("meta") or {}
    if not isinstance(meta, dict):
        problems.append(CorpusProblem(line, "'meta' must be an object"))
        meta = {}
    raw_messages = obj.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        problems.append(CorpusProblem(line, "'messages' must be a non-empty list"))
        return None
    messages = []
    for i, m in enumerate(raw_messages):
        where = f"message {i}"
        if not isinstance(m, dict):
            problems.append(CorpusProblem(line, f"{where}: must be an object"))
            continue
        speaker, text, ts = m.get("speaker"), m.get("text"), m.get("ts")
        if not _nonempty_str(speaker):
            problems.append(CorpusProblem(line, f"{where}: missing or empty 'speaker'"))
            continue
        if not _nonempty_str(text):
            problems.append(CorpusProblem(line, f"{where}: missing or empty 'text'"))
            continue
        if ts is not None and not isinstance(ts, str | int | float):
            problems.append(CorpusProblem(line, f"{where}: 'ts' must be a string"))
            continue
        spans = _parse_spans(m.get("spans"), text, line, where, labels, problems)
        messages.append(
            Message(
                text=text,
                speaker=speaker.strip(),
                role=speaker_role(speaker),
                index=i,
                ts=None if ts is None else str(ts),
                spans=spans,
                meta=m.get("meta") if isinstance(m.get("meta"), dict) else {},
            )
        )
    if len(problems) > before:
        return None
    return Dialogue(id=did.strip(), messages=tuple(messages), anchor=anchor, meta=meta)


def _decode(raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CorpusError(
            [CorpusProblem(line, f"not valid UTF-8 (byte {exc.start}); save the file as UTF-8")]
        ) from None
    return text.removeprefix("\ufeff")


def parse_jsonl(text: str, *, labels: set[str] | None = None) -> list[Dialogue]:
    problems: list[CorpusProblem] = []
    dialogues: list[Dialogue] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(io.StringIO(text), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(CorpusProblem(lineno, f"malformed JSON: {exc.msg} (column {exc.colno})"))
            continue
        dialogue = _dialogue_from_obj(obj, lineno, labels, problems)
        if dialogue is None:
            continue
        if dialogue.id in seen:
            problems.append(
                CorpusProblem(lineno, f"duplicate dialogue id {dialogue.id!r} (first on line {seen[dialogue.id]})")
            )
            continue
        seen[dialogue.id] = lineno
        dialogues.append(dialogue)
    if problems:
        raise CorpusError(problems)
    if not dialogues:
        raise CorpusError([CorpusProblem(1, "the file contains no dialogues")])
    return dialogues


CSV_REQUIRED = ("dialogue_id", "seq", "speaker", "text")


def parse_csv(text: str, *, labels: set[str] | None = None) -> list[Dialogue]:
    """CSV rows ``dialogue_id, seq, speaker, text [, ts, anchor]``; rows of a dialogue may be in any order."""
    problems: list[CorpusProblem] = []
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
        header = [h.strip() for h in (reader.fieldnames or [])]
    except csv.Error as exc:
        raise CorpusError([CorpusProblem(1, f"malformed CSV header: {exc}")]) from None
    missing = [c for c in CSV_REQUIRED if c not in header]
    if missing:
        raise CorpusError(
            [CorpusProblem(1, f"CSV header lacks column(s) {', '.join(missing)}; need {', '.join(CSV_REQUIRED)}")]
        )
    reader.fieldnames = header
    grouped: dict[str, list[tuple[int, int, dict]]] = {}
    first_line: dict[str, int] = {}
    try:
        for row in reader:
            lineno = reader.line_num
            if None in row:
                problems.append(CorpusProblem(lineno, "more fields than the header has columns"))
                continue
            did = (row.get("dialogue_id") or "").strip()
            if not did:
                problems.append(CorpusProblem(lineno, "empty 'dialogue_id'"))
                continue
            try:
                seq = int((row.get("seq") or "").strip())
            except ValueError:
                problems.append(CorpusProblem(lineno, f"'seq' must be an integer, got {row.get('seq')!r}"))
                continue
            grouped.setdefault(did, []).append((seq, lineno, row))
            first_line.setdefault(did, lineno)
    except csv.Error as exc:
        problems.append(CorpusProblem(reader.line_num, f"malformed CSV: {exc}"))
    dialogues = []
    for did, rows in grouped.items():
        rows.sort(key=lambda r: r[0])
        seqs = [r[0] for r in rows]
        if len(set(seqs)) != len(seqs):
            dup = next(s for s in seqs if seqs.count(s) > 1)
            line = next(r[1] for r in rows if r[0] == dup)
            problems.append(CorpusProblem(line, f"dialogue {did!r} has 'seq' {dup} twice"))
            continue
        anchor = next((r[2].get("anchor") or "" for r in rows if (r[2].get("anchor") or "").strip()), "")
        obj = {
            "id": did,
            "anchor": anchor,
            "messages": [
                {"speaker": r[2].get("speaker"), "text": r[2].get("text"), "ts": (r[2].get("ts") or None)}
                for r in rows
            ],
        }
        before = len(problems)
        dialogue = _dialogue_from_obj(obj, first_line[did], labels, problems)
        if dialogue is None and len(problems) > before:
            # point message-level problems at the CSV row they came from
            for j in range(before, len(problems)):
                msg = problems[j].message
                if msg.startswith("message "):
                    k = int(msg.split()[1].rstrip(":"))
                    problems[j] = CorpusProblem(rows[k][1], msg)
        elif dialogue is not None:
            dialogues.append(dialogue)
    if problems:
        raise CorpusError(sorted(problems, key=lambda p: p.line))
    if not dialogues:
        raise CorpusError([CorpusProblem(1, "the file contains no rows")])
    return dialogues


def detect_format(name: str, head: bytes) -> str:
    lower = name.lower()
    if lower.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if lower.endswith((".csv", ".tsv")):
        return "csv"
    return "jsonl" if head.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{") else "csv"


def parse_corpus(raw: bytes, *, name: str = "", labels: set[str] | None = None) -> list[Dialogue]:
    """Parse an uploaded corpus (bytes) as JSONL or CSV, raising :class:`CorpusError` on any problem."""
    text = _decode(raw)
    if detect_format(name, raw[:64]) == "csv":
        return parse_csv(text, labels=labels)
    return parse_jsonl(text, labels=labels)


def read_corpus(path: str | Path, *, labels: set[str] | None = None) -> list[Dialogue]:
    path = Path(path)
    return parse_corpus(path.read_bytes(), name=path.name, labels=labels)


def iter_jsonl_dialogues(fh: IO[str]) -> Iterator[Dialogue]:
    """Stream dialogues from a JSONL file without holding the corpus (for batch de-identification)."""
    for lineno, line in enumerate(fh, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError([CorpusProblem(lineno, f"malformed JSON: {exc.msg}")]) from None
        problems: list[CorpusProblem] = []
        dialogue = _dialogue_from_obj(obj, lineno, None, problems)
        if problems or dialogue is None:
            raise CorpusError(problems)
        yield dialogue


def dialogue_to_obj(dialogue: Dialogue, *, with_spans: bool = True) -> dict[str, Any]:
    obj: dict[str, Any] = {"id": dialogue.id}
    if dialogue.anchor:
        obj["anchor"] = dialogue.anchor
    if dialogue.meta:
        obj["meta"] = dict(dialogue.meta)
    msgs = []
    for m in dialogue.messages:
        d: dict[str, Any] = {"speaker": m.speaker, "text": m.text}
        if m.ts is not None:
            d["ts"] = m.ts
        if with_spans and m.spans:
            d["spans"] = [s.to_dict(with_score=False) for s in sorted(m.spans)]
        msgs.append(d)
    obj["messages"] = msgs
    return obj


def write_jsonl(rows: Iterable[dict[str, Any]], fh: IO[str]) -> int:
    n = 0
    for row in rows:
        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        n += 1
    return n


def read_predictions(path: str | Path) -> dict[tuple[str, int], list[Span]]:
    """Read the per-message prediction/gold format ``{"dialogue_id", "index", "spans"}``."""
    out: dict[tuple[str, int], list[Span]] = {}
    problems: list[CorpusProblem] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                key = (str(obj["dialogue_id"]), int(obj["index"]))
                out[key] = [
                    Span(int(s["start"]), int(s["end"]), str(s["label"]), float(s.get("score", 1.0)))
                    for s in obj.get("spans", [])
                ]
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                problems.append(CorpusProblem(lineno, f"bad prediction line: {exc}"))
    if problems:
        raise CorpusError(problems)
    return out


def gold_from_dialogues(dialogues: Iterable[Dialogue]) -> dict[tuple[str, int], list[Span]]:
    """Gold spans carried inside an import-format corpus, keyed like :func:`read_predictions`."""
    return {(d.id, m.index): list(m.spans) for d in dialogues for m in d.messages}


def detections_to_rows(detections: Iterable[Detection]) -> Iterator[dict[str, Any]]:
    return (d.to_dict() for d in detections)
