"""Person-name surrogates that keep gender, form and casing, part by part.

"Ms. Smith" → "Ms. Garcia" (title kept, surname mapped), "Fred Luther" → "George Fischer" with
"Fred" → "George" everywhere else in the scope, "maria" → "sofia". Gender comes from the title
("Mr.", "Mrs.") or, for a first name, from a first-name → gender table built from Faker's gendered
name lists; names of unknown or shared gender get a name of either gender.
"""

from __future__ import annotations

import random
import re

from pipeline.speakers import TITLE_RE
from pipeline.surrogates import pools
from pipeline.surrogates.context import GenContext
from pipeline.surrogates.keyed import apply_case, case_pattern

_TITLE_GENDER = {
    "mr": "m",
    "mister": "m",
    "sir": "m",
    "señor": "m",
    "senor": "m",
    "mrs": "f",
    "ms": "f",
    "miss": "f",
    "missus": "f",
    "madam": "f",
    "madame": "f",
    "señora": "f",
    "senora": "f",
    "mme": "f",
    "mlle": "f",
}
_SUFFIX_RE = re.compile(r"(?P<sep>,?\s+)(?P<suffix>jr\.?|sr\.?|ii|iii|iv)$", re.IGNORECASE)
_TOKEN_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|[^\s]")


def infer_gender(name: str) -> str:
    """``m``, ``f`` or ``u`` for a bare or titled name."""
    m = TITLE_RE.match(name.strip() + " ")
    if m:
        g = _TITLE_GENDER.get(m.group("title").rstrip(".").casefold())
        if g:
            return g
        name = name.strip()[m.end() :]
    words = name.split()
    if not words:
        return "u"
    return gender_of(words[0])


def gender_of(first: str) -> str:
    """From the first-name table; else the ending, where it is a strong cue ("Reynaldo", "Gaurika")."""
    key = first.casefold()
    known = pools.gender_table().get(key)
    if known is not None:
        return known
    if len(key) >= 4 and key.isalpha():
        if key.endswith(("o", "os")):
            return "m"
        if key.endswith(("a", "ette", "elle", "ina")):
            return "f"
    return "u"


def _pick_first(gender: str) -> callable:
    def propose(rng: random.Random) -> str:
        g = gender if gender in ("m", "f") else rng.choice(("m", "f"))
        return rng.choice(pools.first_names()[g])

    return propose


def _pick_last(rng: random.Random) -> str:
    return rng.choice(pools.last_names())


def _map_word(ctx: GenContext, word: str, role: str, gender: str) -> str:
    """One name word (possibly hyphenated: each piece is mapped on its own)."""
    if "-" in word and all(word.split("-")):
        return "-".join(_map_word(ctx, w, role, gender) for w in word.split("-"))
    letters = word.rstrip(".")
    if len(letters) == 1 and letters.isalpha():  # an initial: "J." → "K."
        sur = ctx.part("initial", letters, lambda r: chr(ord("A") + r.randrange(26)))
        return apply_case(sur, "upper" if letters.isupper() else "lower") + word[len(letters) :]
    key = word.casefold()
    if role == "first":
        g = pools.gender_table().get(key) or gender_of(word)
        if g == "u":
            g = gender
        sur = ctx.part("name", word, _pick_first(g))
    else:
        sur = ctx.part("name", word, _pick_last)
    return apply_case(sur, case_pattern(word))


def name_surrogate(original: str, ctx: GenContext) -> str:
    text = original.strip()
    title, sep = "", ""
    m = TITLE_RE.match(text + " ")
    if m and m.end() < len(text):  # "MS" alone is a name (initials), not a title
        title, sep = m.group("title"), m.group("sep")
        text = text[m.end() :]
    suffix = ""
    sm = _SUFFIX_RE.search(text)
    if sm and sm.start() > 0:
        suffix = sm.group()
        text = text[: sm.start()]
    gender = infer_gender(original)
    words = text.split()
    out: list[str] = []
    for i, word in enumerate(words):
        if title or (len(words) > 1 and i == len(words) - 1):
            role = "last" if i == len(words) - 1 else "first"
        elif len(words) == 1:
            key = word.casefold()
            known_first = key in pools.gender_table()
            role = "last" if (not known_first and key in pools.last_name_set()) else "first"
        else:
            role = "first"
        out.append(_map_word(ctx, word, role, gender))
    if not out:
        raise ValueError("empty name")
    return f"{title}{sep}{' '.join(out)}{suffix}"
