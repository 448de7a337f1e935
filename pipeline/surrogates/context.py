"""The consistency scope a surrogate is drawn in, and the context each generator receives.

A :class:`Scope` is one dialogue (the default) or the whole corpus. It remembers every original it
has mapped and every *part* of one (a first name, a surname, a school's stem, a city), so "Fred",
"Fred Luther" and "fred.luther@gmail.com" all reuse the same surrogate for "fred": similar
originals get similar surrogates and the same original always gets the same one.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from pipeline.surrogates.keyed import (
    KeyedRandom,
    forbidden_in_any_case,
    normalize,
    within_one_edit,
)

MAX_ATTEMPTS = 40


class SurrogateFailure(RuntimeError):
    """No acceptable surrogate was found; the caller falls back (offline → tag)."""


@dataclass
class Scope:
    """Everything mapped so far in one consistency scope."""

    seed: str
    values: dict[str, tuple[str, str, str]] = field(
        default_factory=dict
    )  # norm -> (label, surrogate, method)
    parts: dict[tuple[str, str], str] = field(
        default_factory=dict
    )  # (kind, norm part) -> surrogate part
    used_parts: dict[str, set[str]] = field(
        default_factory=dict
    )  # kind -> normalized surrogate parts
    used_values: set[str] = field(default_factory=set)


@dataclass
class GenContext:
    """What a generator may use: keyed randomness, the scope's part maps and the forbidden set."""

    keyed: KeyedRandom
    scope: Scope
    label: str
    attempt: int
    forbidden: Callable[[str], bool]
    date_offset: int = 0
    created: list[tuple[str, str, str]] = field(default_factory=list)

    def rng(self, *parts: object) -> random.Random:
        return self.keyed.rng(self.scope.seed, self.label, *parts, self.attempt)

    def part(self, kind: str, original: str, propose: Callable[[random.Random], str]) -> str:
        """The scope's surrogate for one part of an original (consistent, never close to it).

        ``propose`` draws a candidate from a generator; a candidate is refused when it is within
        one edit of the original part, is itself an original PII string (or part) of the corpus,
        or is already the surrogate of another part of the same kind.
        """
        key = normalize(original)
        if not key:
            return original
        hit = self.scope.parts.get((kind, key))
        if hit is not None:
            return hit
        used = self.scope.used_parts.setdefault(kind, set())
        for k in range(MAX_ATTEMPTS):
            cand = propose(self.keyed.rng(self.scope.seed, "part", kind, key, self.attempt, k))
            ck = normalize(cand)
            # a one- or two-character part (an initial, "7" in "lilpaul7") can only differ; the
            # whole value it belongs to is still held to the edit-distance rule
            close = ck == key if len(key) <= 2 else within_one_edit(ck, key)
            if not ck or close or ck in used or forbidden_in_any_case(self.forbidden, cand):
                continue
            self.scope.parts[(kind, key)] = cand
            used.add(ck)
            self.created.append((kind, key, ck))
            return cand
        raise SurrogateFailure(f"no {kind} surrogate for a part of length {len(key)}")

    def rollback(self) -> None:
        """Forget the parts this attempt created (its value was refused), so the next can differ."""
        for kind, key, ck in self.created:
            self.scope.parts.pop((kind, key), None)
            self.scope.used_parts.get(kind, set()).discard(ck)
        self.created.clear()

    def mapped_part(self, kind: str, original: str) -> str | None:
        return self.scope.parts.get((kind, normalize(original)))
