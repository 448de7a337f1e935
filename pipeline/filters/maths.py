"""Maths filters: is a digit-bearing candidate part of the maths rather than a personal detail?"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.filters import register
from pipeline.filters.cues import AGE_UNIT_RE, asks_for_pii
from pipeline.maths import has_pii_cue, in_math_context, math_expression_spans

TEXTUAL_LABELS = frozenset({"EMAIL", "URL", "USERNAME"})
_DIGIT = re.compile(r"\d")
_FILLER = r"(?:um+|uh+|hm+|no|yes|yeah|ok|okay|so|oh|well|i|think|it|is|it's|its|it’s|the|answer|" \
    r"going|to|be|maybe|like|equals|is it|i got|got|was|=|:|,)"
_BARE_NUMBER = re.compile(
    rf"^\s*(?:{_FILLER}\s*)*[$£€]?\s*[\d.,:/%\s-]*\d[\d.,:/%\s-]*[a-zA-Z]{{0,3}}[\s.!?]*$",
    re.IGNORECASE,
)
_REFERENCE_BEFORE = re.compile(
    r"\b(?:page|pages|pg|p\.|chapter|ch\.|lesson|problem|question|exercise|section|unit|step|"
    r"slide|worksheet|level|row|column|line|box|part|grade)\s*#?\s*$",
    re.IGNORECASE,
)
_NUMBER_RUN = re.compile(r"\d+(?:\.\d+)?")
_OPERATOR = re.compile(r"[+*/×÷=^<>]|\d\s*[xX-]\s*\d")

register("maths.context", "1")(in_math_context)


@register("maths.operand", "1")
def inside_expression(text: str, start: int, end: int) -> bool:
    """Is the range an operand of maths around it (cue or not): "id 4815 / 2" is arithmetic."""
    return any(
        s <= start and end <= e and (e - s) > (end - start) + 2
        for s, e in math_expression_spans(text)
    )


@register("maths.reference", "1")
def is_reference(text: str, start: int) -> bool:
    """``page 49``, ``problem 12``, ``lesson 3``: a place in the material, not a person."""
    return bool(_REFERENCE_BEFORE.search(text[max(0, start - 16) : start]))


@register("maths.number_sequence", "1")
def is_number_sequence(piece: str) -> bool:
    """Skip counting and number patterns: four or more numbers with a constant difference
    (``40-60-80-100``, ``3, 6, 9, 12``). Phone and card numbers are not arithmetic runs."""
    nums = [float(x) for x in _NUMBER_RUN.findall(piece)]
    if len(nums) < 4:
        return False
    steps = {round(b - a, 6) for a, b in zip(nums, nums[1:], strict=False)}
    return len(steps) == 1 and 0 not in steps


@register("maths.number", "1")
def is_math_number(
    text: str, start: int, end: int, label: str, previous: Sequence[str] = ()
) -> bool:
    """Should a digit-bearing span be read as maths rather than PII?

    ``previous``: the messages just before (a bare number answers them: maths unless they asked
    for a personal detail).
    """
    if label in TEXTUAL_LABELS or not _DIGIT.search(text[start:end]):
        return False
    if is_number_sequence(text[start:end]):
        return True
    if is_reference(text, start) and not has_pii_cue(text, start, end, weak=False):
        return True
    if in_math_context(text, start, end):
        if label != "AGE" or not AGE_UNIT_RE.match(text, end):
            return True
        rest = text[:start] + " " + text[end:]
        return bool(_DIGIT.search(rest) or _OPERATOR.search(text))
    if isinstance(previous, str):
        previous = (previous,)
    return bool(
        _BARE_NUMBER.match(text)
        and not has_pii_cue(text, start, end)
        and not asks_for_pii(previous)
    )
