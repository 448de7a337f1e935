"""The maths is untouched: a bare number is replaced only where something says it is personal.

"The total number of old records that the 5 people brought in is 14." went out as "… is 18." when
a span (AGE) covered "14": a surrogate changed the answer of a maths problem. In maths talk every
number is teaching content until the text says otherwise, so a span whose text is a bare number
(digits and number punctuation only: "14", "2012", "12/05", "555-2017") is replaced only when its
message carries a **cue for its label** (rule version :data:`NUMBER_RULES`):

- an age (AGE): an age or birthday statement the rules detector would find ("I'm 14"), an age
  word near it ("age", "years old", "turned", "how old") or someone said to be it ("my sister
  Courtney is 4", "he is 6", a marked name and "is 12"); in maths (where word problems say "Sam is
  12 years old") only what somebody says of themselves;
- a date (DATE, DATE_OF_BIRTH): a whole date's shape ("03/14/2012", "2012-03-14"), a birthday
  statement, or a birthday word near it ("my bday is 12/19"; in maths only said of oneself);
- a phone (PHONE): a phone number's shape ("555-201-7788", "(555) 201 7788", "1-810-833-5127";
  ten digits in a row only outside maths) or a phone word ("call the center at …");
- an id (ID_NUMBER, USERNAME, OTHER_IDENTIFIER): an id's shape ("123-45-6789", "35-14-27", eight
  digits or more outside maths) or an id word ("bus pass number", "student #", "locker combo");
- any of these: a PII cue word that introduces it ("my id"), or a short reply to a question
  with such a word ("what's your student id?" "176808").

Otherwise it is kept as it is and becomes a review candidate: ``word_problem_number`` when the same
number is in the dialogue's word problem (its anchor), ``maths_number`` when its message or a
neighbour is maths-dense (the ``math_segments`` density reaches that detector's anchor threshold),
``uncued_number`` elsewhere. A person confirms it (it is replaced on the next build) or dismisses
it (it stays, unasked).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.detectors.rules_personal import FIRST_PERSON_RE, find_ages, find_birthdays
from pipeline.detectors.segments import math_density
from pipeline.maths import has_pii_cue
from pipeline.types import Dialogue, Span

NUMBER_RULES = "numbers-2"  # 2: a bare number is replaced only with a cue for its label
T_DENSE = 0.3  # MathSegmentDetector's default t_anchor
_BARE_RE = re.compile(r"\d+(?:[.,:/-]\d+)*")
_NUMBER_TOKEN_RE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w]|[.,]\d)")
_SEP_RE = re.compile(r"[\s.()/-]")


def _cues(words: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![a-z])(?:{words})(?![a-z])", re.IGNORECASE)


# What says a number is personal data of one kind: its words near it (or in the question it
# answers), and its shape. "number" alone is no cue: maths says "the number of apples is 14".
_KIND_CUES = {
    "age": _cues(r"age[sd]?|years?\s*old|yrs?\s*old|y/?o|turn(?:s|ed|ing)?|b(?:irth)?\s*-?day|birtdhay|born"
                 r"|how\s+old|grade"),
    "date": _cues(r"b(?:irth)?\s*-?day|birtdhay|born|dob|d\.o\.b|date\s+of\s+birth|birth\s*date|party"
                  r"|anniversary|appointment|due|deadline"),
    "phone": _cues(r"call(?:ed|ing)?|text(?:ed)?|phone|cell|mobile|tel|fax|whatsapp|reach|contact|ring|dial"
                   r"|number\s+is\s+my"),
    "id": _cues(r"id|i\.d\.?|ids|code|combo|combination|pin|pass(?:word|code)?|account|acct|badge|locker|ssn"
                r"|serial|ticket|licen[cs]e|registration|member(?:ship)?|card|library|roll|case|username|login"
                r"|(?:student|bus|house|room)\s*(?:#|number|numbr|num|no\.?)|#"),
}
_KIND_OF = {"AGE": "age", "DATE": "date", "DATE_OF_BIRTH": "date", "PHONE": "phone", "ID_NUMBER": "id",
            "USERNAME": "id", "OTHER_IDENTIFIER": "id"}
# someone else's age: "my sister Courtney is 4", "he is 6", "my cousin Adam is 14"
_KIN_AGE_RE = re.compile(r"\b(?:he|she|they|brother|sister|sis|bro|cousin|mom|mum|dad|mother|father|son|daughter"
                         r"|friend|grandma|grandpa|aunt|uncle|baby|twin)\b[^.?!\d]{0,25}\b(?:is|'s|are|was)\s*$",
                         re.IGNORECASE)
_SHAPES = {
    "date": re.compile(r"\d{1,2}[/.-]\d{1,2}[/.-](?:\d{2}|\d{4})|\d{4}-\d{1,2}-\d{1,2}"),
    "phone": re.compile(r"(?:\+?1[\s.-]?)?\(?\d{3}\)?[\s.-]?\d{3}[\s.-]?\d{4}|\d{3}[\s.-]\d{4}"),
    "id": re.compile(r"\d{3}-\d{2}-\d{4}|\d{8,}|\d+(?:-\d+){2,}"),
}
_NAME_IS_RE = re.compile(r"(?:'s)?\s+(?:is|was|turned|turns|will\s+be)\s+", re.IGNORECASE)
_ASKS_RE = re.compile(r"\?|\b(?:your|ur|need|send|give|tell|what)\b", re.IGNORECASE)
_MIN_ID_DIGITS = 4  # a phone or an id has at least this many digits
_BEFORE, _AFTER = 40, 25  # characters around a number where its cue counts
_SHORT_REPLY = 14  # words: a reply this short answers the question before it


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

    def reason(self, i: int, span: Span, beside: Sequence[Span] = ()) -> str | None:
        """``word_problem_number``, ``maths_number``, ``uncued_number`` or ``None`` (replace it)
        for message ``i``'s span; ``beside`` are the message's other spans (a name before "is 12"
        makes the 12 an age)."""
        text = self.dialogue.messages[i].text
        value = text[span.start : span.end].strip()
        if not is_bare_number(value) or self._cued(i, span, value) or self._named_age(i, span, beside):
            return None
        if value in self.problem_numbers:
            return "word_problem_number"
        return "maths_number" if self._dense(i) else "uncued_number"

    def _cued(self, i: int, span: Span, value: str) -> bool:
        """Does the message (or the question it answers) say the number is personal data of the
        span's kind: a cue word near it, its kind's shape, an age or birthday statement?"""
        text = self.dialogue.messages[i].text
        kind = _KIND_OF.get(span.label)
        if kind is None:
            return False
        if kind in ("id", "phone") and sum(c.isdigit() for c in value) >= _MIN_ID_DIGITS \
                and has_pii_cue(text, span.start, span.end):
            return True  # "student id 4815", not "my new number is 8" (a long division)
        if self._shaped(i, kind, value) or self._said(text, span, kind, maths=self._dense(i)):
            return True
        prev = self.dialogue.messages[i - 1].text if i else ""
        if prev and len(text.split()) <= _SHORT_REPLY and _ASKS_RE.search(prev) and _KIND_CUES[kind].search(prev):
            return True  # "what's your locker combo?" "35-14-27"; "I need your student id" "67255273"
        if kind not in ("age", "date"):
            return False
        stated: Sequence[tuple] = [*find_ages(text, prev), *find_birthdays(text, prev)]
        if any(s < span.end and span.start < e for s, e, *_ in stated):
            return True
        return value in {prev[s:e] for s, e, *_ in (*find_ages(prev), *find_birthdays(prev))}  # said again

    @staticmethod
    def _said(text: str, span: Span, kind: str, *, maths: bool) -> bool:
        """A word of the number's kind near it, or someone said to be it ("my sister Courtney is
        4"). Word problems talk of ages and birthdays too ("Sam is 12 years old"): in maths, an
        age or a date counts only when somebody says it of themselves ("my bday is 12/19")."""
        before = text[max(0, span.start - _BEFORE) : span.start]
        near = before + " " + text[span.end : span.end + _AFTER]
        if kind in ("age", "date") and maths and not FIRST_PERSON_RE.search(near):
            return False
        return bool(_KIND_CUES[kind].search(near)) or (kind == "age" and _KIN_AGE_RE.search(before) is not None)

    def _named_age(self, i: int, span: Span, beside: Sequence[Span]) -> bool:
        """An AGE right after a marked name and "is" ("fred is 12", "Maria turned 9"), outside maths."""
        if span.label != "AGE" or self._dense(i):
            return False
        text = self.dialogue.messages[i].text
        return any(s.label == "NAME" and s.end <= span.start and _NAME_IS_RE.fullmatch(text[s.end : span.start])
                   for s in beside)

    def _shaped(self, i: int, kind: str, value: str) -> bool:
        """Has the number its kind's shape? A run of digits without separators counts only
        outside maths: "divide 4815162342 by 2" is a division."""
        shape = _SHAPES.get(kind)
        if shape is None or not shape.fullmatch(value):
            return False
        return bool(_SEP_RE.search(value)) or not self._dense(i)
