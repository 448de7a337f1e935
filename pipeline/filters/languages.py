"""Words of another language in an English tutoring chat: bilingual students answer in Spanish
("gracias", "bueno", "entonces", "claro"), and a tagger trained on English reads a word it does not
know, typed in lower case, as a name.

:func:`is_spanish_word` says when a lower-case NAME is such a word. Why it is safe to drop: the
word is frequent in Spanish (:data:`SPANISH_ZIPF`: at least once per 100,000 words, the function
words, replies and common verbs of the language, a list of about 2,000 in ``wordfreq``'s Spanish
table), it is no given name of any of Faker's locales (its Spanish and Latin-American tables
included, so "luz", "amor", "carlos" or "mira" stay names, and so does anything a name could be),
and it is no English word either way: not in the shipped spaCy model's English words, and at least
ten times commoner in Spanish than in English (:data:`MARGIN`). What is left is a word a
Spanish speaker types in a sentence, not someone's name; a Spanish surname that is also an
ordinary word ("Bueno", "Casas") is a name where it is written as one, capitalised or after a
title, which this never reads.
"""

from __future__ import annotations

import re

from pipeline.filters.vocabulary import (
    FREQUENT_ZIPF,
    MARGIN,
    english_words,
    given_names,
    listed_form,
    word_zipf,
)

SPANISH_ZIPF = FREQUENT_ZIPF  # the same "frequent" as the English slips': once per 100,000 words
_LOWER_WORD = re.compile(r"[a-záéíóúüñ]+")


def is_spanish_word(piece: str) -> bool:
    """Every word of the lower-case ``piece`` (one to three: "gracias", "muy bien") is a frequent
    Spanish word that is no given name and no English word (see the module's docstring)."""
    words = piece.split()
    return 0 < len(words) <= 3 and all(_LOWER_WORD.fullmatch(w) and _spanish_only(w) for w in words)


def _spanish_only(word: str) -> bool:
    spanish = word_zipf(word, "es")
    folded = listed_form(word)
    return (
        spanish >= SPANISH_ZIPF
        and spanish >= word_zipf(word) + MARGIN
        and folded not in given_names()
        and folded not in english_words()
    )

