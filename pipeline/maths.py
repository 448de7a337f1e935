"""Numeric ambiguity: telling teaching content ("9351 / 7", "3:45", "12 cm") from PII.

Maths talk is full of strings that look like phone numbers, licence numbers and dates. Every
detector, the tagger's post-filter and the release report share these helpers so that they agree
on what counts as maths:

- :func:`math_expression_spans` — character ranges of maths content in a text;
- :func:`in_math_context` — is a candidate range part of, or surrounded by, maths;
- :func:`has_pii_cue` — does a PII cue ("my phone", "student id", "born on") introduce a range;
- :func:`is_placeholder` — already-anonymised placeholders (``Student A``, ``[STUDENT]``);
- :data:`MATH_WORDS` — the maths vocabulary (the math segmenter may reuse it).

Everything here is compiled regular expressions over one string (no models), fast enough for
tens of thousands of short messages a second.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = [
    "MATH_PHRASES",
    "MATH_WORDS",
    "NUMBER_WORDS",
    "PII_CUE_WORDS",
    "WEAK_PII_CUE_WORDS",
    "WORD_PROBLEM_WORDS",
    "has_pii_cue",
    "in_math_context",
    "is_placeholder",
    "math_expression_spans",
    "math_token_hits",
]


def _words(block: str) -> frozenset[str]:
    return frozenset(block.split())


def _phrases(block: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in block.split(",") if p.strip())


MATH_WORDS: frozenset[str] = _words(
    """
    add added adding addition addend plus sum sums total subtract subtracted subtracting
    subtraction minus difference multiply multiplied multiplying multiplication times product
    products factor factors multiple multiples divide divided dividing division divisor dividend
    quotient remainder remainders equal equals equation equations expression expressions
    inequality variable variables coefficient constant solve solved solving simplify simplified
    evaluate calculate calculated calculation compute estimate estimated estimation round rounded
    rounding fraction fractions numerator numerators denominator denominators decimal decimals
    percent percentage percentages ratio ratios proportion proportional rate rates unit units
    whole wholes half halves third thirds fourth fourths quarter quarters fifth fifths sixth
    sixths eighth eighths tenth tenths hundredth hundredths thousandth thousandths mixed improper
    integer integers negative positive odd even prime composite digit digits place value ones
    tens hundreds thousands millions billions exponent exponents power powers squared cubed
    square root roots sqrt graph graphs slope intercept axis coordinate coordinates plot
    function functions linear quadratic polynomial area perimeter volume circumference radius
    diameter angle angles degree degrees triangle triangles rectangle rectangles square squares
    circle circles polygon polygons parallelogram trapezoid rhombus pentagon hexagon octagon
    cube cubes prism cylinder cone sphere length width height base side sides vertex vertices
    edge edges face faces symmetry parallel perpendicular acute obtuse right hypotenuse
    pythagorean theorem formula formulas mean median mode range average probability data
    table tally pattern sequence array arrays algebra geometry arithmetic maths math number
    numbers numeral count counting skip inch inches foot feet yard yards mile miles meter
    meters metre metres centimeter centimeters centimetre centimetres millimeter millimeters
    kilometer kilometers gram grams kilogram kilograms pound pounds ounce ounces liter liters
    litre litres gallon gallons quart quarts pint pints cup cups hour hours minute minutes
    second seconds dollar dollars cent cents penny pennies nickel nickels dime dimes
    regroup regrouping borrow carry carried simplest lcm gcf gcd lcd greatest least common
    compare comparing greater less than estimate answer answers problem problems
    """
)
"""Maths vocabulary (lower case). ``answer``/``problem`` are weak on their own but tutoring-heavy."""

NUMBER_WORDS: frozenset[str] = _words(
    """
    zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty
    ninety hundred thousand million billion
    """
)
"""The English number words (a closed class): what a child spells when not typing the digits."""

MATH_PHRASES: tuple[str, ...] = _phrases(
    """
    divided by, multiplied by, times as many, equal to, greater than, less than, place value,
    common denominator, least common, greatest common, square root, number line, word problem,
    how many, how much, in all, altogether, left over, each of, per hour, per day,
    pick a number, think of a number, the number, what is, what's, work out, how old,
    how long, how far, how many years, how much longer, how much older, years old
    """
)

WORD_PROBLEM_WORDS: frozenset[str] = _words(
    """
    each per total altogether bought buys buy sold sells sell cost costs spent spend paid pay
    earns earned saves saved shares shared share gives gave left remaining more fewer apples
    cookies marbles pencils stickers candies students boxes bags rows groups pieces pizza
    slices miles trip year years old age older younger older oldest day days week weeks month
    months
    """
)
"""Words that make a number nearby a word-problem quantity (weaker than :data:`MATH_WORDS`)."""

PII_CUE_WORDS: tuple[str, ...] = _phrases(
    """
    phone, cell, mobile, call me, call my, text me, text my, whatsapp, reach me, contact,
    my number, my num, his number, her number, mom's number, dad's number, fax, tel, id, i.d.,
    identification, licence, license, account, acct, badge, ssn, social security, passport,
    membership, routing, zip, postcode, postal, address, apt, email, e-mail, username,
    user name, handle, gamertag, gamer tag, ign, login, password, employee, roll number,
    registration, case number
    """
)
"""Cues that make the number after them PII even when maths is around ("student id 4815")."""

WEAK_PII_CUE_WORDS: tuple[str, ...] = _phrases(
    """
    born, birthday, birth, dob, card, member, pin, lives, live at, live on
    """
)
"""Cues that lose to clear maths nearby ("Sam was born in 2010; how old is he in 2024?")."""

# --- expression patterns ---------------------------------------------------------------------

# a number: 1,000 / 3.5 / .5 / 45% / $4.50 / 10² ; never the middle of a dotted/dashed run
_NUM = r"(?:[$£€]\s?)?(?:\d{1,3}(?:,\d{3})+|\d+)?(?:\.\d+)?(?<=\d)(?:\s?%|[²³¹⁰⁴-⁹]+)?"
_VAR = r"(?:\d*(?:\.\d+)?[a-zA-Z](?![a-zA-Z])(?:\^\d+|[²³])?)"  # 2x, x, y², 3n^2
_OPERAND = rf"(?:\(?\s?(?:{_NUM}|{_VAR})\s?\)?)"
_SYM_OP = r"(?:[+*/×÷=<>≤≥≠≈^·]|==|<=|>=|\s[xX]\s|\s-\s|(?<=[\d)\s])-(?=[\d(]))"
_WORD_OP = (
    r"(?:plus|minus|times|over|divided\s+by|multiplied\s+by|equals|is\s+equal\s+to|"
    r"is\s+the\s+same\s+as|goes\s+into|out\s+of|into|to\s+the\s+power\s+of)"
)
_EXPR_RE = re.compile(
    rf"(?<![\w.@/:-]){_OPERAND}(?:\s*{_SYM_OP}\s*{_OPERAND}|\s+{_WORD_OP}\s+{_OPERAND})+(?![\w@])",
    re.IGNORECASE,
)

_WORD_CALC_RE = re.compile(
    r"\b(?:divide|multiply|add|subtract|take|split|share)\s+(?:the\s+)?"
    rf"{_NUM}\s+(?:by|and|from|to|into|with|between|among)\s+(?:the\s+)?{_NUM}(?![\w])"
    r"|\b(?:half|double|twice|triple|third|quarter|square\s+root)\s+of\s+"
    + _NUM
    + rf"|{_NUM}\s+(?:squared|cubed|to\s+the\s+\w+\s+power)\b"
    + r"|\b(?:pick|choose|think\s+of|take|try|guess|say|is\s+it|how\s+about|what\s+about)\s+"
    r"(?:a|any|the|another)?\s*(?:number|num|digit|value|integer)s?\s*(?:like|of|,|:|is)?\s*"
    + _NUM
    + r"|\b(?:the|that|this|a|which|what)\s+(?:number|numbers|digits?)\s+(?:is\s+|was\s+|=\s*)?"
    + _NUM
    + r"|\b(?:answer|result|total|sum|product|quotient|difference|value)s?\s+"
    r"(?:is\s+|was\s+|are\s+|=\s*|of\s+)?" + _NUM,
    re.IGNORECASE,
)

_UNITS = (
    r"(?:mm|cm|km|m|in|ft|yd|mi|mg|g|kg|lb|lbs|oz|ml|l|gal|qt|pt|sec|secs|s|min|mins|h|hr|hrs|"
    r"mph|kph|km/h|m/s|sq|cubic|square|inch|inches|foot|feet|yard|yards|mile|miles|meters?|"
    r"metres?|centimet(?:er|re)s?|millimet(?:er|re)s?|kilomet(?:er|re)s?|grams?|kilograms?|"
    r"pounds?|ounces?|lit(?:er|re)s?|gallons?|quarts?|pints?|cups?|tablespoons?|teaspoons?|"
    r"hours?|minutes?|seconds?|days?|weeks?|months?|years?|decades?|centuries|century|"
    r"dollars?|cents?|bucks|pennies|nickels|dimes|quarters|degrees?|°[cf]?|units?|"
    r"squares?|pieces?|slices?|pages?|points?|percent|times|apples|cookies|marbles|students|"
    r"people|kids|boxes|bags|rows|columns|groups|tens|ones|hundreds|thousands|millions?|"
    r"billions?|halves|thirds|fourths|fifths|sixths|eighths|tenths|hundredths|thousandths)"
)
_QUANTITY_RE = re.compile(
    rf"(?<![\w.]){_NUM}(?:\s?-\s?|\s?){_UNITS}\b(?:\s?(?:squared|cubed|[²³]))?"
    r"|[$£€]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:k|m|million|billion))?\b"
    r"|\b\d+(?:\.\d+)?\s?(?:%|percent\b)",
    re.IGNORECASE,
)
_TIME_RE = re.compile(
    r"(?<![\d:])(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?:\s?[ap]\.?m\.?)?(?![\d:])"
    r"|\b(?:1[0-2]|0?[1-9])\s?(?:[ap]\.?m\.?|o'?clock)(?![\w])",
    re.IGNORECASE,
)
_DECIMAL_RE = re.compile(r"(?<![\w.])\d*\.\d+(?![\w.])")
_ORDINAL_RE = re.compile(r"\b\d+(?:st|nd|rd|th)\b", re.IGNORECASE)
_EXPONENT_RE = re.compile(r"(?<![\w])[\w.]+\s?(?:\^\s?\(?-?\d+\)?|\*\*\s?\d+|[²³⁴-⁹]+)")

_PATTERNS: tuple[re.Pattern[str], ...] = (
    _EXPR_RE,
    _WORD_CALC_RE,
    _QUANTITY_RE,
    _TIME_RE,
    _DECIMAL_RE,
    _ORDINAL_RE,
    _EXPONENT_RE,
)

# shapes that look like arithmetic with unspaced dashes/slashes but are contact data or dates
_CONTACT_SHAPE_RE = re.compile(
    r"^\s*\(?\d{3}\)?[\s.-]?\d{3}[\s.-]\d{4}\s*$"  # 555-123-4567, (555) 123-4567
    r"|^\s*\d{3}-\d{4}\s*$"  # 555-1234
    r"|^\s*\d{3}-\d{2}-\d{4}\s*$"  # SSN shape
    r"|^\s*\d{4}-\d{1,2}-\d{1,2}\s*$"  # ISO date
    r"|^\s*\d{1,2}[/-]\d{1,2}[/-]\d{2,4}\s*$"  # 05/03/2010 dates (handled by context)
    r"|^\s*(?:\d+-){2,}\d+\s*$"  # 12-34-56-78 id-like runs of dashed groups
)
_QUICK_RE = re.compile(r"[\d=+*/×÷^²³<>%$£€]")


def _spans_uncached(text: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """``(all maths ranges merged, operator-expression ranges)``."""
    if not _QUICK_RE.search(text):
        return [], []
    found: list[tuple[int, int]] = []
    strong: list[tuple[int, int]] = []
    for pattern in _PATTERNS:
        for m in pattern.finditer(text):
            start, end = m.span()
            while start < end and text[start].isspace():
                start += 1
            while end > start and text[end - 1] in " \t\n,.;:!?":
                end -= 1
            if end <= start:
                continue
            if pattern is _EXPR_RE:
                chunk = text[start:end]
                if _CONTACT_SHAPE_RE.match(chunk) or not re.search(r"\d|[=<>]", chunk):
                    continue
                if not _has_real_operator(chunk):
                    continue
                strong.append((start, end))
            elif pattern is _WORD_CALC_RE and _CALC_VERB_RE.match(text, start):
                strong.append((start, end))
            found.append((start, end))
    return _merge(found), strong


_CALC_VERB_RE = re.compile(
    r"(?:divide|multiply|add|subtract|take|split|share|half|double|twice|triple|third|quarter|"
    r"square|\d)",
    re.IGNORECASE,
)


_SYMBOL_OPERATOR_RE = re.compile(r"[+*/×÷=<>≤≥≠≈^·]")


def _has_real_operator(chunk: str) -> bool:
    """Reject "a - b" joins of plain words caught by the variable operand (``I - a``)."""
    if _SYMBOL_OPERATOR_RE.search(chunk):
        return True
    return bool(re.search(r"\d", chunk) and _WORD_OPERATOR_RE.search(chunk))


_WORD_OPERATOR_RE = re.compile(
    r"\s[xX]\s|\d\s*-\s*\d|\b(?:plus|minus|times|over|divided|multiplied|equals|equal|"
    r"same|goes|out\s+of|into|power)\b",
    re.IGNORECASE,
)


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    if not ranges:
        return []
    ranges.sort()
    out = [ranges[0]]
    for start, end in ranges[1:]:
        last_start, last_end = out[-1]
        if start <= last_end:
            out[-1] = (last_start, max(last_end, end))
        else:
            out.append((start, end))
    return out


@lru_cache(maxsize=4096)
def _spans_cached(text: str) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    found, strong = _spans_uncached(text)
    return tuple(found), tuple(strong)


def math_expression_spans(text: str) -> list[tuple[int, int]]:
    """Sorted, merged ``(start, end)`` character ranges of maths content in ``text``.

    Covers equations, fractions, arithmetic (symbolic and in words: "divide 4815162342 by 2"),
    decimals, percentages, times, money, measurements, ordinals, exponents and "pick a number N".
    Dates and bare years are not maths by shape alone: :func:`in_math_context` judges them.
    """
    return list(_spans_cached(text)[0])


# --- context ---------------------------------------------------------------------------------

_WORD_RE = re.compile(r"[a-z]+(?:'[a-z]+)?")
_OPERATOR_NEAR_DIGIT_RE = re.compile(
    r"\d\s*[+*/×÷=<>^]|[+*/×÷=<>^]\s*\(?\d|\d\s+[xX]\s+\d|\d\s+-\s+\d"
)
_PHRASE_RE = re.compile(r"\b(?:" + "|".join(re.escape(p) for p in MATH_PHRASES) + r")\b")
_CUE_RE = re.compile(
    r"(?<![a-z])(?:" + "|".join(re.escape(c) for c in PII_CUE_WORDS) + r")(?![a-z])"
    r"|\b(?:my|his|her|their|our)\s+(?:\w+\s+)?(?:number|no\.?|#)",
)
_WEAK_CUE_RE = re.compile(
    r"(?<![a-z])(?:" + "|".join(re.escape(c) for c in WEAK_PII_CUE_WORDS) + r")(?![a-z])"
)
_NUMBERISH_RE = re.compile(r"\d")

_WINDOW = 40  # characters either side that count as "nearby"
_CUE_WINDOW = 32  # characters before a candidate where a PII cue introduces it


def has_pii_cue(
    text: str, start: int, end: int, *, window: int = _CUE_WINDOW, weak: bool = True
) -> bool:
    """True when a PII cue word ("phone", "student id", "my number", "born") introduces the range.

    Looks at the ``window`` characters before ``start`` (and a short tail after ``end`` for
    "... is my cell"). ``weak=False`` ignores the weak cues ("born", "card", "pin").
    """
    return _cue_strength(text, start, end, window) >= (1 if weak else 2)


def _cue_strength(text: str, start: int, end: int, window: int = _CUE_WINDOW) -> int:
    """2 for a strong PII cue before/after the range, 1 for a weak one, 0 for none."""
    before = text[max(0, start - window) : start].lower()
    if _CUE_RE.search(before):
        return 2
    after = text[end : end + 20].lower()
    if re.match(r"\s*(?:is|was|'s)?\s*(?:my|his|her|our)\s+(?:cell|phone|number|id)", after):
        return 2
    return 1 if _WEAK_CUE_RE.search(before) else 0


def math_token_hits(text: str) -> tuple[int, int]:
    """``(maths words, maths phrases)`` found in ``text`` (lower-cased internally)."""
    low = text.lower()
    words = sum(1 for w in _WORD_RE.findall(low) if w in MATH_WORDS)
    return words, len(_PHRASE_RE.findall(low))


def in_math_context(text: str, start: int, end: int) -> bool:
    """Is ``text[start:end]`` maths (teaching content) rather than a PII candidate?

    True when the range is an operand of an operator expression ("9351 / 7", "divide N by 2"),
    or lies in other maths content (times, money, measurements, "pick a number N"), or when
    operators next to numbers, maths words or word-problem words are within a few words of it.
    A strong PII cue right before the range ("my phone", "student id") wins over everything but
    an operator expression: "my id is 4815, and 3/4 is right" keeps the id. A weak cue ("born")
    loses only to clear maths nearby (operators, maths phrases such as "how old").
    """
    start = max(0, start)
    end = min(len(text), max(end, start + 1))
    found, strong = _spans_cached(text)
    for s, e in strong:
        if s <= start and end <= e and (e - s) > (end - start):
            return True
    cue = _cue_strength(text, start, end)
    if cue == 2:
        return False
    if cue == 0 and any(s < end and start < e for s, e in found):
        return True
    lo, hi = max(0, start - _WINDOW), min(len(text), end + _WINDOW)
    around = text[lo:start] + " " + text[end:hi]
    if _OPERATOR_NEAR_DIGIT_RE.search(around):
        return True
    low = around.lower()
    if _PHRASE_RE.search(low):
        return True
    if cue:
        return False
    words = _WORD_RE.findall(low)
    if any(w in MATH_WORDS for w in words):
        return True
    # word-problem quantities: a word-problem word and another number nearby
    return any(w in WORD_PROBLEM_WORDS for w in words) and bool(_NUMBERISH_RE.search(around))


# --- placeholders ----------------------------------------------------------------------------

_PLACEHOLDER_WORD_RE = re.compile(
    r"^\s*(?:student|teacher|tutor|speaker|person|parent|child|kid|pupil|learner|user|name|"
    r"participant)[\s_\-]?(?:[A-Z]|[0-9]{1,3}|[A-Z][0-9]{1,2})\s*$",
    re.IGNORECASE,
)
_MASK_RE = re.compile(r"^\s*(?:x{3,}|X{3,}|\*{3,}|#{3,}|_{3,})\s*$")
_INSIDE_BRACKETS_RE = re.compile(r"^\s*[\[<{(]\s*([^\]>})]*)\s*[\]>})]\s*$")
_PLACEHOLDER_TOKENS = _words(
    """student teacher tutor name names first last full redacted removed anonymized anonymised
    person pii parent school location city address phone email url username user id number
    child kid pupil learner speaker participant mask masked hidden private"""
)
_BARE_PLACEHOLDERS = frozenset({"redacted", "anonymized", "anonymised", "removed"})


def is_placeholder(s: str) -> bool:
    """True for already-anonymised placeholders: ``Student A``, ``Student 3``, ``[STUDENT]``,
    ``<NAME>``, ``[REDACTED]``, ``XXX``. Real names ("Stuart", "Ana") are not placeholders."""
    if not s or len(s) > 40:
        return False
    inner = _INSIDE_BRACKETS_RE.match(s)
    if inner:
        words = [w for w in re.split(r"[\s_\-.]+", inner.group(1).strip().lower()) if w]
        words = [w for w in words if not w.isdigit()]
        return bool(words) and all(w in _PLACEHOLDER_TOKENS or len(w) == 1 for w in words)
    return bool(
        _PLACEHOLDER_WORD_RE.match(s)
        or _MASK_RE.match(s)
        or s.strip().lower() in _BARE_PLACEHOLDERS
    )
