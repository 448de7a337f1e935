"""The maths is untouched: a bare number is replaced only where it is plainly not teaching content.

"The total number of old records that the 5 people brought in is 14." went out as "… is 18." when
a span (AGE) covered "14": a surrogate changed the answer of a maths problem. A span whose text is
a bare number (digits and number punctuation only: "14", "2012", "12/05") is therefore kept as
it is and becomes a review candidate when

- the same number appears in the dialogue's word problem (its anchor text): reason
  ``word_problem_number``;
- or its message lies in a maths-dense stretch (its own or a neighbour's maths density, the
  ``math_segments`` detector's measure, reaches that detector's anchor threshold) and nothing
  introduces the number as personal data (no PII cue such as "my id", no age or birthday
  statement the rules detector would find: "I'm 14", "14 years old"): reason ``maths_number``.

A person confirms it (it is replaced on the next build) or dismisses it (it stays, unasked).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.detectors.rules_personal import find_ages, find_birthdays
from pipeline.detectors.segments import math_density
from pipeline.maths import has_pii_cue
from pipeline.types import Dialogue, Span

NUMBER_RULES = "numbers-1"
T_DENSE = 0.3  # MathSegmentDetector's default t_anchor
_BARE_RE = re.compile(r"\d+(?:[.,:/-]\d+)*")
_NUMBER_TOKEN_RE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w]|[.,]\d)")


def is_bare_number(text: str) -> bool:
    return bool(_BARE_RE.fullmatch(text.strip()))


class NumberGuard:
    """Decides, for one dialogue, which bare-number spans are teaching content to keep."""

    def __init__(self, dialogue: Dialogue) -> None:
        self.dialogue = dialogue
        self._density: list[float] | None = None
        self.problem_numbers = {m.group() for m in _NUMBER_TOKEN_RE.finditer(dialogue.anchor or "")}

    def _dense(self, i: int) -> bool:
        if self._density is None:
            self._density = [math_density(m.text) for m in self.dialogue.messages]
        lo, hi = max(0, i - 1), min(len(self._density), i + 2)
        return max(self._density[lo:hi]) >= T_DENSE

    def reason(self, i: int, span: Span) -> str | None:
        """``word_problem_number``, ``maths_number`` or ``None`` (replace it) for message ``i``'s span."""
        text = self.dialogue.messages[i].text
        value = text[span.start : span.end].strip()
        if not is_bare_number(value):
            return None
        if value in self.problem_numbers:
            return "word_problem_number"
        if not self._dense(i) or self._introduced(i, span):
            return None
        return "maths_number"

    def _introduced(self, i: int, span: Span) -> bool:
        """Is the number said to be personal data (a cue, an age or birthday statement)?"""
        text = self.dialogue.messages[i].text
        if has_pii_cue(text, span.start, span.end):
            return True
        prev = self.dialogue.messages[i - 1].text if i else ""
        stated: Sequence[tuple] = [*find_ages(text, prev), *find_birthdays(text, prev)]
        return any(s < span.end and span.start < e for s, e, *_ in stated)
