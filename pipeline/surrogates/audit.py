"""The release's self-audit after the fact: a second opinion on the *released* text, and the tally
of what is left for people to review.

The leak check looks only for originals that something marked, so by itself it certifies
whatever nobody marked. Once a dialogue is released, :class:`SecondOpinion` scans its released
messages, and its strings outside them (the anchor, the metadata values: each candidate there
names its ``field``), with detectors other than the release's source — the rules detector's structured
identifiers always, others (the tagger in its recall-first policy, Presidio tuned) when asked.
A hit inside a replacement is the release's own surrogate and is skipped (it counts as a
recapture for :mod:`pipeline.metrics.capture`); a hit that runs on from a replacement into
original text, or lies wholly in original text, is mapped back to original offsets (text outside
replacements is byte-identical, so offsets shift only by the replacements before it) and becomes
a candidate (reason ``second_opinion``).

:class:`ReleaseAudit` gathers these and the engine's own candidates (fragments, incomplete spans,
maths numbers), drops the ones people dismissed (their :attr:`Candidate.key`), and counts the
rest: a release is publishable only when none is pending.

The second opinion is most of a release's work, and each dialogue's audit needs nothing of the
others: :class:`AuditSpill` writes what it reads of each released dialogue to files of a few
hundred dialogues, an audit of each file can run anywhere (:func:`read_audit_inputs`), and
:meth:`ReleaseAudit.merge` adds the audits up, in order, into the audit of the whole release.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import IO, Any

from pipeline.detectors.base import batches
from pipeline.detectors.rules import RulesDetector
from pipeline.metrics.capture import CaptureTally
from pipeline.surrogates.candidates import REASONS, Candidate
from pipeline.surrogates.completion import STRUCTURED_LABELS
from pipeline.surrogates.parts import SpillFiles, dialogue_from_obj, dialogue_obj
from pipeline.surrogates.results import DeidResult, FieldText, Replacement
from pipeline.types import Detection, Dialogue, Message, Span

MAX_LISTED = 1000  # public positions listed in the summary; the private file has them all


def default_second_opinion() -> list[Any]:
    """The second opinion every release gets: the rules detector's structured identifiers."""
    return [RulesDetector({"labels": list(STRUCTURED_LABELS)})]


def _to_original(start: int, end: int, reps: Sequence[Replacement]) -> tuple[int, int]:
    """Release offsets back to original ones, widened over any replacement the range touches."""

    def shift(p: int) -> int:
        return sum((r.new_end - r.new_start) - (r.end - r.start) for r in reps if r.new_end <= p)

    o_start = next((r.start for r in reps if r.new_start <= start < r.new_end), start - shift(start))
    o_end = next((r.end for r in reps if r.new_start < end <= r.new_end), end - shift(end))
    return o_start, o_end


def _reaches_original(released: str, start: int, end: int, reps: Sequence[Replacement]) -> bool:
    """Does ``released[start:end]`` hold a letter or digit that no replacement inserted?"""
    return any(released[p].isalnum() and not any(r.new_start <= p < r.new_end for r in reps)
               for p in range(start, min(end, len(released))))


class SecondOpinion:
    """Independent detectors run on the released text of each dialogue."""

    def __init__(self, detectors: Iterable[Any] | None = None) -> None:
        self.detectors = list(default_second_opinion() if detectors is None else detectors)
        self.names = [f"{d.name}@{d.version}" for d in self.detectors]

    def check_many(self, results: Sequence[DeidResult]) -> list[tuple[list[Candidate], list[list[Span]]]]:
        """For each of consecutive released dialogues: the candidates in its original text, and each
        message's hits in original offsets (surrogate hits included, as the replacement's original
        range) for capture–recapture. Each detector reads them together (``detect_many``:
        Presidio's spaCy takes the messages of several dialogues in one batch)."""
        found = [list(det.detect_many(r.release for r in results)) for det in self.detectors]
        in_fields = self._in_fields(results)
        out = []
        for i, result in enumerate(results):
            candidates, hits = self._checked(result, [per_det[i] for per_det in found])
            out.append((candidates + in_fields[i], hits))
        return out

    def _in_fields(self, results: Sequence[DeidResult]) -> list[list[Candidate]]:
        """For each released dialogue, the candidates in its strings outside the messages (the
        anchor, the metadata values): each detector reads them as the messages of one more
        dialogue, and a hit that reaches original text is mapped back to the field's original."""
        out: list[list[Candidate]] = [[] for _ in results]
        carriers = [(k, Dialogue(id=r.original.id, messages=tuple(Message(text=f.released, index=j)
                                                                   for j, f in enumerate(r.fields))))
                    for k, r in enumerate(results) if r.fields]
        if not carriers:
            return out
        for det in self.detectors:
            for (k, _), detections in zip(carriers, det.detect_many(d for _, d in carriers), strict=True):
                result = results[k]
                for d in detections:
                    f = result.fields[d.index]
                    reps = sorted(f.replacements, key=lambda r: r.new_start)
                    for s in d.spans:
                        start, end = _to_original(s.start, s.end, reps)
                        if 0 <= start < end <= len(f.original) and _reaches_original(f.released, s.start, s.end, reps):
                            out[k].append(Candidate(result.original.id, f.index, start, end, s.label, "second_opinion",
                                                    f.original[start:end], f"{det.name}@{det.version}", field=f.field))
        return out

    def _checked(self, result: DeidResult, found: list[list[Detection]]) -> tuple[list[Candidate], list[list[Span]]]:
        """``found``: each detector's detections on ``result``'s released dialogue."""
        by_msg: dict[int, list[Replacement]] = {}
        for r in sorted(result.replacements, key=lambda r: r.new_start):
            by_msg.setdefault(r.index, []).append(r)
        originals = {m.index: m.text for m in result.original.messages}
        released = {m.index: m.text for m in result.release.messages}
        hits: list[list[Span]] = [[] for _ in result.release.messages]
        out: list[Candidate] = []
        for det, detections in zip(self.detectors, found, strict=True):
            for k, d in enumerate(detections):
                reps = by_msg.get(d.index, [])
                text = originals.get(d.index, "")
                for s in d.spans:
                    start, end = _to_original(s.start, s.end, reps)
                    if not 0 <= start < end <= len(text):
                        continue
                    hits[k].append(Span(start, end, s.label, source=det.name))
                    if _reaches_original(released.get(d.index, ""), s.start, s.end, reps):
                        out.append(Candidate(result.original.id, d.index, start, end, s.label,
                                             "second_opinion", text[start:end], f"{det.name}@{det.version}"))
        return out, hits


AUDIT_BATCH_MESSAGES = 256  # released messages the second opinion reads at once (Presidio's spaCy batches)


def in_batches(results: Iterable[DeidResult], messages: int = AUDIT_BATCH_MESSAGES) -> Iterator[list[DeidResult]]:
    """Consecutive released dialogues, a batch of about ``messages`` messages at a time (a longer
    dialogue alone), for :meth:`ReleaseAudit.check_many`."""
    return batches(results, lambda r: len(r.release.messages), max_size=messages)


class ReleaseAudit:
    """Everything a release's self-audit leaves for people, counted and (privately) written.

    ``dismissed`` holds the keys people marked "not PII", ``confirmed`` those they marked PII
    (settled: a confirmed place is replaced by the build, and an incomplete identifier someone
    confirmed as it is is not asked about again); ``out`` is the private candidates file
    (one :meth:`Candidate.to_dict` per line). ``capture`` compares the release's replaced spans
    with the second opinion's hits, on the labels the second opinion can find.
    """

    def __init__(self, *, second_opinion: SecondOpinion | None = None, dismissed: Collection[str] = (),
                 confirmed: Collection[str] = (), out: IO[str] | None = None,
                 labels: Iterable[str] = STRUCTURED_LABELS) -> None:
        self.second_opinion = second_opinion if second_opinion is not None else SecondOpinion()
        self.dismissed_keys = frozenset(dismissed)
        self.confirmed_keys = frozenset(confirmed)
        self.out = out
        self.pending: Counter = Counter()
        self.dismissed = 0
        self.confirmed = 0
        self.listed: list[dict[str, Any]] = []
        names = " + ".join(self.second_opinion.names) or "no detector"
        self.capture = CaptureTally(("the release's spans", f"second opinion ({names})"), labels=labels)

    def check_many(self, results: Sequence[DeidResult]) -> list[Candidate]:
        """The pending candidates of consecutive released dialogues, in order (written to ``out``,
        counted): the second opinion reads them together (:func:`in_batches`)."""
        pending: list[Candidate] = []
        for result, (found, hits) in zip(results, self.second_opinion.check_many(results), strict=True):
            pending.extend(self._settled(result, found, hits))
        return pending

    def _settled(self, result: DeidResult, found: list[Candidate], hits: list[list[Span]]) -> list[Candidate]:
        replaced: dict[int, list[Span]] = {}
        for r in result.replacements:
            replaced.setdefault(r.index, []).append(Span(r.start, r.end, r.label))
        for m, h in zip(result.original.messages, hits, strict=True):
            self.capture.add(replaced.get(m.index, []), h)
        pending: list[Candidate] = []
        seen: set[str] = set()
        for c in [*result.candidates, *found]:
            if c.key in seen:
                continue
            seen.add(c.key)
            if c.key in self.dismissed_keys:
                self.dismissed += 1
                continue
            if c.key in self.confirmed_keys:
                self.confirmed += 1
                continue
            pending.append(c)
        for c in pending:
            self._record(c)
        return pending

    def _record(self, c: Candidate) -> None:
        self.pending[c.reason] += 1
        if self.out is not None:
            self.out.write(json.dumps(c.to_dict(), ensure_ascii=False) + "\n")
        if len(self.listed) < MAX_LISTED:
            self.listed.append(c.public_dict())

    def counts(self) -> dict[str, Any]:
        """What this audit settled beside its pending candidates, as plain JSON (for :meth:`merge`)."""
        return {"dismissed": self.dismissed, "confirmed": self.confirmed, "capture": self.capture.counts()}

    def merge(self, counts: dict[str, Any], pending: Iterable[Candidate]) -> None:
        """Add the audit of a later slice of the release's dialogues: its :meth:`counts` and its
        pending candidates in order. Audits of consecutive slices merged in order are the audit of
        the whole release (the same counts, candidates file and listing): a release's second
        opinion can run in chunks, on other machines."""
        self.dismissed += counts["dismissed"]
        self.confirmed += counts["confirmed"]
        self.capture.merge(counts["capture"])
        for c in pending:
            self._record(c)

    @property
    def total(self) -> int:
        return sum(self.pending.values())

    def to_dict(self) -> dict[str, Any]:
        """Counts and positions only (safe in a downloadable summary)."""
        return {
            "audited": True,
            "pending": self.total,
            "by_reason": {r: self.pending[r] for r in REASONS if self.pending[r]},
            "dismissed": self.dismissed,
            "confirmed": self.confirmed,
            "second_opinion": self.second_opinion.names,
            "listed": self.listed,
            "listed_truncated": self.total > len(self.listed),
        }


def audit_input(result: DeidResult) -> dict[str, Any]:
    """What :meth:`ReleaseAudit.check` reads of one released dialogue, as JSON: the original texts,
    the released dialogue whole (a detector may read any of it), the replacements and the engine's
    candidates; not the mapping table."""
    return {"id": result.original.id,
            "original": [[m.index, m.text] for m in result.original.messages],
            "release": dialogue_obj(result.release),
            "replacements": [[r.index, r.start, r.end, r.label, r.new_start, r.new_end, r.method, r.propagated]
                             for r in result.replacements],
            "candidates": [c.to_dict() for c in result.candidates],
            "fields": [[f.field, f.index, f.original, f.released,
                        [[r.index, r.start, r.end, r.label, r.new_start, r.new_end, r.method, r.propagated]
                         for r in f.replacements]] for f in result.fields]}


def read_audit_inputs(lines: Iterable[str]) -> Iterator[DeidResult]:
    """The released dialogues an :class:`AuditSpill` file holds, as the audit sees them."""
    for line in lines:
        obj = json.loads(line)
        original = Dialogue(id=obj["id"], messages=tuple(Message(text=t, index=i) for i, t in obj["original"]))
        yield DeidResult(original=original, release=dialogue_from_obj(obj["release"]),
                         replacements=[Replacement(*r) for r in obj["replacements"]],
                         candidates=[Candidate.from_dict(c) for c in obj["candidates"]],
                         fields=[FieldText(name, index, original, released, tuple(Replacement(*r) for r in reps))
                                 for name, index, original, released, reps in obj.get("fields", ())])


class AuditSpill(SpillFiles):
    """Stands in for :class:`ReleaseAudit` in :func:`~pipeline.surrogates.batch.write_release` when
    the second opinion runs elsewhere: each released dialogue's :func:`audit_input` goes, in release
    order, to one JSONL file per ``size`` dialogues under ``folder`` (``00000.jsonl``, ``00001.jsonl``,
    …), listed in :attr:`chunks`; ``write_release`` closes the last file."""

    def check_many(self, results: Sequence[DeidResult]) -> list[Candidate]:
        for result in results:
            self.add(result.original.id, len(result.original.messages), audit_input(result))
        return []
