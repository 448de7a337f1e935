"""Placeholder filters: already-anonymised text (``Student A``, ``[STUDENT]``) is not PII."""

from __future__ import annotations

import re

from pipeline.filters import register
from pipeline.maths import is_placeholder

_PLACEHOLDER_BEFORE = re.compile(
    r"(?:student|teacher|tutor|speaker|person|parent|child|kid|pupil|learner|user|participant)"
    r"[\s_\-]?$",
    re.IGNORECASE,
)

register("placeholder.text", "1")(is_placeholder)


@register("placeholder.span", "1")
def is_placeholder_span(text: str, start: int, end: int) -> bool:
    """The span is, or sits inside, an anonymisation placeholder."""
    piece = text[start:end]
    if is_placeholder(piece):
        return True
    # "[STUDENT]" tagged without its brackets, or "A" of "Student A"
    lo = start - 1 if start > 0 and text[start - 1] in "[<{(" else start
    hi = end + 1 if end < len(text) and text[end] in "]>})" else end
    if (lo, hi) != (start, end) and is_placeholder(text[lo:hi]):
        return True
    before = text[max(0, start - 14) : start]
    m = _PLACEHOLDER_BEFORE.search(before)
    return bool(m and is_placeholder(before[m.start() :] + piece))
