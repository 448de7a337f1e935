"""Applying a dialogue's surrogate table: each span's text replaced by its original's replacement,
with the case, the surrounding spaces and a possessive kept, and the released spans, the
replacements and the mapping rows recorded. Pure: the choices were all made in the table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pipeline.surrogates.keyed import apply_case, case_pattern, normalize
from pipeline.surrogates.results import DeidResult, MappingEntry, Replacement, tag_for
from pipeline.surrogates.sweep import base_of
from pipeline.types import Dialogue, Span


def apply_table(
    dialogue: Dialogue,
    chosen: list[list[Span]],
    items: Mapping[str, tuple[str, str]],
    table: Mapping[str, tuple[str, str, str]],
    swept: set[tuple[int, int, int]],
    anchor_spans: list[Span],
) -> DeidResult:
    """The release of ``dialogue``: its messages' ``chosen`` spans and the anchor's replaced through
    ``table`` (``swept``: the ranges found by the sweep, not given as spans), and a mapping row for
    every original of ``items`` the table replaced."""
    replacements: list[Replacement] = []
    messages = []
    for msg, ss in zip(dialogue.messages, chosen, strict=True):
        edits = [(s.start, s.end, s.label, (msg.index, s.start, s.end) in swept) for s in ss]
        text, new_spans, reps = rewrite(msg.text, msg.index, edits, table)
        replacements.extend(reps)
        messages.append(replace(msg, text=text, spans=tuple(new_spans)))
    anchor = dialogue.anchor
    if anchor and anchor_spans:
        edits = [(s.start, s.end, s.label, True) for s in anchor_spans]
        anchor, _, reps = rewrite(anchor, -1, edits, table)
        replacements.extend(reps)
    mapping = [
        MappingEntry(dialogue.id, table[n][0], items[n][1], table[n][1], table[n][2])
        for n in items
        if n in table
    ]
    release = replace(dialogue, messages=tuple(messages), anchor=anchor)
    return DeidResult(dialogue, release, replacements, mapping)

def rewrite(
    text: str,
    index: int,
    edits: list[tuple[int, int, str, bool]],
    table: Mapping[str, tuple[str, str, str]],
) -> tuple[str, list[Span], list[Replacement]]:
    """``text`` with each edit ``(start, end, label, propagated)`` replaced (an edit that overlaps
    the one before is skipped), its new spans and its replacements. An original missing from the
    table becomes its tag, never itself."""
    out: list[str] = []
    spans: list[Span] = []
    reps: list[Replacement] = []
    pos = 0
    length = 0
    for start, end, label, propagated in edits:
        if start < pos:
            continue
        out.append(text[pos:start])
        length += start - pos
        raw = text[start:end]
        lead = len(raw) - len(raw.lstrip())
        trail = len(raw) - len(raw.rstrip())
        core = raw.strip()
        base = base_of(label, core)
        suffix = core[len(base) :]
        hit = table.get(normalize(base))
        if hit is None:  # cannot happen for spans; guard against the original ever leaking
            hit = (label, tag_for(label), "tag")
        sur_label, sur, method = hit
        if method in ("llm", "offline"):
            pattern = case_pattern(base)
            if pattern in ("lower", "upper", "title") and case_pattern(sur) != pattern:
                sur = apply_case(sur, pattern)
            if suffix in ("'", "’") and not sur.lower().endswith("s"):
                suffix += "s"
        rep = raw[:lead] + sur + suffix + (raw[len(raw) - trail :] if trail else "")
        new_start = length + lead
        new_end = new_start + len(sur) + len(suffix)
        out.append(rep)
        length += len(rep)
        spans.append(Span(new_start, new_end, label))
        reps.append(
            Replacement(
                index, start + lead, end - trail, label, new_start, new_end, method, propagated
            )
        )
        pos = end
    out.append(text[pos:])
    return "".join(out), spans, reps
