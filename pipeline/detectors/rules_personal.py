"""Cue-gated patterns for a participant's birthday and age, shared by ``rules`` and ``presidio``.

Dates and small numbers are everywhere in maths ("the 3rd of May is a Tuesday; how many days
until June?", "Sam is 12 years old"), so a date counts as a DATE_OF_BIRTH only next to a
birthday cue ("born", "my birthday", "bday") or as the reply to a birthday question, and a number
counts as an AGE only when someone says it of themselves ("I'm 11", "I turn 12 next month") or
answers "how old are you?". Candidates in a maths context are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pipeline.filters.cues import AGE_QUESTION_RE
from pipeline.filters.maths import inside_expression
from pipeline.filters.months import MONTH
from pipeline.maths import MATH_WORDS, in_math_context, math_token_hits

_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d{2}"
DATE_RE = re.compile(
    rf"\b(?:{MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?"  # March 3, 2012 / oct 4 / November 28th
    rf"|{_DAY}\s+(?:of\s+)?{MONTH}(?:,?\s+{_YEAR})?"  # 27 February 2011 / 12th of November
    rf"|{_YEAR}-\d{{1,2}}-\d{{1,2}}"  # 2016-07-01
    r"|\d{1,2}[/.-]\d{1,2}[/.-](?:\d{4}|\d{2}))\b",  # 11-28-12, 05/03/2010
    re.IGNORECASE,
)
BIRTH_CUE_RE = re.compile(
    r"\b(?:born|birthday|birth\s*day|birtdhay|bday|b-day|dob|d\.o\.b|date\s+of\s+birth|"
    r"birth\s*date)\b",
    re.IGNORECASE,
)
_BIRTH_AFTER_RE = re.compile(
    r"^\W{0,3}(?:is|was|'s)?\s*(?:my|his|her|our)\s+(?:birthday|birth\s*day|bday|b-day|dob)",
    re.IGNORECASE,
)
BIRTHDAY_QUESTION_RE = re.compile(
    r"\b(?:when(?:'s|\s+is|\s+was)\s+(?:your|ur)\s+(?:birthday|bday|b-day)|"
    r"(?:your|ur|a)\s+(?:birthday|bday|b-day)|when\s+were\s+(?:you|u)\s+born|date\s+of\s+birth)",
    re.IGNORECASE,
)

FIRST_PERSON_RE = re.compile(r"\b(?:i|i'?m|im|my|mine|me)\b", re.IGNORECASE)

_NUMBER_WORDS = {
    "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
    "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20,
}  # fmt: skip
_AGE_NUM = r"(?:\d{1,2}|" + "|".join(_NUMBER_WORDS) + r")"
_SELF_AGE_RE = re.compile(
    r"\b(?:i'?m|i\s+am|im|i\s+turn(?:ed)?|i'?m\s+turning|im\s+t\w*ning|i\s+will\s+be|"
    r"i'?ll\s+be|turning|i\s+just\s+turned)\s+(?:almost\s+|nearly\s+|only\s+)?"
    rf"({_AGE_NUM})(?!\s*(?:[/:.,]\d|%))\b",
    re.IGNORECASE,
)
_YEARS_OLD_RE = re.compile(rf"\b({_AGE_NUM})\s*(?:years?|yrs?|y/?o)(?:\s*old)?\b", re.IGNORECASE)
_REPLY_AGE_RE = re.compile(
    rf"^\W*(?:(?:i'?m|im|i\s+am|i\s+turn(?:ed)?|almost|just|only|like|um+|uh+|oh)\s+)*({_AGE_NUM})"
    r"(?:\s*(?:years?|yrs?)(?:\s*old)?)?\W*(?:$|[!.?,]|lol|and\b|but\b|in\b|going\b)",
    re.IGNORECASE,
)
_NOT_AGE_AFTER_RE = re.compile(r"^\s*(?:[a-z]+)", re.IGNORECASE)
_ALLOWED_AFTER_AGE = frozenset(
    """years year yrs yr y o old and but lol haha now too already soon next in on this going
    turning tho though so i im i'm my a""".split()  # noqa: SIM905
)


def _age_value(token: str) -> int | None:
    low = token.lower()
    if low.isdigit():
        return int(low)
    return _NUMBER_WORDS.get(low)


def find_birthdays(text: str, prev: str = "") -> Iterator[tuple[int, int, float, str]]:
    """``(start, end, score, rule)`` for dates said to be someone's birthday."""
    asked = bool(prev and BIRTHDAY_QUESTION_RE.search(prev)) and len(text.split()) <= 14
    for m in DATE_RE.finditer(text):
        start, end = m.span()
        verdict = _birthday_verdict(text, start, end, asked)
        if verdict:
            yield start, end, 0.9 if verdict == "cue" else 0.8, f"birthday_{verdict}"


def _birthday_verdict(text: str, start: int, end: int, asked: bool) -> str:
    """``"cue"``, ``"reply"`` or ``""`` (not a birthday) for the date at ``start..end``."""
    before = text[max(0, start - 40) : start]
    after = text[end : end + 30]
    cue = bool(BIRTH_CUE_RE.search(before)) or bool(_BIRTH_AFTER_RE.match(after))
    if not (cue or asked) or inside_expression(text, start, end):
        return ""
    first_person = bool(FIRST_PERSON_RE.search(before) or FIRST_PERSON_RE.search(after))
    if not (asked or first_person) and (
        in_math_context(text, start, end) or any(math_token_hits(text))
    ):
        return ""  # "Pilar was born on 2/12/2004. How old will she be on her birthday in 2021?"
    return "cue" if cue else "reply"


def is_birthday_mention(text: str, start: int, end: int, prev: str = "") -> bool:
    """Is the date at ``start..end`` someone's birthday (a cue nearby, or the reply to a birthday
    question) rather than a date in a word problem?"""
    asked = bool(prev and BIRTHDAY_QUESTION_RE.search(prev)) and len(text.split()) <= 14
    return bool(_birthday_verdict(text, start, end, asked))


def find_ages(text: str, prev: str = "") -> Iterator[tuple[int, int, float, str]]:
    """``(start, end, score, rule)`` for a participant's own age ("I'm 11", "turning ten")."""
    seen: set[int] = set()
    for m in _SELF_AGE_RE.finditer(text):
        start, end = m.span(1)
        value = _age_value(m.group(1))
        if value is None or not 4 <= value <= 99 or start in seen:
            continue
        after = _NOT_AGE_AFTER_RE.match(text[end : end + 20])
        if after and after.group().strip().lower() not in _ALLOWED_AFTER_AGE:
            continue  # "I'm 5 points away", "I'm 3 steps in"
        if inside_expression(text, start, end):
            continue
        seen.add(start)
        yield start, end, 0.85, "age_self"
    asked = bool(prev and AGE_QUESTION_RE.search(prev)) and len(text.split()) <= 12
    for m in _YEARS_OLD_RE.finditer(text):
        start, end = m.span(1)
        value = _age_value(m.group(1))
        if value is None or start in seen or not 4 <= value <= 99:
            continue
        near_self = re.search(
            r"\b(?:i'?m|im|i\s+am|i\s+turn|my\s+age)\b", text[max(0, start - 25) : start], re.I
        )
        if not (asked or near_self) or in_math_context(text, start, end) and not near_self:
            continue
        seen.add(start)
        yield start, end, 0.85, "age_years_old"
    if asked:
        m = _REPLY_AGE_RE.match(text)
        if m and m.start(1) not in seen:
            value = _age_value(m.group(1))
            words = {w.lower() for w in re.findall(r"[A-Za-z]+", text)}
            if value is not None and 4 <= value <= 99 and not (words & MATH_WORDS - {"old"}):
                yield m.start(1), m.end(1), 0.8, "age_reply"


# --- street addresses ------------------------------------------------------------------------

_STREET_SUFFIXES = (
    r"street|st|avenue|ave|road|rd|drive|dr|lane|ln|boulevard|blvd|court|ct|way|place|pl|"
    r"terrace|ter|circle|cir|parkways?|pkwy|highway|hwy|trail|trl|crescent|close|alley|row|"
    r"mews|keys?|summit|village|villages|mission|heights|hills?|gardens?|grove|park|plaza|"
    r"square|sq|ridge|crossing|run|loop|pass|path|pike|point|ports?|springs?|station|"
    r"views?|vista|walk|estates?|manor|meadows?|harbou?r|junction|landing|commons?|ville|"
    r"creek|brook|glen|green|hollow|orchard|shores?|union|valley|turnpike"
)
_ADDRESS_RE = re.compile(
    r"(?<![\w$.,/-])(\d{1,6}[A-Za-z]?\s+(?:[NSEW]\.?\s+)?(?:[A-Za-z][A-Za-z'-]+\s+){1,3}"
    rf"(?:{_STREET_SUFFIXES})\b\.?(?:\s*(?:apt|apartment|unit|suite|#)\.?\s*\w+)?)",
    re.IGNORECASE,
)
_ADDRESS_CUE_RE = re.compile(
    r"\b(?:address|addy|live\s+(?:at|on)|lives\s+(?:at|on)|living\s+(?:at|on)|located\s+at|"
    r"house\s+is|home\s+is|near|mail\s+(?:it\s+)?to|send\s+(?:it\s+)?to|moved\s+to|stay\s+at)\b",
    re.IGNORECASE,
)
ADDRESS_QUESTION_RE = re.compile(
    r"\b(?:address|where\s+do\s+(?:you|u)\s+live|where\s+(?:are|r)\s+(?:you|u)\s+"
    r"(?:joining|calling|from|located)|where\s+should\s+(?:we|i)\s+(?:mail|send))",
    re.IGNORECASE,
)
_STRONG_SUFFIX_RE = re.compile(
    r"\b(?:street|avenue|road|drive|lane|boulevard|court|parkway|terrace|highway)\.?$",
    re.IGNORECASE,
)


def find_addresses(text: str, prev: str = "") -> Iterator[tuple[int, int, float, str]]:
    """``(start, end, score, rule)`` for street addresses ("I live at 727 Drake Drive"): a house
    number, a street name and a street suffix, next to an address cue (or answering an address
    question, or with an unmistakable suffix such as Street or Avenue), never in maths."""
    if not any(c.isdigit() for c in text):
        return
    asked = bool(prev and ADDRESS_QUESTION_RE.search(prev)) and len(text.split()) <= 16
    for m in _ADDRESS_RE.finditer(text):
        start, end = m.span(1)
        chunk = m.group(1)
        words = re.findall(r"[A-Za-z]+", chunk.lower())
        if any(w in MATH_WORDS for w in words[:-1]):
            continue  # "12 square feet", "4 groups of 3 rows"
        cue = bool(_ADDRESS_CUE_RE.search(text[max(0, start - 30) : start]))
        strong = bool(_STRONG_SUFFIX_RE.search(chunk)) and chunk.split()[1][:1].isupper()
        if not (cue or asked or strong):
            continue
        if inside_expression(text, start, end) or not cue and in_math_context(text, start, end):
            continue
        yield start, end, 0.85 if cue or asked else 0.7, "address"
