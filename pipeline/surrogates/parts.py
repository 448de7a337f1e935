"""A release de-identified in parts, on as many machines as there are workers.

De-identifying, leak-checking and auditing one dialogue reads only that dialogue and a little state
that earlier dialogues left in the engine: every dialogue *registers* the originals its spans name
(completed, under their agreed label), and later dialogues are swept for them and never get one as
a surrogate. A part that starts at dialogue *k* therefore needs exactly what dialogues 0..k-1
registered, and that is cheap to compute: :func:`registrations` runs only the engine's span choice
over the corpus (no surrogate, no sweep, no audit), once, in order.

So a release is built in three steps:

1. a first pass spills each dialogue with its spans into files of a few hundred dialogues
   (:class:`SpillFiles`, :func:`dialogue_record`) and collects the corpus's originals
   (:func:`~pipeline.surrogates.batch.collect_spans`); then :func:`registrations` reads the
   files once;
2. each file is a part: :class:`PartEngines` gives the engine as it stood before the part's first
   dialogue (the corpus's originals and what the dialogues before registered), and :func:`~pipeline.surrogates.batch.write_release` writes the part's release,
   mapping rows and candidates, with its leak check, utility counts and audit; :func:`part_state`
   is what the part hands on;
3. the parts' files joined in order and their states merged (:func:`merge_states`) are the release
   one pass writes, byte for byte, with the same reports.

Under ``scope="corpus"`` one surrogate table runs through the whole corpus (a student keeps one
pseudonym everywhere), so each surrogate depends on every dialogue before it: such a release is
not cut into parts (:func:`can_split`).
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pipeline.surrogates.engine import Deidentifier
from pipeline.surrogates.leaks import LeakChecker, LeakReport
from pipeline.surrogates.utility import UtilityReport
from pipeline.types import Dialogue, Message, Span

Record = tuple[Dialogue, list[list[Span]]]


def can_split(deid: Deidentifier) -> bool:
    """Whether a release with this engine can be built in parts (see the module's docstring)."""
    return deid.scope_kind != "corpus" or deid.mode != "surrogate"


# --------------------------------------------------------------------------- the spilled corpus


def dialogue_obj(d: Dialogue) -> dict[str, Any]:
    """Every field of a dialogue (its messages' roles, indices, spans with scores, meta), as JSON."""
    return {"id": d.id, "anchor": d.anchor, "meta": dict(d.meta), "messages": [
        {"text": m.text, "speaker": m.speaker, "role": m.role, "index": m.index, "ts": m.ts, "meta": dict(m.meta),
         "spans": [[s.start, s.end, s.label, s.score, s.source] for s in m.spans]} for m in d.messages]}


def dialogue_from_obj(obj: dict[str, Any]) -> Dialogue:
    messages = tuple(Message(text=m["text"], speaker=m["speaker"], role=m["role"], index=m["index"], ts=m["ts"],
                             meta=m["meta"], spans=tuple(Span(*s) for s in m["spans"])) for m in obj["messages"])
    return Dialogue(id=obj["id"], messages=messages, anchor=obj["anchor"], meta=obj["meta"])


def dialogue_record(dialogue: Dialogue, spans: Sequence[Sequence[Span]]) -> dict[str, Any]:
    """One dialogue of the first pass with the spans the release replaces (start, end, label: what
    the one-pass release reads back from its spill), as JSON."""
    return {"dialogue": dialogue_obj(dialogue), "spans": [[[s.start, s.end, s.label] for s in ss] for ss in spans]}


def read_records(lines: Iterable[str]) -> Iterator[Record]:
    """The dialogues and spans of a :class:`SpillFiles` file."""
    for line in lines:
        obj = json.loads(line)
        yield dialogue_from_obj(obj["dialogue"]), [[Span(a, b, lab) for a, b, lab in row] for row in obj["spans"]]


def read_file(path: Path) -> Iterator[Record]:
    with open(path, encoding="utf-8", newline="\n") as fh:
        yield from read_records(line for line in fh.read().split("\n") if line)  # not splitlines: U+2028 is text


@dataclass
class SpilledChunk:
    """One file of a :class:`SpillFiles`: its name, its dialogues' ids in order, their messages."""

    name: str
    dialogue_ids: list[str] = field(default_factory=list)
    messages: int = 0


class SpillFiles:
    """JSON lines, one per dialogue, in files of ``size`` dialogues under ``folder``
    (``PREFIX00000.jsonl``, ``PREFIX00001.jsonl``, …), listed in :attr:`chunks`."""

    def __init__(self, folder: Path, size: int, prefix: str = "") -> None:
        self.folder, self.size, self.prefix = Path(folder), max(1, size), prefix
        self.chunks: list[SpilledChunk] = []
        self._fh: IO[str] | None = None

    def add(self, dialogue_id: str, messages: int, obj: dict[str, Any]) -> None:
        if self._fh is None or len(self.chunks[-1].dialogue_ids) >= self.size:
            self._fh = self._next_file()
        self._fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
        self.chunks[-1].dialogue_ids.append(dialogue_id)
        self.chunks[-1].messages += messages

    def _next_file(self) -> IO[str]:
        self.close()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.chunks.append(SpilledChunk(f"{self.prefix}{len(self.chunks):05d}.jsonl"))
        return open(self.folder / self.chunks[-1].name, "w", encoding="utf-8", newline="\n")  # noqa: SIM115

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def records(self) -> Iterator[Record]:
        """Every spilled dialogue with its spans, in order (once the files are closed)."""
        for chunk in self.chunks:
            yield from read_file(self.folder / chunk.name)


# --------------------------------------------------------------------------- the engine of a part


def registrations(deid: Deidentifier, records: Iterable[Record],
                  known: Collection[tuple[str, str]] = ()) -> list[list[Any]]:
    """``[dialogue position, label, text]`` for each original the dialogues register, the first
    time one does, in order, but for those ``known`` already (the first pass's, which ``deid``
    was built with: registering one again changes nothing): a part starting at dialogue *k*
    registers those before *k*."""
    out: list[list[Any]] = []
    seen: set[tuple[str, str]] = set(known)
    for position, (dialogue, spans) in enumerate(records):
        for label, text in deid.registered(dialogue, spans):
            if (label, text) not in seen:
                seen.add((label, text))
                out.append([position, label, text])
    return out


def registered_between(registered: list[list[Any]], start: int, end: int) -> Iterator[tuple[str, str]]:
    """What the dialogues at positions ``start`` to ``end`` (excluded) registered, in order."""
    positions = [p for p, _, _ in registered]
    lo, hi = bisect.bisect_left(positions, start), bisect.bisect_left(positions, end)
    return ((label, text) for _, label, text in registered[lo:hi])


class PartEngines:
    """One release's engine and leak index, kept between the parts one process builds.

    Built afresh they take about 3 s at a million messages (86,000 originals), as long as a
    part's own work. A part's engine, once it has de-identified its dialogues, stands where the
    next part's must start but for what the parts between registered (each dialogue registers
    the same originals as :func:`registrations` lists, in the same order, and registering one
    again changes nothing), so a process that takes a later part of the same release goes on
    with it; an earlier part, another release, or a part that failed half-way (its engine is not
    handed back) builds a new one."""

    def __init__(self) -> None:
        self._key: str | None = None
        self._engine: Deidentifier | None = None
        self._position = 0
        self._index: Any = None

    def forget(self) -> None:
        """Let go of the release's engine and index (its last part is built)."""
        self._key, self._engine, self._position, self._index = None, None, 0, None

    def _for(self, key: str) -> None:
        if self._key != key:
            self._key, self._engine, self._position, self._index = key, None, 0, None

    def checker(self, key: str, originals: Iterable[tuple[str, str]]) -> LeakChecker:
        """A leak checker of release ``key`` with a report of its own."""
        self._for(key)
        if self._index is None:
            self._index = LeakChecker(sorted(originals)).index
        return LeakChecker.over(self._index)

    def take(self, key: str, build: Callable[[], Deidentifier], registered: list[list[Any]],
             position: int) -> Deidentifier:
        """The engine of release ``key`` as it stood before the dialogue at ``position``."""
        self._for(key)
        engine, start, self._engine = self._engine, self._position, None
        if engine is None or position < start:
            engine, start = build(), 0
        engine.register(registered_between(registered, start, position))
        engine.fallbacks = dict.fromkeys(engine.fallbacks, 0)  # counted per part
        return engine

    def give_back(self, key: str, engine: Deidentifier, position: int) -> None:
        """``engine`` de-identified every dialogue before ``position``: a later part may go on with it."""
        if self._key == key:
            self._engine, self._position = engine, position


# --------------------------------------------------------------------------- what a part hands on


def part_state(deid: Deidentifier, checker: LeakChecker, utility: UtilityReport) -> dict[str, Any]:
    """What a part's pass found beside its files, as JSON: its leak check (with the strings found:
    private), its utility counts and the engine's fallbacks."""
    return {"leaks": checker.report.state(), "utility": utility.state(), "fallbacks": dict(deid.fallbacks)}


@dataclass
class Merged:
    """The parts' states merged in order: the reports of the whole release."""

    leaks: LeakReport = field(default_factory=LeakReport)
    utility: UtilityReport = field(default_factory=UtilityReport)
    fallbacks: dict[str, int] = field(default_factory=dict)


def merge_states(states: Iterable[dict[str, Any]], scratch: Path | None = None) -> Merged:
    """``states`` of consecutive parts, in order, merged into the reports of the whole release
    (``scratch``: where its utility report may spill the text's words)."""
    merged = Merged(utility=UtilityReport(scratch=scratch))
    for state in states:
        merged.leaks.merge(state["leaks"])
        merged.utility.merge(state["utility"])
        for name, n in state["fallbacks"].items():
            merged.fallbacks[name] = merged.fallbacks.get(name, 0) + n
    return merged
