"""The maths is untouched: a bare number is replaced only where something says it is personal.

"The total number of old records that the 5 people brought in is 14." went out as "… is 18." when
a span (AGE) covered "14": a surrogate changed the answer of a maths problem. In maths talk every
number is teaching content until the text says otherwise, so a span whose text is a bare number
(digits and number punctuation only: "14", "2012", "12/05", "555-2017") is replaced only when its
message carries a **cue for its label** (rule version :data:`NUMBER_RULES`):

- an age (AGE): an age or birthday statement the rules detector would find ("I'm 14", "14 years
  old", "turned 9", "my birthday"), or a cue word before it ("age", "aged");
- a date (DATE, DATE_OF_BIRTH): a whole date's shape ("03/14/2012", "2012-03-14") or a birthday;
- a phone (PHONE): a phone number's shape ("555-201-7788", "(555) 201 7788", "201-7788");
- an id (ID_NUMBER, USERNAME, OTHER_IDENTIFIER): an id's shape ("123-45-6789", eight digits or more);
- any label: a PII cue word that introduces it ("my id", "student number", "call me at").

Otherwise it is kept as it is and becomes a review candidate: ``word_problem_number`` when the same
number is in the dialogue's word problem (its anchor), ``maths_number`` when its message or a
neighbour is maths-dense (the ``math_segments`` density reaches that detector's anchor threshold),
``uncued_number`` elsewhere. A person confirms it (it is replaced on the next build) or dismisses
it (it stays, unasked).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.detectors.rules_personal import find_ages, find_birthdays
from pipeline.detectors.segments import math_density
from pipeline.maths import has_pii_cue
from pipeline.types import Dialogue, Span

NUMBER_RULES = "numbers-2"  # 2: a bare number is replaced only with a cue for its label
T_DENSE = 0.3  # MathSegmentDetector's default t_anchor
_BARE_RE = re.compile(r"\d+(?:[.,:/-]\d+)*")
_NUMBER_TOKEN_RE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w]|[.,]\d)")
_DATE_SHAPE_RE = re.compile(r"\d{1,2}[/.-]\d{1,2}[/.-](?:\d{2}|\d{4})|\d{4}-\d{1,2}-\d{1,2}")
_PHONE_SHAPE_RE = re.compile(r"(?:\(?\d{3}\)?[\s.-]?)?\d{3}[\s.-]\d{4}")
_ID_SHAPE_RE = re.compile(r"\d{3}-\d{2}-\d{4}|\d{8,}")
_AGE_CUE_RE = re.compile(r"\b(?:age|aged|ages)\s*(?:is|of|:)?\s*$", re.IGNORECASE)
_SHAPES = {"DATE": _DATE_SHAPE_RE, "DATE_OF_BIRTH": _DATE_SHAPE_RE, "PHONE": _PHONE_SHAPE_RE,
           "ID_NUMBER": _ID_SHAPE_RE, "USERNAME": _ID_SHAPE_RE, "OTHER_IDENTIFIER": _ID_SHAPE_RE}


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
        """``word_problem_number``, ``maths_number``, ``uncued_number`` or ``None`` (replace it)
        for message ``i``'s span."""
        text = self.dialogue.messages[i].text
        value = text[span.start : span.end].strip()
        if not is_bare_number(value) or self._cued(i, span, value):
            return None
        if value in self.problem_numbers:
            return "word_problem_number"
        return "maths_number" if self._dense(i) else "uncued_number"

    def _cued(self, i: int, span: Span, value: str) -> bool:
        """Does the message say the number is personal data of the span's kind?"""
        text = self.dialogue.messages[i].text
        shape = _SHAPES.get(span.label)
        if shape is not None and shape.fullmatch(value):
            return True
        if has_pii_cue(text, span.start, span.end):
            return True
        if span.label == "AGE" and _AGE_CUE_RE.search(text[max(0, span.start - 12) : span.start]):
            return True
        if span.label not in ("AGE", "DATE", "DATE_OF_BIRTH"):
            return False
        prev = self.dialogue.messages[i - 1].text if i else ""
        stated: Sequence[tuple] = [*find_ages(text, prev), *find_birthdays(text, prev)]
        return any(s < span.end and span.start < e for s, e, *_ in stated)
