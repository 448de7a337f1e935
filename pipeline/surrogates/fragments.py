"""Fragments of originals: the parts of a marked value that can identify on their own.

Gold marks "Maria Lopez"; the next message says "Maria's dog", another dialogue "see you tomorrow
Lopez". The sweep looks for whole originals only, so both parts stayed. Every original is
therefore registered with its parts (rule version :data:`FRAGMENT_RULES`):

- a NAME's words: given name and surname of a full name, the surname of a titled one
  ("Ms. Okafor" → "Okafor"), each piece of a hyphenated one; not initials, not one-letter words;
  possessives are matched through the word boundary ("Maria's" holds "Maria");
- the digit groups of a PHONE or ID_NUMBER of at least four digits ("7788" of "(555) 201-7788").

Name parts are looked for in the whole release (a surname travels between dialogues), digit
groups only in the dialogue of their original (four digits elsewhere are somebody's sum). A part
that is a common word ("Will", "May", "Rose", "Page": :func:`pipeline.surrogates.scanner.is_common_word`)
is never replaced silently: it becomes a review candidate (reason ``fragment``).

A safe part is replaced by the matching part of the same surrogate: names are drawn part by
part in the release's consistency scope, so "Maria Lopez" → "Ana Ruiz" makes "Maria" → "Ana" and
"Lopez" → "Ruiz" wherever that scope reaches (the whole corpus with ``scope="corpus"``; with the
default dialogue scope another dialogue's "Lopez" gets that dialogue's own surname, as a marked
"Lopez" would: dialogue scope exists so that two dialogues cannot be linked by a shared
surrogate). A digit group takes the group in the same place of its original's surrogate, which
keeps the original's shape.
"""

from __future__ import annotations

import re

from pipeline.surrogates.keyed import normalize
from pipeline.surrogates.names import TITLE_RE
from pipeline.surrogates.scanner import is_common_word

FRAGMENT_RULES = "fragments-2"  # 2: case, accents and apostrophes folded ("José" / "jose" / "JOSÉ")
DIGIT_GROUP_LABELS = frozenset({"PHONE", "ID_NUMBER"})
MIN_GROUP_DIGITS = 4
_SUFFIX_RE = re.compile(r",?\s+(?:jr\.?|sr\.?|ii|iii|iv)$", re.IGNORECASE)
_PIECE_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_DIGITS_RE = re.compile(r"\d+")


def name_parts(original: str) -> list[str]:
    """The words of a NAME that could identify alone (none for a one-word name: it is whole)."""
    text = original.strip()
    m = TITLE_RE.match(text + " ")
    titled = bool(m and m.end() < len(text))
    if titled:
        text = text[m.end() :]
    text = _SUFFIX_RE.sub("", text)
    pieces = [p for p in _PIECE_RE.findall(text) if len(p) >= 2]
    if len(pieces) < 2 and not titled:
        return []
    return pieces


def digit_groups(label: str, original: str) -> list[tuple[int, str]]:
    """``(position, group)`` of the digit groups of a structured identifier worth looking for."""
    if label not in DIGIT_GROUP_LABELS:
        return []
    groups = _DIGITS_RE.findall(original)
    if len(groups) < 2:
        return []
    return [(k, g) for k, g in enumerate(groups) if len(g) >= MIN_GROUP_DIGITS]


def matching_group(original: str, surrogate: str, position: int) -> str | None:
    """The digit group in ``position`` of ``surrogate`` when it has the original's shape."""
    a, b = _DIGITS_RE.findall(original), _DIGITS_RE.findall(surrogate)
    if len(a) != len(b) or position >= len(b) or len(a[position]) != len(b[position]):
        return None
    return b[position]


def unsafe_part(part: str) -> bool:
    """A part that is an ordinary word too: replacing it everywhere would rewrite ordinary text."""
    return is_common_word(normalize(part))
