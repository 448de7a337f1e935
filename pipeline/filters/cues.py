"""Cue filters: does the text around a candidate mark it as somebody's personal detail?"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.filters import register
from pipeline.maths import has_pii_cue

# One age question for the rules (a reply right after it is an age) and the tagger's post-filter
# (a bare number after it is not a maths answer): the union of the two patterns they used to keep
# apart ("how old r u", "your age", "you turn", "your birthday", "when were you born").
AGE_QUESTION_RE = re.compile(
    r"\bhow\s+old\s+(?:are|r)\s+(?:you|u)\b|\b(?:your|ur)\s+age\b"
    r"|\b(?:how old are (?:you|u)|your age|ur age|(?:you|u) turn|(?:your|ur) (?:birthday|bday)|"
    r"when were (?:you|u) born)",
    re.IGNORECASE,
)
AGE_UNIT_RE = re.compile(r"\s*-?\s*(?:years?|yrs?|y/?o|months?)\b", re.IGNORECASE)
_AGE_CUE_BEFORE = re.compile(
    r"\b(?:i'?m|i’m|im|i am|(?:he|she)(?:'s|’s| is)|turn(?:s|ed|ing)?)"
    r"\s+(?:only\s+|just\s+|almost\s+|nearly\s+)?$",
    re.IGNORECASE,
)
_AGE_WORDS = re.compile(r"\b(?:old|age[ds]?|birthday|b-?day|born)\b", re.IGNORECASE)

register("cue.pii", "1")(has_pii_cue)


@register("cue.asks_age", "1")
def asks_age(text: str) -> bool:
    """Does ``text`` ask somebody's age (or birthday)?"""
    return bool(AGE_QUESTION_RE.search(text))


@register("cue.asks_for_pii", "1")
def asks_for_pii(before: Sequence[str]) -> bool:
    """One of the messages before asks for a personal detail (phone, id, age, birthday …)."""
    return any(
        has_pii_cue(t, len(t), len(t), window=len(t)) or asks_age(t) for t in before if t
    )


@register("cue.age_evidence", "1")
def has_age_evidence(text: str, start: int, end: int, previous: Sequence[str] = ()) -> bool:
    """Does anything mark the number ``text[start:end]`` as somebody's age?"""
    return bool(
        _AGE_CUE_BEFORE.search(text[max(0, start - 24) : start])
        or AGE_UNIT_RE.match(text, end)
        or _AGE_WORDS.search(text)
        or any(asks_age(t) for t in previous if t)
    )


ID_LABELS = frozenset({"ID_NUMBER", "OTHER_IDENTIFIER"})
MIN_ID_CHARACTERS = 4  # three letters or digits tell apart at most 46,656 people
# the shortest subscriber numbers in use have seven digits (North America, most of Europe's local
# numbers); a "phone" of two or three digits is a quantity ("it's 504, not 503")
MIN_PHONE_DIGITS = 7


@register("cue.short_id", "2")  # 2: phones of fewer than seven digits too
def is_short_uncued_id(text: str, start: int, end: int, label: str) -> bool:
    """An identifier of fewer than four letters and digits, or a phone number of fewer than seven
    digits, with no PII cue before it ("The two lengths are 37and52", "the center guide tells
    you E54", "Because it's 504, not 503") is a reference or a quantity, not someone's id or
    number; "my student id is 58" keeps its cue and its span."""
    piece = text[start:end]
    if label in ID_LABELS:
        short = sum(ch.isalnum() for ch in piece) < MIN_ID_CHARACTERS
    elif label == "PHONE":
        short = sum(ch.isdigit() for ch in piece) < MIN_PHONE_DIGITS
    else:
        return False
    return short and not has_pii_cue(text, start, end)
