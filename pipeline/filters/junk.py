"""Junk filters: classroom talk that detectors flag and that is never anybody's identity.

Measured on real classroom transcripts, every detector flags some of: fillers ("Mhm", "Ahuh",
"Mm-hmm"), endearments ("honey", "hon"), maths words ("hexagon", "Acute", "math" as a COURSE),
references into the material ("page 177", "exploration 3A"), road names of a task map ("I-95"),
the modal "May" ("May I go"), initials that a transcript already de-identified ("Ms. H",
"Mrs. L"), and, in lower case, function words ("has", "the"), nouns after a determiner ("a ray")
and the verb of a request ("please recheck your working"); in chat, a lower-case NAME that is a
close misspelling of a frequent English, chat or maths word and no given or family name ("alreda",
"aight", "divizion"), two frequent words glued ("rightcause"), laughter ("ahah"), a word without a
vowel ("pls", "tbh", a keyboard mash), a word typed with a letter held down ("sooo") and a
frequent Spanish word that is no name and no English word ("gracias", "entonces":
:mod:`pipeline.filters.languages`).
:func:`junk_kind` says which of these a span is; detectors drop such spans and the classroom bench
counts them as junk flags, from the same lists.
"""

from __future__ import annotations

import re

from pipeline.filters import register
from pipeline.filters.languages import is_spanish_word
from pipeline.filters.vocabulary import (
    english_words,
    family_names,
    frequent_words,
    given_names,
    glued_frequent_words,
    one_edit,
    slip_of,
)
from pipeline.maths import MATH_WORDS

FILLER_RE = re.compile(
    r"m+-?h+m+|m+-?hm+|mm+|a+-?h+u+h+|u+h+-?h+u+h+|u+h+|u+m+|h+m+|h+u+h+|e+r+m*|o+h+|a+h+|"
    r"o+o+h+|w+h+o+a+|w+o+w+|y+e+a+h*|y+e+p+|n+o+p+e+|o+k+a*y*|o+k+e+y+|a+l+r+i+g+h+t+|u+h+-?o+h+|"
    r"h+u+h+-?u+h+|a+-?h+a+|h+a+(?:h+a+)*|y+a+y+|s+h+|"
    # chat replies the small spaCy model reads as names or places ("nah", "ya", "kinda?"):
    # measured on real tutoring chat, never anybody's name
    r"n+a+h+|y+a+h*|y+u+p+|k+i+n+d+a+|s+o+r+t+a+|g+o+n+n+a+|w+a+n+n+a+|g+o+t+t+a+|i+d+k+|"
    r"l+o+l+|b+r+u+h+|"
    # chat abbreviations ("ty" stays out: Ty is a name)
    r"t+h+x+|t+h+a+n+x+|f+y+i+|e+z+|n+p+|y+e+y+|b+r+b+|o+m+g+|i+k+r+|b+t+w+",
    re.IGNORECASE,
)
# laughter, typed any way: "ahah", "hahah", "hehe", "heh", "lmao", "jaja" (chat, never a name)
LAUGHTER_RE = re.compile(
    r"a?(?:h+[aei]+)+h+|a?(?:h+[aei]+){2,}|l+m+f?a+o+|r+o+f+l+|(?:j+a+){2,}j*|(?:j+e+){2,}", re.IGNORECASE
)
ENDEARMENTS = frozenset(
    """honey hon hun sweetie sweetheart sweetpea sweety sugar darling dear dearie love lovey babe
    baby bud buddy buddies pal kiddo kiddos kid kids champ friend friends folks guys girls boys
    mister missy mijo mija papi mami ladies gentlemen everybody everyone class team maam mam
    sir""".split()  # noqa: SIM905
)
# maths words a classroom uses, lower case; never words that are also common first names
CLASSROOM_MATHS_WORDS = frozenset(
    """cubic isosceles scalene equilateral quadrilateral quadrilaterals heptagon decagon nonagon
    hexagons pentagons octagons trapezoids rhombuses kite kites tessellation array arrays
    multiplier dividends addends minuend subtrahend estimate exploration explorations lesson
    lessons unit chapter worksheet journal manipulatives manipulative cubes tiles
    number model models numberline tenths hundredths expanded standard form notation
    pythagoras euclid archimedes fibonacci pi""".split()  # noqa: SIM905
)
NAME_LIKE_MATHS_WORDS = frozenset({"penny", "mark", "will", "ray", "bill", "sum", "digit"})
MATHS_WORDS = (MATH_WORDS | CLASSROOM_MATHS_WORDS) - NAME_LIKE_MATHS_WORDS
REFERENCE_RE = re.compile(
    r"(?:page|pages|pg\.?|p\.|lesson|exploration|explore|chapter|ch\.|unit|section|problem|"
    r"question|exercise|number|no\.|task|activity|investigation|module|topic|slide|part|step|"
    r"warm-?up|day|week|grade)\s*#?\s*\d+(?:[.\-]\d+)*[A-Za-z]?",
    re.IGNORECASE,
)
ROUTE_RE = re.compile(
    r"(?:I|US|SR|Route|Rt\.?|Highway|Hwy\.?|Interstate)[\s-]?\d{1,3}[A-Z]?", re.IGNORECASE
)
_TITLE = r"(?:mr|mrs|ms|miss|mx|dr|coach|teacher|professor|prof)\.?"
# one letter ("Ms. H", "L."), or two with periods ("J. R."); never "Mr. Le" or "Ms. Wu"
INITIAL_RE = re.compile(rf"(?i:{_TITLE}\s+)?[A-Za-z]\.?(?:\s?[A-Z]\.)?")
_TITLE_BEFORE = re.compile(rf"\b{_TITLE}\s+$", re.IGNORECASE)
_MODAL_MAY = re.compile(
    r"may\s+(?:i|we|you|he|she|they|everyone|somebody|someone)\b", re.IGNORECASE
)
_WORD = re.compile(r"[A-Za-z]+(?:['’-][A-Za-z]+)*")
# closed-class English: a span of only these, in lower case, is grammar, not a name ("has", "the");
# "will" and "may" stay out (names when capitalised, and ASR lower-cases everything)
FUNCTION_WORDS = frozenset(
    """a an the this that these those is are was were be been being has have had do does did am
    i me my mine you your yours he him his she her hers it its we us our they them their what
    which who whom whose where when why how and or but if so of to in on at by for from with as
    into onto than then there here not no""".split()  # noqa: SIM905
)
# a lower-case word after a determiner is a common noun: "a ray", "what is a vertice?", "your naswer"
_DETERMINER_BEFORE = re.compile(
    r"\b(?:a|an|the|this|that|each|every|another|your|my|our|their|its)\s+$", re.IGNORECASE
)
# ... except after the two that also open a clause in lower-case speech ("i think that maya is
# right", "so that jose can see", ASR's "its" for "it's"), where a given name is the subject
_CLAUSE_OPENER_BEFORE = re.compile(r"\b(?:that|its)\s+$", re.IGNORECASE)
# a lower-case word between a request and its object is the verb asked for ("Please recheck your
# answer", "Kindly recheck it.", "Go ahead and recheck."): a name there is followed by its verb or
# a comma ("please maya sit down", "please, maya"), not by the object
# a suggestion says the same: "I suggest you (to) recheck", "I want you to recheck", "you should
# recheck"
_REQUEST_BEFORE = re.compile(
    r"\b(?:please|pls|plz|kindly|go\s+ahead\s+and|(?:try|need|have|remember)\s+to|(?:can|could|would)\s+you"
    r"|(?:suggest|want|advise|like)\s+(?:you|u)(?:\s+to)?|(?:you|u)\s+(?:should|must|ought\s+to))\s+$",
    re.IGNORECASE,
)
_OBJECT_AFTER = re.compile(
    r"\s*(?:[.!?]|$|\s(?:your|ur|the|it|this|that|these|those|my|our|them|with|again|once|all|each|every)\b)",
    re.IGNORECASE,
)
# maths terms that are also names: a common noun after a possessive ("Marqui's ray", "Ana's sum");
# never "mark", "will", "bill" or "penny", which a possessive owns as people too ("Ana's Will")
MATHS_TERMS_LIKE_NAMES = frozenset({"ray", "sum", "digit"})
_POSSESSIVE_BEFORE = re.compile(r"[^\W\d_](?:['’]s|s['’])\s+$")
# the capitals that name a figure: "angle ABC", "the measure of VST", "triangle XYZ", "segment QR"
_FIGURE_BEFORE = re.compile(
    r"\b(?:angles?|triangles?|segments?|lines?|rays?|sides?|vertex|vertices|points?|polygons?|"
    r"quadrilaterals?|rectangles?|squares?|arcs?|planes?|measure\s+of)\s+$|[∠△]\s*$",
    re.IGNORECASE,
)
_FIGURE_LABEL = re.compile(r"[A-Z]{2,4}")
MIN_MISSPELT = 6  # letters: shorter words are one edit from too many others ("ser", "nhw")
# an imperative opens its sentence with its object after it: "Nice try! recheck the sum."
# a lower-case name there is a given name, or a call ("…, who was right?  yuna?")
_SENTENCE_START_BEFORE = re.compile(r"[.!?]\s+$")
_DETERMINER_AFTER = re.compile(r"\s+(?:your|ur|the|this|that|these|those|my|our|its)\b", re.IGNORECASE)
# "you" typed for "your" before a word: "recheck you answer" (read only after an English word)
_YOU_FOR_YOUR = re.compile(r"\s+(?:you|u)\s+[a-z]", re.IGNORECASE)
# a word of three consonants or more and no vowel ("y" counts): a chat abbreviation ("pls", "tbh",
# "nvm") or a keyboard mash, not a name in Latin letters
_NO_VOWEL = re.compile(r"[b-df-hj-np-tv-xz]{3,}")
# a letter three times in a row: a word drawn out ("sooo", "yesss"); names do not triple a letter
_HELD_LETTER = re.compile(r"([a-z])\1{2,}")
KINDS = ("filler", "endearment", "maths_word", "reference", "route", "modal_may", "initial",
         "function_word", "common_noun", "requested_verb", "misspelling", "figure_label", "slip", "glued_words",
         "no_vowel", "drawn_out", "spanish_word")


def _words(piece: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(piece)]


def is_filler(piece: str) -> bool:
    """Every word of the span is a filler: "Mhm", "Ahuh", "Mm-hmm", "uh huh"."""
    words = re.findall(r"[A-Za-z]+(?:-[A-Za-z]+)*", piece)
    return (
        bool(words) and not re.search(r"\d", piece)
        and all(FILLER_RE.fullmatch(w) or is_laughter(w) for w in words)
    )


def is_laughter(word: str) -> bool:
    """One word of laughter, typed any way: "ahah", "hahah", "hehe", "lmao" (:data:`LAUGHTER_RE`)."""
    return LAUGHTER_RE.fullmatch(word) is not None


def is_endearment(piece: str) -> bool:
    """Terms of address, not names: "honey", "hon", "my friends"."""
    words = [w for w in _words(piece) if w not in ("my", "the", "you")]
    return bool(words) and all(w in ENDEARMENTS for w in words)


def is_maths_word(piece: str) -> bool:
    """Every word is maths vocabulary or its plural: "hexagon", "Acute", "cubic units", "math",
    "Parallelograms"."""
    words = _words(piece)
    return bool(words) and not re.search(r"\d", piece) and all(map(_maths_word_or_plural, words))


def _maths_word_or_plural(word: str) -> bool:
    return word in MATHS_WORDS or any(
        word.endswith(ending) and word[: -len(ending)] in MATHS_WORDS for ending in ("s", "es")
    )


@register("junk.span", "8")  # 8: frequent Spanish words, requests capitalised, after "I suggest you to"/"you should", with "you" for "your"; 7: slips of maths words, words without a vowel, drawn-out words; 6: slips of frequent English and chat words, glued frequent words, laughter; 5: a given name after "that"/"its", chat abbreviations, plurals of maths words, figure labels, "need to"; 4: misspelt and glued words, an imperative, a maths term after a possessive, "no", "pi"
def junk_kind(text: str, start: int, end: int, label: str = "NAME") -> str | None:
    """Which kind of classroom junk ``text[start:end]`` is (one of :data:`KINDS`), or ``None``.

    Structured identifiers (EMAIL, PHONE, URL, USERNAME, ID_NUMBER) are never junk: a pattern
    found them, not a guess about a word.
    """
    if label in ("EMAIL", "PHONE", "URL", "USERNAME", "ID_NUMBER"):
        return None
    piece = text[start:end].strip()
    if not piece:
        return None
    if INITIAL_RE.fullmatch(piece):
        return "initial"
    if _TITLE_BEFORE.search(text[max(0, start - 12) : start]):
        return None  # "Mr. Oh", "Ms. Page": a surname, whatever else the word means
    if is_filler(piece):
        return "filler"
    if is_endearment(piece):
        return "endearment"
    if is_maths_word(piece):
        return "maths_word"
    if REFERENCE_RE.fullmatch(piece):
        return "reference"
    if _FIGURE_LABEL.fullmatch(piece) and _FIGURE_BEFORE.search(text[max(0, start - 16) : start]):
        return "figure_label"
    if ROUTE_RE.fullmatch(piece):
        return "route"
    if label != "AGE" and _MODAL_MAY.match(text, start) and not re.search(r"\d", piece):
        return "modal_may"
    if piece.lower() in MATHS_TERMS_LIKE_NAMES and (
        _POSSESSIVE_BEFORE.search(text[max(0, start - 24) : start])
        or _DETERMINER_BEFORE.search(text[max(0, start - 12) : start])
    ):
        return "common_noun"
    if is_glued_function_words(piece):
        return "function_word"
    if piece == piece.lower():
        return _lower_case_kind(text, start, end, piece, label)
    return "requested_verb" if is_requested_verb(text, start, end, piece) else None


def _lower_case_kind(text: str, start: int, end: int, piece: str, label: str) -> str | None:
    """What a lower-case span is, from grammar (a function word, a noun after a determiner, the verb
    of a request) or from the word lists (a misspelling, :func:`lexicon_kind`, a Spanish word), or
    None."""
    if _WORD.fullmatch(piece):
        if piece in FUNCTION_WORDS:
            return "function_word"
        before = text[max(0, start - 12) : start]
        if _DETERMINER_BEFORE.search(before) and not (
            _CLAUSE_OPENER_BEFORE.search(before) and piece in given_names()
        ):
            return "common_noun"
        if is_requested_verb(text, start, end, piece):
            return "requested_verb"
        if label in ("NAME", "LOCATION") and is_misspelt_word(piece):
            return "misspelling"
        if label == "NAME" and piece not in given_names() and piece not in family_names():
            kind = lexicon_kind(piece)
            if kind:
                return kind
    if label == "NAME" and is_spanish_word(piece):
        return "spanish_word"
    return None


def is_requested_verb(text: str, start: int, end: int, piece: str) -> bool:
    """The span is the verb of a request: after its opener (:data:`_REQUEST_BEFORE`: "please",
    "can you", "I suggest you to", "you should") with its object after it (:data:`_OBJECT_AFTER`),
    or opening its sentence with a determiner after it ("Nice try! recheck the sum."). A word in
    lower case that is no given name qualifies ("maya your turn" is a name called); one written
    capitalised ("Recheck your answer."), opening the message, or followed by "you" typed for
    "your" ("recheck you answer") only where it is an English word and no given or family name of
    any locale (:func:`_plain_word`): "Maya your turn", "Mark your answer", "please maya you go"
    stay names."""
    word = piece.lower()
    lower = piece == word
    if not _WORD.fullmatch(piece) or not (lower or piece[:1].isupper() and piece[1:] == word[1:]):
        return False
    plain = _plain_word(word)
    if not lower and not plain:
        return False
    you_for_your = plain and _YOU_FOR_YOUR.match(text, end) is not None
    if _REQUEST_BEFORE.search(text[max(0, start - 24) : start]):
        return bool(_OBJECT_AFTER.match(text, end)) or you_for_your
    opens = _SENTENCE_START_BEFORE.search(text[max(0, start - 4) : start]) or (plain and not text[:start].strip())
    return bool(opens) and (
        _DETERMINER_AFTER.match(text, end) is not None and (plain or word not in given_names()) or you_for_your
    )


def _plain_word(word: str) -> bool:
    """An English word (or one with "re-": "recheck", or hyphenated: "double-check") that is no
    given or family name of any locale."""
    words = english_words()
    known = word in words or word[:2] == "re" and word[2:] in words or (
        "-" in word and all(part in words for part in word.split("-")))
    return known and word not in given_names() and word not in family_names()


def lexicon_kind(word: str) -> str | None:
    """What the word lists and the word's shape say a lower-case NAME that is no known given or
    family name is: ``slip``, a close misspelling of a frequent English, chat or maths word
    ("gona", "alreda", "aight", "divizion": :func:`pipeline.filters.vocabulary.slip_of`),
    ``glued_words``, two frequent words typed without the space ("rightcause"), ``no_vowel``
    (:data:`_NO_VOWEL`), ``drawn_out`` (:func:`is_drawn_out`), or None."""
    if _NO_VOWEL.fullmatch(word):
        return "no_vowel"
    if is_drawn_out(word):
        return "drawn_out"
    if slip_of(word):
        return "slip"
    if glued_frequent_words(word):
        return "glued_words"
    return None


def is_drawn_out(word: str) -> bool:
    """A letter held down (:data:`_HELD_LETTER`: "sooo", "ammmm", "yesss"), and the word with each
    run cut to one or two letters is no given or family name ("mayaaa" is Maya called out), or cut
    to one is a frequent word and no given name ("sooo" is "so" before it is "Soo")."""
    if not _HELD_LETTER.search(word):
        return False
    once, twice = (_HELD_LETTER.sub(r"\1" * n, word) for n in (1, 2))
    if once in frequent_words():
        return True
    return not {once, twice} & (given_names() | family_names())


def is_glued_function_words(piece: str) -> bool:
    """Two function words typed without the space, either case: "Whatis 60-4?", "thatis", "Thisis".
    Both parts have two letters or more ("Ian", "Isa" and "Ana" are not "i an", "is a", "an a"),
    and no given name or a slip from one qualifies ("Asher", "Hasan", "Sheby")."""
    word = piece.lower()
    if len(word) < 5 or not word.isalpha():
        return False
    glued = any(word[:i] in FUNCTION_WORDS and word[i:] in FUNCTION_WORDS for i in range(2, len(word) - 1))
    return glued and not _near_given_name(word)


def _near_given_name(word: str) -> bool:
    """``word`` is a given name or one typing slip from one ("sheby" for "Shelby")."""
    names = given_names()
    return word in names or bool(one_edit(word) & names)


def is_misspelt_word(word: str) -> bool:
    """A lower-case word one typing slip from a common English word and from no given name:
    "tomorow", "ovious", "deffort", "fishis". A name written in lower case is a name first:
    anything one edit from any of Faker's ~20,000 first names stays ("jeremah", "aiden"), and so
    does a word shorter than :data:`MIN_MISSPELT` letters. A correctly spelt word is left to the
    other rules: the shipped lexicon also files rarer given names as words."""
    if len(word) < MIN_MISSPELT or not word.isalpha() or not word.islower():
        return False
    names, english = given_names(), english_words()
    if not names or not english or word in names or word in english:
        return False
    near = one_edit(word)
    return not (near & names) and any(len(w) >= MIN_MISSPELT - 1 and w in english for w in near)


_AT = re.compile(r"@|\s(?:at|\(at\)|\[at\])\s", re.IGNORECASE)


@register("junk.malformed_identifier", "1")
def is_malformed_identifier(text: str, start: int, end: int, label: str) -> bool:
    """A structured identifier a model guessed that cannot be one: an e-mail address without an
    "@" (or a spelt-out " at "), a web address without a dot or slash, a user name that is a
    lower-case function word ("commas" as an e-mail, "the" as a user name). Patterns never find
    these; a tagger reading an odd word does."""
    piece = text[start:end].strip()
    if label == "EMAIL":
        return not _AT.search(piece)
    if label == "URL":
        return "." not in piece and "/" not in piece
    if label == "USERNAME":
        return piece in FUNCTION_WORDS
    return False


def is_junk(text: str, start: int, end: int, label: str = "NAME") -> bool:
    return junk_kind(text, start, end, label) is not None
