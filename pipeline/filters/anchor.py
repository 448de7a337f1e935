"""Anchor filters: a name from the dialogue's word problem is a problem character, not PII."""

from __future__ import annotations

import re

from pipeline.filters import register

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def anchor_words(anchor: str) -> frozenset[str]:
    """The anchor's words, lower-cased: what :func:`is_anchor_name` looks names up in."""
    return frozenset(w.lower() for w in _WORD.findall(anchor))


@register("anchor.words", "1")
def is_anchor_name(piece: str, anchor_vocab: frozenset[str]) -> bool:
    """Every word of ``piece`` occurs in the anchor (the tagger's strict policy)."""
    words = [w.lower() for w in _WORD.findall(piece)]
    return bool(words) and all(w in anchor_vocab for w in words)


@register("anchor.phrase", "1")
def in_anchor(chunk: str, anchor_low: str) -> bool:
    """A name from the word problem ("Alex has 5 apples") is teaching content, not PII."""
    return re.search(r"\b" + re.escape(chunk.lower()) + r"\b", anchor_low) is not None
