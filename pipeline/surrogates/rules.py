"""The rules every surrogate must pass, whoever proposed it (offline generator or LLM).

- never the original, never within edit distance 1 of it (ages and one- or two-character
  originals excepted: every teen age is "1x", and "9" can only become another digit),
  never another original PII string of the corpus, never the surrogate of another original;
- the same type and form: a name keeps its title and number of words, a school its stage word,
  an e-mail stays an e-mail, phones and ids keep their digit/letter shape, an age its band.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pipeline.surrogates.formats import age_band
from pipeline.surrogates.keyed import compact, forbidden_in_any_case, normalize, within_one_edit
from pipeline.surrogates.names import TITLE_RE
from pipeline.surrogates.places import STAGE_SUFFIX_RE

# Labels whose values are short numbers: only "differs" and "same band" apply.
RELAXED_LABELS = frozenset({"AGE"})
# Labels also compared with spaces and punctuation removed (by the leak check too).
COMPACT_LABELS = frozenset({"PHONE", "EMAIL", "ID_NUMBER", "URL", "USERNAME"})
DATE_LABELS = frozenset({"DATE_OF_BIRTH", "DATE"})

_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def _contains_word(text: str, word: str) -> bool:
    i = text.find(word)
    while i >= 0:
        j = i + len(word)
        if (i == 0 or not text[i - 1].isalnum()) and (j == len(text) or not text[j].isalnum()):
            return True
        i = text.find(word, i + 1)
    return False


def shape(text: str) -> str:
    return re.sub(r"[^\W\d_]", "a", re.sub(r"\d", "9", text))


def type_error(label: str, original: str, surrogate: str) -> str | None:
    """Why ``surrogate`` does not have the type and form of ``original`` (``None`` when it does)."""
    o, s = original.strip(), surrogate.strip()
    if not s:
        return "empty surrogate"
    if label == "NAME":
        mo, ms = TITLE_RE.match(o + " "), TITLE_RE.match(s + " ")
        if (
            mo
            and mo.end() <= len(o)
            and (not ms or ms.group("title").casefold() != mo.group("title").casefold())
        ):
            return f"keep the title {mo.group('title')!r}"
        if len(o.split()) != len(s.split()):
            return f"use {len(o.split())} word(s), like the original"
    elif label == "SCHOOL":
        mo = STAGE_SUFFIX_RE.search(o)
        if mo and mo.start() > 0 and not s.casefold().endswith(mo.group("stage").casefold()):
            return f"keep the stage word {mo.group('stage')!r}"
    elif label == "EMAIL" and "@" in o and not _EMAIL_RE.match(s):
        return "must be an e-mail address"
    elif label in ("PHONE", "ID_NUMBER") and shape(o) != shape(s):
        return f"keep the format {shape(o)!r} (9 = digit, a = letter)"
    elif label == "URL" and "." in o and "." not in s:
        return "must be a web address"
    elif label == "AGE":
        no, ns = re.search(r"\d+", o), re.search(r"\d+", s)
        if no and (not ns or age_band(int(ns.group())) != age_band(int(no.group()))):
            return "an age in the same band"
    return None


def rule_error(
    label: str,
    original: str,
    surrogate: str,
    *,
    forbidden: Callable[[str], bool],
    used: set[str] | frozenset[str] = frozenset(),
) -> str | None:
    """Why ``surrogate`` breaks a rule for ``original`` (``None`` when it passes them all)."""
    on, sn = normalize(original), normalize(surrogate)
    if not sn:
        return "empty surrogate"
    if sn == on or compact(sn) == compact(on):
        return "equals the original"
    if _contains_word(sn, on):
        return "contains the original"
    if label not in RELAXED_LABELS:
        if len(on) > 2 and within_one_edit(sn, on):  # "9" can only become another digit
            return "within one edit of the original"
        if forbidden_in_any_case(forbidden, surrogate):
            return "is, or contains, another original PII string"
        if sn in used:
            return "already the surrogate of another original"
    return type_error(label, original, surrogate)
