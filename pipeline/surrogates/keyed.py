"""Small building blocks every surrogate strategy shares.

- :class:`KeyedRandom` — a ``random.Random`` seeded by HMAC-SHA256 of a secret key and a purpose,
  so the same key reproduces a release and nobody without the key can recompute (or invert) it;
- :func:`normalize` — the consistency key of an original ("Maria's", " MARIA " → ``maria``);
- :func:`within_one_edit` — the "never within edit distance 1" test, in linear time;
- :func:`case_pattern` / :func:`apply_case` — restore the original's casing on a surrogate.
"""

from __future__ import annotations

import hashlib
import hmac
import random
import re
from collections.abc import Callable

from pipeline.text import fold

_SPACE_RE = re.compile(r"\s+")
_EDGE_PUNCT = " \t\n\r\"“”‘'’`.,;:!?()[]{}<>"


class SurrogateKeyError(ValueError):
    """The surrogate key is missing or too short."""


class KeyedRandom:
    """Deterministic randomness derived from a secret key.

    ``rng("name", "d1", "fred", 0)`` always yields the same generator for the same key and parts,
    and different keys give unrelated generators. The key is passed in by the caller (the settings
    read ``BLINDSPOT_SURROGATE_KEY``); this module never reads the environment.
    """

    __slots__ = ("_key",)

    def __init__(self, key: str | bytes) -> None:
        raw = key.encode("utf-8") if isinstance(key, str) else bytes(key)
        if len(raw) < 8:
            raise SurrogateKeyError(
                "the surrogate key must be at least 8 bytes; set BLINDSPOT_SURROGATE_KEY"
            )
        self._key = raw

    def digest(self, *parts: object) -> bytes:
        msg = "\x1f".join(str(p) for p in parts).encode("utf-8")
        return hmac.new(self._key, msg, hashlib.sha256).digest()

    def rng(self, *parts: object) -> random.Random:
        return random.Random(int.from_bytes(self.digest(*parts), "big"))

    def fingerprint(self) -> str:
        """A short, non-reversible id of the key (recorded in manifests to tell keys apart)."""
        return hmac.new(self._key, b"blindspot-key-fingerprint", hashlib.sha256).hexdigest()[:12]

    def __repr__(self) -> str:  # never print the key
        return f"<KeyedRandom {self.fingerprint()}>"


def strip_possessive(text: str) -> tuple[str, str]:
    """Split ``"Maria's"`` into ``("Maria", "'s")`` and ``"Jones'"`` into ``("Jones", "'")``."""
    if len(text) >= 4 and text[-2] in "'’" and text[-1] in "sS":
        return text[:-2], text[-2:]
    if len(text) >= 4 and text[-1] in "'’" and text[-2] in "sS":
        return text[:-1], text[-1:]
    return text, ""


def normalize(text: str) -> str:
    """The consistency key of an original: lower case without accents, single spaces, no edge
    punctuation or possessive ("José's" and "JOSE" are one person)."""
    text = _SPACE_RE.sub(" ", text).strip(_EDGE_PUNCT)
    text, _ = strip_possessive(text)
    return fold(text.strip(_EDGE_PUNCT)).casefold()


def compact(text: str) -> str:
    """Only letters and digits, lower case: how phones, e-mails and ids are also compared."""
    return "".join(ch for ch in text.casefold() if ch.isalnum())


def within_one_edit(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` are equal or one insertion, deletion or substitution apart."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la > lb:
        a, b, la, lb = b, a, lb, la
    i = 0
    while i < la and a[i] == b[i]:
        i += 1
    if la == lb:
        return a[i + 1 :] == b[i + 1 :]
    return a[i:] == b[i + 1 :]


def case_pattern(text: str) -> str:
    """``lower``, ``upper``, ``title`` or ``mixed`` (by the letters of ``text``)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return "mixed"
    if all(c.islower() for c in letters):
        return "lower"
    if all(c.isupper() for c in letters) and len(letters) > 1:
        return "upper"
    words = [w for w in re.split(r"[\s\-]+", text) if any(c.isalpha() for c in w)]
    if words and all(_first_alpha(w).isupper() for w in words):
        return "title"
    return "mixed"


def _first_alpha(word: str) -> str:
    return next((c for c in word if c.isalpha()), "")


def apply_case(surrogate: str, pattern: str) -> str:
    if pattern == "lower":
        return surrogate.lower()
    if pattern == "upper":
        return surrogate.upper()
    if pattern == "title":
        return re.sub(
            r"[A-Za-z][\w'’]*",
            lambda m: m.group()[0].upper() + m.group()[1:],
            surrogate,
        )
    return surrogate


def shape_copy(text: str, rng: random.Random, *, keep: str = "") -> str:
    """Digit for digit and letter for letter (same case); everything else, and ``keep``, is kept."""
    out = []
    for ch in text:
        if ch in keep:
            out.append(ch)
        elif ch.isdigit():
            out.append(str(rng.randrange(10)))
        elif ch.isalpha():
            letter = chr(ord("a") + rng.randrange(26))
            out.append(letter.upper() if ch.isupper() else letter)
        else:
            out.append(ch)
    return "".join(out)


def forbidden_in_any_case(forbidden: Callable[[str], bool], text: str) -> bool:
    """``forbidden`` for ``text`` in any casing the release may give it ("may 29" → "May 29").

    A :class:`~pipeline.surrogates.engine.ForbiddenIndex` already ignores case; any other
    callable is asked about the usual casings.
    """
    if getattr(forbidden, "ignores_case", False):
        return forbidden(text)
    return any(forbidden(v) for v in {text, text.lower(), text.upper(), apply_case(text, "title")})
