"""``speakers``: the mentions of a dialogue's named speakers, marked as NAME suggestions.

A classroom transcript that labels its turns "Caleb" or "Ms. Carroll" has just told us who is in
the room, and the texts mention them ("Caleb, talk to me.", "ms carroll can you help"); a tagger
that has never seen the name may miss it, an annotator should not have to. Every speaker label
that names someone (:func:`pipeline.speakers.speaker_name`; role labels such as "T", "SS",
"Student 3" name nobody) is looked for in every message of its dialogue with its parts:

- the whole name, its title written with or without a dot or space ("Ms. Carroll", "Ms.Carroll",
  "Ms Carroll");
- for a name of several words, each word ("Maria Lopez" → "Maria", "Lopez"; "Smith-Jones" →
  "Smith", "Jones"); for a titled name, its surname and the title with the surname ("Ms. Maria
  Lopez" → "Ms. Lopez").

Matching is word-bounded and blind to case, accents and apostrophes (:func:`pipeline.text.fold`:
"jose" finds "José"); a possessive keeps its name ("Caleb's" marks "Caleb"). A name or part made
only of common words ("Will", "May", "Rose": :func:`pipeline.filters.vocabulary.is_common_word`)
is marked only where it is written as a name: with a capital, not at the start of a sentence
("May I go?" is a question, "thanks, May" is May).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pipeline.detectors.base import BaseDetector, ConfigError
from pipeline.filters.vocabulary import is_common_word
from pipeline.registry import register
from pipeline.speakers import TITLE_RE, named_speakers, role_words
from pipeline.text import fold
from pipeline.types import Detection, Dialogue, Span

SCORE = 0.9  # a speaker's name is strong evidence, but the same word may name someone else
_PIECE_RE = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")
_SENTENCE_ENDS = frozenset(".!?:;\"“(")


@dataclass(frozen=True, slots=True)
class Mention:
    """One way a speaker's name is written: a pattern over folded text, and whether it is made
    of common words only (then it counts only where it is written as a name)."""

    pattern: re.Pattern[str]
    weak: bool


def _words_pattern(words: Sequence[str], title: str = "") -> re.Pattern[str]:
    """Folded ``words`` in a row, word-bounded, any spacing between them; a title before them
    with or without its dot and space."""
    body = r"\s+".join(re.escape(w) for w in words)
    if title:
        body = re.escape(title) + r"(?:\.\s*|\s+)" + body
    return re.compile(r"(?<![^\W_])" + body + r"(?![^\W_])")


def mentions(name: str) -> list[Mention]:
    """The ways ``name`` (a speaker's name, as :func:`~pipeline.speakers.speaker_name` writes it)
    may be written in a text: the whole name, then its parts."""
    title = TITLE_RE.match(name + " ")
    rest = fold(name[title.end():] if title else name)
    title_word = fold(title.group("title")).rstrip(".") if title else ""
    pieces = list(dict.fromkeys(p for p in _PIECE_RE.findall(rest) if len(p) >= 2))
    if not pieces:
        return []
    weak = not title_word and all(is_common_word(p) for p in pieces)
    out = [Mention(_words_pattern(rest.split(), title_word), weak)]
    if len(pieces) > 1 or title_word:
        out += [Mention(_words_pattern([p]), is_common_word(p)) for p in pieces]
    if title_word and len(pieces) > 1:
        out.append(Mention(_words_pattern([pieces[-1]], title_word), False))
    return out


@lru_cache(maxsize=1024)
def _dialogue_mentions(names: tuple[str, ...]) -> tuple[Mention, ...]:
    """Every mention of the dialogue's named speakers (dialogues share their casts)."""
    return tuple(m for name in names for m in mentions(name))


def _written_as_name(text: str, start: int) -> bool:
    """A capital, and not the first word of a sentence: "thanks, May", not "May I go?"."""
    if not text[start].isupper():
        return False
    before = text[:start].rstrip()
    return bool(before) and "\n" not in text[len(before):start] and before[-1] not in _SENTENCE_ENDS


def find_mentions(text: str, found: Sequence[Mention]) -> list[tuple[int, int]]:
    """Where ``text`` mentions a speaker: the longest mention wins where two overlap."""
    folded = fold(text)
    hits = [(m.start(), m.end()) for mention in found for m in mention.pattern.finditer(folded)
            if not mention.weak or _written_as_name(text, m.start())]
    chosen: list[tuple[int, int]] = []
    for start, end in sorted(set(hits), key=lambda h: (h[0] - h[1], h[0])):
        if all(end <= s or start >= e for s, e in chosen):
            chosen.append((start, end))
    return sorted(chosen)


class SpeakersDetector(BaseDetector):
    """NAME on the mentions of the dialogue's named speakers."""

    name = "speakers"
    version = "1"
    defaults: Mapping[str, Any] = {
        "roles": None,  # the project's role words; None: pipeline.speakers.DEFAULT_ROLE_LABELS
    }

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        roles = self.config["roles"]
        if roles is not None and (
            isinstance(roles, str) or not isinstance(roles, Sequence) or not all(isinstance(r, str) for r in roles)
        ):
            raise ConfigError(f"speakers: roles must be a list of words, got {roles!r}")
        self._roles = role_words(roles)

    def detect(self, dialogue: Dialogue) -> list[Detection]:
        names = named_speakers((m.speaker for m in dialogue.messages if m.speaker), self._roles)
        found = _dialogue_mentions(tuple(sorted(set(names.values()))))
        return [
            Detection(dialogue.id, m.index, tuple(
                Span(s, e, "NAME", SCORE, "speakers") for s, e in find_mentions(m.text, found)
            ) if found else ())
            for m in dialogue.messages
        ]


@register("speakers", "NAME on the mentions of the dialogue's named speakers (speaker labels).")
def build_speakers(config: Mapping[str, Any]) -> SpeakersDetector:
    return SpeakersDetector(config)
