"""Months that are nobody's date of birth: a tagger that learnt "my birthday is in June" labels a
month alone as DATE_OF_BIRTH wherever it stands, in a word problem ("In March, Tom saved $40 …")
or as an answer ("which month comes after May?" "june").

A month alone (no day, no year) tells a birthday only where something says it is one: a birth cue
(:data:`BIRTH_CUE_RE`: "birthday", "b-day", "born", "when is your …") in its message or the two
before it. A full date ("June 3, 2014") is left to the other rules, and so is a month labelled
anything else ("June" is a name too).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.filters import register

# a month's name, full or abbreviated ("March", "oct.", "Sept"): the dates the rules detector finds
# are built on it too
MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_MONTH_ALONE = re.compile(rf"(?:(?:in|of|on|during)\s+)?{MONTH}", re.IGNORECASE)
BIRTH_CUE_RE = re.compile(
    r"\b(?:birth\w*|b-?days?|born|cumple\w*|nacimiento)\b|\bwhen(?:\s+is|['’]s|s)\s+(?:your|ur|his|her)\b",
    re.IGNORECASE,
)


@register("date.month_alone", "1")
def is_month_without_birth_cue(text: str, start: int, end: int, label: str, previous: Sequence[str] = ()) -> bool:
    """A DATE_OF_BIRTH span that is a month alone ("March", "in june") with no birth cue in its
    message or in ``previous`` (the messages just before): a month of a problem or an answer, not
    a birthday; "my birthday is in June" and "june" after "when is your birthday?" stay."""
    if label != "DATE_OF_BIRTH" or not _MONTH_ALONE.fullmatch(text[start:end].strip(" ,!?")):
        return False
    return not any(BIRTH_CUE_RE.search(t) for t in (text, *previous) if t)
