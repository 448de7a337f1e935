"""Entity policies: what the tuned Presidio preset keeps of each entity Presidio finds.

Each policy is a registered, versioned filter (``presidio.<policy>``) that a preset lists in its
``filters`` (:mod:`pipeline.detectors.presidio.presets`); the detector applies the listed ones, in
the order of :data:`ENTITY_STAGE`, :data:`SPAN_STAGE` and :data:`NAME_STAGE`, to every
:class:`Candidate`. A policy returns the candidate (changed or not) to go on, a ``settled`` one to
end its stage with that answer, or ``None`` to drop it. ``uses`` names the registered filters a
policy applies, which the detector records with its own.

The cue checks that belong to the rules detector (an identifier cue, a birthday, an age, a
personal URL) reach a policy as functions on the candidate (:class:`Cues`), so this floor never
imports a detector.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pipeline.filters import register
from pipeline.filters.anchor import in_anchor
from pipeline.filters.junk import is_junk
from pipeline.filters.name_filters import (
    crosses_sentence,
    handle_like,
    in_name_slot,
    is_addressed,
    is_common_word,
    is_word_problem_character,
    last_sentence_start,
    not_a_name,
)
from pipeline.maths import in_math_context, is_placeholder

_NUMBERISH = re.compile(r"\d")
# dates that are also first names, read as a name when someone is addressed by them
NAME_LIKE_DATES = frozenset({"april", "may", "june", "july", "august", "autumn", "summer", "winter"})
# number-shaped entities that misfire on maths: kept only next to an identifier cue
ID_CUE_ENTITIES: tuple[str, ...] = (
    "US_DRIVER_LICENSE",
    "US_BANK_NUMBER",
    "US_PASSPORT",
    "US_ITIN",
    "CREDIT_CARD",
    "US_SSN",
)


@dataclass(frozen=True)
class Cues:
    """The rules detector's cue checks on one message, as the policies call them."""

    id_cue: Callable[[int, int], bool]  # an identifier cue around start..end ("student id 4815")
    birthday: Callable[[int, int], bool]  # a birthday mention, or the reply to a birthday question
    age_at: Callable[[int, int], tuple[int, int] | None]  # the participant's age overlapping, if any
    personal_url: Callable[[int, int], bool]  # a URL that is somebody's, not a resource site


@dataclass(frozen=True)
class Candidate:
    """One Presidio result in its message, on its way through the policies."""

    text: str
    start: int
    end: int
    entity: str  # Presidio's entity type
    label: str  # the project label it maps to so far
    cues: Cues
    policies: frozenset[str]  # the policies the preset applies (some consult each other)
    doc: Any = None  # the spaCy tokens of the message
    anchor_low: str = ""  # the dialogue's anchor, lower-cased
    settled: bool = False  # a policy gave the stage's answer: the stage's later ones are skipped
    character: bool = False  # a word-problem character (the dialogue drops it unless present)

    @property
    def chunk(self) -> str:
        return self.text[self.start : self.end]


Policy = Callable[[Candidate], "Candidate | None"]


def _policy(name: str, version: str, uses: tuple[str, ...] = ()) -> Callable[[Policy], Policy]:
    def decorator(fn: Policy) -> Policy:
        fn.uses = uses  # type: ignore[attr-defined]
        return register(name, version)(fn)

    return decorator


@_policy("presidio.addressed_names", "1", uses=("name.addressed", "name.slot"))
def addressed_names(c: Candidate) -> Candidate | None:
    """A NORP or month-like DATE_TIME someone is spoken to with is a name ("Sit down, April.",
    "Remember, Christian, …"), and so is a NORP in a name slot ("is Anh in our group?");
    otherwise NORP is dropped."""
    if not (c.entity == "NRP" or c.entity == "DATE_TIME" and c.chunk.lower() in NAME_LIKE_DATES):
        return c
    named = is_addressed(c.text, c.start, c.end) or (
        c.entity == "NRP" and c.doc is not None and in_name_slot(c.doc, c.start, c.end)
    )
    return replace(c, label="NAME", settled=True) if named else None


@_policy("presidio.birthday_dates", "1")
def birthday_dates(c: Candidate) -> Candidate | None:
    """DATE_TIME counts only as a birthday (a cue, or the reply to a birthday question, never a
    third-person word problem), as an age ("I'm 11") or, under ``presidio.cued_ids``, as a cued
    id: spaCy calls every number a date."""
    if c.entity != "DATE_TIME":
        return c
    if c.cues.birthday(c.start, c.end):
        return replace(c, settled=True)
    if (
        "presidio.cued_ids" in c.policies
        and len(_NUMBERISH.findall(c.chunk)) >= 4
        and c.cues.id_cue(c.start, c.end)
    ):
        return replace(c, label="ID_NUMBER", settled=True)
    age = c.cues.age_at(c.start, c.end)
    return None if age is None else replace(c, start=age[0], end=age[1], label="AGE", settled=True)


@_policy("presidio.cued_ids", "1")
def cued_ids(c: Candidate) -> Candidate | None:
    """Driver's licence, bank number, passport, ITIN, SSN and credit card only next to an
    identifier cue ("student id", "account #", or a reply to "what's your student ID?")."""
    if c.entity not in ID_CUE_ENTITIES:
        return c
    return replace(c, settled=True) if c.cues.id_cue(c.start, c.end) else None


@_policy("presidio.maths", "1", uses=("maths.context", "cue.pii"))
def maths(c: Candidate) -> Candidate | None:
    """Every other number-like candidate must pass :func:`pipeline.maths.in_math_context` (the
    detector also drops a long number the dialogue uses as maths when it is echoed)."""
    if _NUMBERISH.search(c.chunk) and in_math_context(c.text, c.start, c.end):
        return None
    return c


@_policy("presidio.junk", "1", uses=("junk.span",))
def junk(c: Candidate) -> Candidate | None:
    """Classroom junk (:mod:`pipeline.filters.junk`): fillers, endearments, maths words, "page
    177", "Ms. H"."""
    return None if is_junk(c.text, c.start, c.end, c.label) else c


@_policy("presidio.personal_urls", "1")
def personal_urls(c: Candidate) -> Candidate | None:
    """URLs only when personal (the rules detector's URL policy)."""
    return None if c.entity == "URL" and not c.cues.personal_url(c.start, c.end) else c


@_policy("presidio.placeholders", "1", uses=("placeholder.text",))
def placeholders(c: Candidate) -> Candidate | None:
    """A name spaCy ran across a sentence end keeps its last sentence ("Student K.  Bradley"); a
    handle is a ``USERNAME`` ("lilmagdalena43"); placeholders ("Student A", "[STUDENT]"), maths
    words and fillers, and spans crossing a sentence are dropped."""
    c = replace(c, start=c.start + last_sentence_start(c.chunk))
    chunk = c.chunk
    if _NUMBERISH.search(chunk) and handle_like(chunk):
        return replace(c, label="USERNAME", settled=True)  # a login, not a person
    if is_placeholder(chunk) or not_a_name(chunk) or crosses_sentence(chunk):
        return None
    return c


@_policy("presidio.common_words", "1", uses=("name.common_word",))
def common_words(c: Candidate) -> Candidate | None:
    """One-word common words by POS tag are dropped, unless someone is spoken to with them."""
    if c.doc is not None and is_common_word(c.doc, c.start, c.end) and not is_addressed(c.text, c.start, c.end):
        return None
    return c


@_policy("presidio.anchor", "1", uses=("anchor.phrase",))
def anchor(c: Candidate) -> Candidate | None:
    """Names from the dialogue's anchor (the word problem) are dropped."""
    return None if c.anchor_low and in_anchor(c.chunk, c.anchor_low) else c


@_policy("presidio.word_problems", "1", uses=("name.word_problem_character",))
def word_problems(c: Candidate) -> Candidate | None:
    """A word-problem character ("Alex has 5 apples") is marked: the dialogue drops it
    everywhere unless it is someone present."""
    if is_word_problem_character(c.text, c.start, c.end):
        return replace(c, character=True)
    return c


# The order in which the detector applies the listed policies, stage by stage.
ENTITY_STAGE: tuple[str, ...] = (
    "presidio.addressed_names", "presidio.birthday_dates", "presidio.cued_ids", "presidio.maths",
)
SPAN_STAGE: tuple[str, ...] = ("presidio.junk", "presidio.personal_urls")
NAME_STAGE: tuple[str, ...] = (
    "presidio.placeholders", "presidio.common_words", "presidio.anchor", "presidio.word_problems",
)
