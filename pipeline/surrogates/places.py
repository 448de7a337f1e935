"""Schools and locations: keep the stage word of a school and the kind of a place.

"Lincoln High" → "Oakridge High", "Lincoln Elementary School" → "Oakridge Elementary School" (the
stem is one part of the scope, so both schools keep sharing it), "University of Denver" →
"University of Fairview"; a city stays a city, a state a state, a street address keeps its
house-number shape and street suffix.
"""

from __future__ import annotations

import random
import re

from pipeline.surrogates import pools
from pipeline.surrogates.context import GenContext
from pipeline.surrogates.keyed import apply_case, case_pattern, shape_copy

_STAGES = (
    r"junior high school|junior high|senior high school|senior high|high school|high|"
    r"middle school|middle|elementary school|elementary|primary school|primary|"
    r"intermediate school|intermediate|secondary school|secondary|preparatory school|"
    r"preparatory academy|preparatory|prep school|prep|charter school|charter academy|"
    r"community college|college|university|academy|montessori school|montessori|"
    r"k-8 school|k-8|day school|grammar school|institute|school|hs|ms|es"
)
STAGE_SUFFIX_RE = re.compile(rf"(?P<sep>\s+)(?P<stage>(?:{_STAGES}))\.?$", re.IGNORECASE)
_STAGE_PREFIX_RE = re.compile(
    r"^(?P<stage>university|college|academy|school|institute)(?P<sep>\s+of\s+(?:the\s+)?)",
    re.IGNORECASE,
)
_ADDRESS_RE = re.compile(r"^(?P<num>\d+[A-Za-z]?)(?P<sep>\s+)(?P<street>.+?)$")


def _school_stem(rng: random.Random) -> str:
    if rng.random() < 0.75:
        return rng.choice(pools.SCHOOL_STEMS)
    return rng.choice(pools.last_names())


def _cased_part(ctx: GenContext, kind: str, text: str, propose) -> str:
    return apply_case(ctx.part(kind, text, propose), case_pattern(text))


_NUMBERED_RE = re.compile(
    r"^(?P<prefix>(?:p\.?s\.?|i\.?s\.?|m\.?s\.?|j\.?h\.?s\.?|h\.?s\.?|school)\s*(?:no\.?\s*|#\s*)?)(?P<num>\d+)(?P<rest>.*)$",
    re.IGNORECASE,
)


def school_surrogate(original: str, ctx: GenContext) -> str:
    text = original.strip()
    m = _NUMBERED_RE.match(text)
    if m:  # "PS 262" → "PS 5184": the kind of school stays, the number changes shape for shape
        num = m.group("num")
        new = ctx.part(
            "school-number",
            num,
            lambda r: shape_copy(num, r) + (str(r.randrange(10)) if len(num) <= 2 else ""),
        )
        if new[0] == "0":
            new = "1" + new[1:]
        return m.group("prefix") + new + m.group("rest")
    m = _STAGE_PREFIX_RE.match(text)
    if m and m.end() < len(text):
        return m.group() + _cased_part(ctx, "city", text[m.end() :], _city)
    m = STAGE_SUFFIX_RE.search(text)
    if m and m.start() > 0:
        return _cased_part(ctx, "school", text[: m.start()], _school_stem) + text[m.start() :]
    letters = text.replace(".", "")
    if letters.isalpha() and letters.isupper() and len(letters) <= 5:  # "LHS"
        return ctx.part("school-abbr", text, lambda r: shape_copy(text, r, keep="."))
    return _cased_part(ctx, "school", text, _school_stem)


def _city(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.45:
        return rng.choice(pools.last_names()) + rng.choice(pools.CITY_SUFFIXES)
    if roll < 0.75:
        return f"{rng.choice(pools.CITY_PREFIXES)} {rng.choice(pools.SCHOOL_STEMS)}"
    return rng.choice(pools.SCHOOL_STEMS)


def _place_piece(ctx: GenContext, piece: str) -> str:
    """One comma-separated piece of a location: a state, a ZIP code, a street address or a city."""
    core = piece.strip()
    if not core:
        return piece
    lead = piece[: len(piece) - len(piece.lstrip())]
    trail = piece[len(piece.rstrip()) :]
    names, abbrs = pools.states()
    low = core.casefold()
    if low in {s.casefold() for s in names}:
        sur = _cased_part(ctx, "state", core, lambda r: r.choice(names))
    elif core.isalpha() and core.isupper() and core in abbrs:
        sur = ctx.part("state", core, lambda r: r.choice(abbrs))
    elif re.fullmatch(r"[A-Z]{2}\s+\d{5}(?:-\d{4})?", core):  # "CO 80202"
        st, zipc = core.split(None, 1)
        sur = (
            ctx.part("state", st, lambda r: r.choice(abbrs))
            + " "
            + ctx.part("zip", zipc, lambda r: shape_copy(zipc, r))
        )
    elif re.fullmatch(r"\d{5}(?:-\d{4})?", core):
        sur = ctx.part("zip", core, lambda r: shape_copy(core, r))
    elif (m := _ADDRESS_RE.match(core)) and any(c.isalpha() for c in m.group("street")):
        sur = ctx.part("house", m.group("num"), lambda r: shape_copy(m.group("num"), r)) + m.group(
            "sep"
        )
        sur += _street(ctx, m.group("street"))
    else:
        sur = _cased_part(ctx, "city", core, _city)
    return lead + sur + trail


def _street(ctx: GenContext, street: str) -> str:
    words = street.split()
    suffixes = {s.casefold() for s in pools.street_suffixes()} | {
        "st",
        "st.",
        "ave",
        "ave.",
        "rd",
        "rd.",
        "blvd",
        "blvd.",
        "dr",
        "dr.",
        "ln",
        "ln.",
        "ct",
        "ct.",
        "pl",
        "pl.",
        "apt",
        "apt.",
        "way",
        "street",
        "road",
        "drive",
        "lane",
        "court",
    }
    keep_from = len(words)
    while keep_from > 1 and words[keep_from - 1].casefold() in suffixes | {"n", "s", "e", "w"}:
        keep_from -= 1
    head = " ".join(words[:keep_from])
    tail = " ".join(words[keep_from:])
    sur = _cased_part(ctx, "street", head, lambda r: r.choice(pools.last_names()))
    return f"{sur} {tail}".rstrip()


def location_surrogate(original: str, ctx: GenContext) -> str:
    return ",".join(_place_piece(ctx, piece) for piece in original.split(","))
