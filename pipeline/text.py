"""Word tokens and number tokens: the units every token-level metric and utility figure counts."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

# A word is a run of letters/digits that may contain inner apostrophes, dots or commas between
# digits ("don't", "3.5", "1,000"); every other non-space character is a token of its own.
_TOKEN_RE = re.compile(r"\d+(?:[.,:/]\d+)*|\w+(?:['’]\w+)*|[^\w\s]", re.UNICODE)
_HAS_DIGIT = re.compile(r"\d")


@dataclass(frozen=True, slots=True)
class Token:
    start: int
    end: int
    text: str

    @property
    def is_number(self) -> bool:
        return bool(_HAS_DIGIT.search(self.text))


def tokenize(text: str) -> list[Token]:
    return [Token(m.start(), m.end(), m.group()) for m in _TOKEN_RE.finditer(text)]


def count_tokens(text: str) -> int:
    """How many tokens :func:`tokenize` finds in ``text``, without building them: what a table
    of every message's tokens needs of the many messages nobody labelled."""
    return len(_TOKEN_RE.findall(text))


def count_number_tokens(text: str) -> int:
    """How many of :func:`tokenize`'s tokens in ``text`` are numbers, without building them."""
    return sum(1 for tok in _TOKEN_RE.findall(text) if _HAS_DIGIT.search(tok))


def iter_number_tokens(text: str) -> Iterator[Token]:
    return (t for t in tokenize(text) if t.is_number)


def word_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen ``start..end`` to whole word tokens (what an annotator's sloppy selection meant)."""
    for tok in tokenize(text):
        if tok.start < start < tok.end:
            start = tok.start
        if tok.start < end < tok.end:
            end = tok.end
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _fold_table() -> dict[int, str]:
    """Letters with marks → their base letter, curly and modifier apostrophes → ``'``: one
    character for one, so offsets in a folded text are offsets in the text."""
    table: dict[int, str] = {ord(c): "'" for c in "’‘ʼ`´"}
    table.update({ord(c): base for c, base in zip("øđłı", "odli", strict=True)})
    for code in range(0xC0, 0x250):
        ch = chr(code)
        base = unicodedata.normalize("NFD", ch)[0]
        if base != ch and base.isascii() and base.isalpha():
            table[code] = base.lower() if ch.islower() else base
    return table


_FOLD = _fold_table()


def fold(text: str) -> str:
    """``text`` in lower case, without accents and with one apostrophe ("JOSÉ’s" → "jose's"),
    the same length as ``text`` (so a match in the folded text is a match in the text): how a
    name typed by a transcriber, a student or a teacher is recognised as the same name. A
    character whose lower case is longer ("İ") is kept as it is."""
    low = text.lower()
    if len(low) != len(text):
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return low.translate(_FOLD)
