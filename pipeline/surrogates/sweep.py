"""The self-audit on the way into a release: what the marked spans missed, found before writing.

A release certifies only what something marked unless it looks further. These phases run on one
dialogue's chosen spans, in order, for :class:`~pipeline.surrogates.engine.Deidentifier`: grow
structured spans to their whole value (:func:`complete_spans`), give bare teaching numbers back
(:func:`drop_maths_numbers`), add the unspanned occurrences of an original (:func:`sweep_originals`),
the unmarked parts of names (:func:`fragment_spans`) and the digit groups of phones and ids
(:func:`digit_group_spans`). What they are unsure of becomes a :class:`Candidate` for review.
They are plain functions of their inputs so the engine keeps only the order and the bookkeeping.

``items`` is the dialogue's originals, ``norm -> (label, original)`` in order of appearance;
``chosen`` holds one span list per message and is updated in place; ``swept`` records the
``(message index, start, end)`` of every span added here, so the release can say it was propagated.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from pipeline.maths import math_expression_spans
from pipeline.surrogates.candidates import Candidate, candidate_key
from pipeline.surrogates.completion import complete_span
from pipeline.surrogates.fragments import digit_groups, matching_group, name_parts, unsafe_part
from pipeline.surrogates.keyed import normalize, strip_possessive
from pipeline.surrogates.numbers import NumberGuard
from pipeline.surrogates.scanner import OriginalIndex
from pipeline.types import Dialogue, Span

Items = dict[str, tuple[str, str]]
Swept = set[tuple[int, int, int]]

_POSSESSIVE_LABELS = frozenset({"NAME", "SCHOOL", "LOCATION", "OTHER_IDENTIFIER"})


def base_of(label: str, text: str) -> str:
    """The original a span stands for: stripped, and without a possessive for names and places."""
    text = text.strip()
    if label in _POSSESSIVE_LABELS:
        return strip_possessive(text)[0]
    return text


def collect(items: Items, texts: Sequence[tuple[str, Sequence[Span]]]) -> None:
    """Add each span's original to ``items`` (first label wins)."""
    for text, ss in texts:
        for s in ss:
            base = base_of(s.label, text[s.start : s.end])
            items.setdefault(normalize(base), (s.label, base))


def collect_messages(items: Items, dialogue: Dialogue, chosen: Sequence[Sequence[Span]]) -> None:
    collect(items, [(m.text, ss) for m, ss in zip(dialogue.messages, chosen, strict=True)])


def unspanned_hits(index: OriginalIndex, text: str, spans: Sequence[Span]) -> list[Span]:
    """Unspanned originals in ``text``, except inside maths (left for the leak report)."""
    out: list[Span] = []
    found = index.scan(text)
    if not found:
        return out
    maths = math_expression_spans(text)
    for f in found:
        if any(f.start < s.end and s.start < f.end for s in (*spans, *out)):
            continue
        if any(f.start < e and s < f.end for s, e in maths):
            continue
        out.append(Span(f.start, f.end, f.original.label, source="sweep"))
    return out


def candidate_at(dialogue: Dialogue, index: int, text: str, span: Span, reason: str, source: str) -> Candidate:
    return Candidate(dialogue.id, index, span.start, span.end, span.label, reason,
                     text[span.start : span.end], source)


def complete_spans(dialogue: Dialogue, index: int, text: str, spans: list[Span], *, region: str | None,
                   candidates: list[Candidate]) -> list[Span]:
    """Grow structured spans to their whole value; report the ones that still cut one."""
    out = []
    for s in spans:
        grown, complete = complete_span(text, s, region=region)
        if not complete:
            candidates.append(candidate_at(dialogue, index, text, grown, "incomplete", "completion"))
        out.append(grown)
    return out


def drop_maths_numbers(dialogue: Dialogue, chosen: list[list[Span]], *, confirmed: Collection[str],
                       candidates: list[Candidate]) -> None:
    """Drop the bare-number spans that are teaching content (unless confirmed), as candidates."""
    guard = NumberGuard(dialogue)
    for i, msg in enumerate(dialogue.messages):
        keep = []
        for s in chosen[i]:
            value = msg.text[s.start : s.end]
            reason = guard.reason(i, s, chosen[i])
            if reason is None or candidate_key(dialogue.id, msg.index, s.start, s.end, value) in confirmed:
                keep.append(s)
            else:
                candidates.append(candidate_at(dialogue, msg.index, msg.text, s, reason, "numbers"))
        chosen[i] = keep


def sweep_originals(dialogue: Dialogue, index: OriginalIndex, chosen: list[list[Span]], items: Items,
                    swept: Swept, anchor_spans: Sequence[Span] = ()) -> list[Span]:
    """Add the unspanned occurrences of an original (the leak check's own matcher, maths left
    alone) to ``chosen``, ``swept`` and ``items``; return the anchor's new spans (beside
    ``anchor_spans``, which it already has)."""
    for i, msg in enumerate(dialogue.messages):
        extra = unspanned_hits(index, msg.text, chosen[i])
        if extra:
            swept.update((msg.index, sp.start, sp.end) for sp in extra)
            chosen[i] = sorted(chosen[i] + extra)
    found = unspanned_hits(index, dialogue.anchor, anchor_spans) if dialogue.anchor else []
    collect_messages(items, dialogue, chosen)
    collect(items, [(dialogue.anchor, [*anchor_spans, *found])])
    return found


def dialogue_name_parts(items: Items) -> OriginalIndex:
    """The parts of this dialogue's names, to look for alone ("Ms Garcia" → "Garcia")."""
    index = OriginalIndex()
    for label, text in items.values():
        for part in name_parts(text) if label == "NAME" else ():
            index.add("NAME", part)
    return index


def fragment_spans(dialogue: Dialogue, index: OriginalIndex, chosen: list[list[Span]], items: Items,
                   swept: Swept, candidates: list[Candidate], anchor_spans: list[Span]) -> list[Span]:
    """Unmarked name parts found by ``index``: safe ones added to ``chosen`` as NAME, common words
    as candidates; returns the anchor's safe ones."""
    if not len(index):
        return []
    for i, msg in enumerate(dialogue.messages):
        safe = []
        for h in unspanned_hits(index, msg.text, chosen[i]):
            part = Span(h.start, h.end, "NAME", source="fragment")
            if unsafe_part(msg.text[h.start : h.end]):
                candidates.append(candidate_at(dialogue, msg.index, msg.text, part, "fragment", "fragments"))
            else:
                safe.append(part)
        if safe:
            swept.update((msg.index, sp.start, sp.end) for sp in safe)
            chosen[i] = sorted(chosen[i] + safe)
    anchor = [Span(h.start, h.end, "NAME", source="fragment")
              for h in (unspanned_hits(index, dialogue.anchor, anchor_spans) if dialogue.anchor else [])
              if not unsafe_part(dialogue.anchor[h.start : h.end])]
    collect_messages(items, dialogue, chosen)
    collect(items, [(dialogue.anchor, anchor)])
    return anchor


def digit_group_spans(dialogue: Dialogue, chosen: list[list[Span]], items: Items,
                      swept: Swept) -> dict[str, tuple[str, int]]:
    """Unmarked digit groups of the dialogue's phones and ids, added to ``chosen`` (outside
    maths); returns ``group norm -> (its original's norm, position)`` for :func:`match_groups`."""
    groups: dict[str, tuple[str, int]] = {}
    for norm, (label, text) in list(items.items()):
        for pos, group in digit_groups(label, text):
            pattern = re.compile(rf"(?<![\d]){group}(?![\d])")
            for i, msg in enumerate(dialogue.messages):
                maths = math_expression_spans(msg.text)
                for m in pattern.finditer(msg.text):
                    s, e = m.span()
                    if any(s < b and a < e for a, b in maths) or any(
                        s < sp.end and sp.start < e for sp in chosen[i]
                    ):
                        continue
                    chosen[i] = sorted([*chosen[i], Span(s, e, label, source="fragment")])
                    swept.add((msg.index, s, e))
                    items.setdefault(normalize(group), (label, group))
                    groups.setdefault(normalize(group), (norm, pos))
    return groups


def match_groups(table: dict[str, tuple[str, str, str]], groups: Mapping[str, tuple[str, int]]) -> None:
    """A digit group takes the group in the same place of its original's surrogate."""
    for norm, (parent, pos) in groups.items():
        if norm in table and parent in table:
            label, sur, method = table[parent]
            hit = matching_group(parent, sur, pos)
            if hit is not None:
                table[norm] = (label, hit, method)
