"""The import format's dialogue object, checked; and the per-message prediction format.

:func:`dialogue_from_obj` turns one ``{"id", "anchor", "meta", "messages"}`` object into a
:class:`~pipeline.types.Dialogue` with canonical text (see :func:`canonical_text`), and every
reader of :mod:`pipeline.formats` (the import format's JSONL and CSV, and the other tools'
formats) builds its dialogues through it, so all refuse the same things. Parsing collects *every*
problem with its line number instead of stopping at the first, so a user fixes a file in one pass;
callers decide to write nothing when any error was found.
"""

from __future__ import annotations

import bisect
import hashlib
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
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


@dataclass
class ParseReport:
    """What parsing changed on the way in, for the import report."""

    normalised: dict[str, int] = field(default_factory=dict)  # dialogue id -> messages whose CR/CRLF became LF
    derived_ids: set[str] = field(default_factory=set)  # dialogues the file gave no id: named from file + content
    repeats: list[Repeat] = field(default_factory=list)  # dialogues the file repeats identically: imported once


@dataclass(frozen=True, slots=True)
class Repeat:
    """A dialogue given again, identically, later in the same file (``line``; first on ``first``):
    the same anchor and messages (speakers, texts, times, spans, the messages' meta) once their
    texts are canonical. ``other_meta``: the dialogue's own ``meta`` differs, and the first line's
    is the one kept (a corpus that lists one excerpt once per annotation of it, as Bridge does)."""

    dialogue_id: str
    line: int
    first: int
    other_meta: bool = False


# A browser's HTML parser turns CRLF and a lone CR into LF and drops NUL, so a text that keeps them
# has offsets that the annotator's selection cannot reproduce. One canonical text: LF only, tab
# kept, every other C0 control (and DEL) refused. So are C1 controls (U+0085 is a cp1252 "…" read as
# Latin-1), bidi embeddings, overrides and isolates (they reorder what a reader sees, and end up as
# tokens in the CoNLL export), U+2028/U+2029 (line breaks the browser does not show as such) and
# lone surrogates (a JSON escape of half a UTF-16 pair: no encoder, PostgreSQL's neither, takes it).
_REFUSED = "\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f{_REFUSED}]")
_CONTROL_BUT_CR = re.compile(f"[\x00-\x08\x0b\x0c\x0e-\x1f{_REFUSED}]")
MAX_NESTING = 64  # levels of JSON arrays/objects in one line: far above any real meta, far below recursion


def canonical_text(text: str) -> tuple[str, Callable[[int], int]]:
    """``text`` with CRLF and lone CR turned into LF, and the map from old offsets to new ones."""
    if "\r" not in text:
        return text, lambda offset: offset
    dropped = [m.start() for m in re.finditer("\r\n", text)]  # each CR of a CRLF disappears
    return text.replace("\r\n", "\n").replace("\r", "\n"), lambda o: o - bisect.bisect_left(dropped, o)


def _control_problem(value: str, what: str, *, pattern: re.Pattern = _CONTROL_BUT_CR) -> str | None:
    m = pattern.search(value)
    if m is None:
        return None
    return (f"{what} contains the control character U+{ord(m.group()):04X} at character {m.start()}; "
            "remove it (only tab and line breaks are allowed)")


def too_deep(value: Any) -> bool:
    """More than :data:`MAX_NESTING` levels of lists/objects, found without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > MAX_NESTING:
                return True
            stack.extend((v, depth + 1) for v in (item.values() if isinstance(item, dict) else item))
    return False


_SURROGATE = re.compile("[\ud800-\udfff]")


def _nul_in(value: Any) -> bool:
    """A NUL or a lone surrogate anywhere in a JSON value: PostgreSQL can store neither."""
    if isinstance(value, str):
        return "\x00" in value or _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_nul_in(k) or _nul_in(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_nul_in(v) for v in value)
    return False


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
    raw: Any, text: str, line: int, where: str, labels: set[str] | None, problems: list,
    shift: Callable[[int], int] = lambda offset: offset,
) -> tuple[Span, ...]:
    """Spans given against the text as written, moved onto its canonical form by ``shift``."""
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
            score = float(item.get("score", 1.0))
        except (TypeError, ValueError):
            score = math.nan
        if not math.isfinite(score):
            problems.append(CorpusProblem(line, f"{at}: 'score' must be a finite number, got {item.get('score')!r}"))
            continue
        try:
            Span(start, end, label).check(text)
        except SpanError as exc:
            problems.append(CorpusProblem(line, f"{at}: {exc}"))
            continue
        if shift(end) <= shift(start):
            problems.append(CorpusProblem(
                line, f"{at}: span {start}..{end} is only the CR of a CRLF line break, which becomes LF"))
            continue
        spans.append(Span(shift(start), shift(end), label, score))
    return tuple(spans)


def dialogue_from_obj(
    obj: Any, line: int, labels: set[str] | None, problems: list, *,
    max_id_length: int | None = None, report: ParseReport | None = None, default_speaker: str | None = None,
) -> Dialogue | None:
    """One dialogue object read, or None with its problems added; a message with a missing or
    empty ``speaker`` takes ``default_speaker`` when one is given (else it is a problem)."""
    before = len(problems)
    if not isinstance(obj, dict):
        problems.append(CorpusProblem(line, "each line must be a JSON object"))
        return None
    did = _dialogue_id(obj, line, problems, max_id_length)
    anchor, meta = _anchor_and_meta(obj, line, problems)
    raw_messages = obj.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        problems.append(CorpusProblem(line, "'messages' must be a non-empty list"))
        return None
    messages = []
    normalised = 0
    for i, m in enumerate(raw_messages):
        message = _message_from_obj(m, i, line, labels, problems, default_speaker)
        if message is not None:
            normalised += message.text != m["text"]  # CRLF, NBSP and the like made canonical
            messages.append(message)
    if len(problems) > before:
        return None
    if normalised and report is not None:
        report.normalised[did.strip()] = normalised
    return Dialogue(id=did.strip(), messages=tuple(messages), anchor=anchor, meta=meta)


def _dialogue_id(obj: dict, line: int, problems: list, max_id_length: int | None) -> Any:
    """The dialogue's ``id`` (an int becomes its string); its problems added to ``problems``."""
    did = obj.get("id")
    if isinstance(did, int) and not isinstance(did, bool):
        did = str(did)
    if not _nonempty_str(did):
        problems.append(CorpusProblem(line, "missing or empty 'id'"))
    elif problem := _control_problem(did, "'id'", pattern=_CONTROL):
        problems.append(CorpusProblem(line, problem))
    elif max_id_length is not None and len(did.strip()) > max_id_length:
        problems.append(CorpusProblem(
            line, f"'id' is {len(did.strip())} characters, longer than {max_id_length} (the most a dialogue id may have)"))
    return did


def _anchor_and_meta(obj: dict, line: int, problems: list) -> tuple[str, dict]:
    """The canonical anchor text and the dialogue's meta object (empty when malformed)."""
    anchor = obj.get("anchor") or ""
    if not isinstance(anchor, str):
        problems.append(CorpusProblem(line, "'anchor' must be a string"))
        anchor = ""
    anchor = canonical_text(anchor)[0]
    if problem := _control_problem(anchor, "'anchor'"):
        problems.append(CorpusProblem(line, problem))
    meta = obj.get("meta") or {}
    if not isinstance(meta, dict):
        problems.append(CorpusProblem(line, "'meta' must be an object"))
        meta = {}
    if _nul_in(meta):
        problems.append(CorpusProblem(line, "'meta' contains U+0000 or a lone surrogate (U+D800..U+DFFF); remove it"))
    return anchor, meta


def _message_from_obj(m: Any, i: int, line: int, labels: set[str] | None, problems: list,
                      default_speaker: str | None = None) -> Message | None:
    """Message ``i`` of a dialogue object with canonical text and spans shifted to it, or ``None``
    with its problems added."""
    where = f"message {i}"
    if not isinstance(m, dict):
        problems.append(CorpusProblem(line, f"{where}: must be an object"))
        return None
    speaker, text, ts = m.get("speaker"), m.get("text"), m.get("ts")
    if default_speaker and not _nonempty_str(speaker):
        speaker = default_speaker
    if not _nonempty_str(speaker):
        problems.append(CorpusProblem(line, f"{where}: missing or empty 'speaker'"))
        return None
    if not _nonempty_str(text):
        problems.append(CorpusProblem(line, f"{where}: missing or empty 'text'"))
        return None
    if ts is not None and not isinstance(ts, str | int | float):
        problems.append(CorpusProblem(line, f"{where}: 'ts' must be a string"))
        return None
    canonical, shift = canonical_text(text)
    found = [p for p in (_control_problem(speaker, "'speaker'", pattern=_CONTROL),
                         _control_problem(str(ts or ""), "'ts'", pattern=_CONTROL),
                         _control_problem(canonical, "'text'"),
                         "'meta' contains U+0000 or a lone surrogate (U+D800..U+DFFF); remove it" if _nul_in(m.get("meta")) else None)
             if p]
    if found:
        problems.extend(CorpusProblem(line, f"{where}: {p}") for p in found)
        return None
    spans = _parse_spans(m.get("spans"), text, line, where, labels, problems, shift)
    return Message(
        text=canonical,
        speaker=speaker.strip(),
        role=speaker_role(speaker),
        index=i,
        ts=None if ts is None else str(ts),
        spans=spans,
        meta=m.get("meta") if isinstance(m.get("meta"), dict) else {},
    )


def fingerprints(dialogue: Dialogue) -> tuple[bytes, bytes]:
    """Digests of a dialogue's content (anchor and messages, as they would be stored) and of its
    own ``meta``: two lines of one file with the same id and content are one dialogue repeated."""
    content = {"anchor": dialogue.anchor, "messages": [
        [m.speaker, m.text, m.ts, dict(m.meta), [[s.start, s.end, s.label, s.score] for s in m.spans]]
        for m in dialogue.messages]}
    return _digest(content), _digest(dict(dialogue.meta))


def _digest(value: Any) -> bytes:
    blob = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.blake2b(blob.encode("utf-8", "surrogatepass"), digest_size=16).digest()  # 16 bytes an id held


def json_lines(text: str | Iterable[str], problems: list[CorpusProblem]) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` of each non-blank line of a text, or of its lines as a
    streamed file gives them; malformed lines become problems."""
    for lineno, line in enumerate(io.StringIO(text) if isinstance(text, str) else text, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(CorpusProblem(lineno, f"malformed JSON: {exc.msg} (column {exc.colno})"))
            continue
        except RecursionError:
            problems.append(CorpusProblem(lineno, f"nested deeper than {MAX_NESTING} levels"))
            continue
        if too_deep(value):
            problems.append(CorpusProblem(lineno, f"nested deeper than {MAX_NESTING} levels"))
            continue
        yield lineno, value


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
