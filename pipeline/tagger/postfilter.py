"""The maths-aware post-filter: what data alone does not teach the tagger.

Applied to the tagger's spans of one message, with the dialogue around it:

- a span holding digits (other than an e-mail, URL or username) is dropped when it is maths —
  part of an equation, fraction, calculation, time, amount of money or measurement
  (:func:`pipeline.maths.in_math_context`), or a bare number answering a maths question from the
  messages before, unless they asked for a personal detail (phone, id, age …), or a reference
  into the material ("page 49", "problem 12"), or an arithmetic run ("40-60-80-100");
- an age ("I'm 12 years old") survives the measurement rule unless the message is a calculation
  (another number or an operator beside it) — ``N years old`` is both a quantity and an age;
- an id of fewer than four letters and digits with no PII cue ("37and52", "E54") is dropped;
- a name holds no digits: a NAME span with words and numbers keeps its longest stretch between
  the numbers, unless that is junk ("Okay.  193,700" is a filler and a quantity, "Maria 5" is
  "Maria");
- a phone number of fewer than seven digits with no PII cue ("it's 504, not 503") is dropped;
- a month alone as a DATE_OF_BIRTH ("In March, Tom saved $40", "june" as an answer) is dropped
  unless a birth cue ("birthday", "born", "when is your …") is in its message or the two before
  (:mod:`pipeline.filters.months`);
- a span of only numbers is a NAME, SCHOOL or COURSE only as the number of a capitalised name
  right before it, which then joins the span ("IS 384", "MTH 250"); otherwise ("Uh-huh. 58.",
  "there are 83 adults") it is dropped;
- a number is an AGE only with evidence of one: "I'm 12", "turning 9", "12 years old", an age
  word in the message ("birthday", "old"), a question about age just before, a PII cue, or a
  capitalised name right before it (a mislabelled "IS 70"); "I got 15" and "this is 13" are
  answers;
- already-anonymised placeholders (``Student A``, ``[STUDENT]``) and spans inside them are not
  PII, and neither is classroom junk (:mod:`pipeline.filters.junk`): fillers, endearments, maths
  words, page and lesson references, road names, the modal "May", de-identified initials;
  nor a structured identifier that cannot be one (an e-mail without "@", a URL without a dot or
  slash, a function word as a user name);
- under the ``strict`` policy a name or place that occurs in the dialogue's anchor text (the word
  problem) is a problem character or place and is dropped; under ``recall_first`` it stays
  (potential PII);
- a name the dialogue's own talk uses as a word-problem character ("Alex has 5 apples and he
  eats 3", "How many laps did Priya swim?") or as the character of a quoted worksheet question
  ("Which equation shows that Priya's answer is incorrect?") and never as someone taking part is
  dropped in every message (:func:`filter_dialogue`; the same rule as the tuned Presidio preset's),
  and so is a place a maths problem travels to or counts ("A train leaves Chicago at 60 miles per
  hour") that no one's first-person sentence names ("I live in Chicago"), labelled LOCATION or, read
  as a place and no given name, SCHOOL or NAME ("drives 40 miles to Dayton").
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.filters.anchor import anchor_words, is_anchor_name
from pipeline.filters.cues import has_age_evidence, is_short_uncued_id
from pipeline.filters.junk import is_junk, is_malformed_identifier
from pipeline.filters.maths import (
    TEXTUAL_LABELS,
    is_math_number,
    is_number_sequence,
    is_reference,
)
from pipeline.filters.months import is_month_without_birth_cue
from pipeline.filters.name_filters import story_characters, story_places
from pipeline.filters.placeholder import is_placeholder_span
from pipeline.maths import has_pii_cue
from pipeline.tagger.encoding import trim_edges
from pipeline.types import Dialogue, Span

__all__ = [
    "POLICIES",
    "POLICY_FILTERS",
    "TEXTUAL_LABELS",
    "anchor_words",
    "filter_dialogue",
    "filter_spans",
    "has_age_evidence",
    "is_math_number",
    "is_number_sequence",
    "is_placeholder_span",
    "is_reference",
    "named_number_start",
]

POLICIES = ("strict", "recall_first")
# the registered filters (pipeline.filters) each policy applies, in order
POLICY_FILTERS: dict[str, tuple[str, ...]] = {
    "recall_first": (
        "placeholder.span",
        "junk.span",
        "junk.malformed_identifier",
        "maths.number",
        "cue.age_evidence",
        "cue.pii",
        "cue.short_id",
        "date.month_alone",
        "name.story_characters",
        "name.story_places",
    ),
    "strict": (
        "placeholder.span",
        "junk.span",
        "junk.malformed_identifier",
        "maths.number",
        "cue.age_evidence",
        "cue.pii",
        "cue.short_id",
        "date.month_alone",
        "anchor.words",
        "name.story_characters",
        "name.story_places",
    ),
}
_DIGIT = re.compile(r"\d")
NEVER_NUMERIC = frozenset({"NAME", "SCHOOL", "COURSE"})
_LETTER = re.compile(r"[^\W\d_]")
_NAME_BEFORE = re.compile(r"(?<![\w.])[A-Z][A-Za-z]*\.?\s+$")
_DIGIT_WORD = re.compile(r"\S*\d\S*")


def named_number_start(text: str, start: int) -> int | None:
    """Where the capitalised word right before a number starts ("IS 384", "MTH 250"), or None."""
    lo = max(0, start - 24)
    m = _NAME_BEFORE.search(text[lo:start])
    return lo + m.start() if m else None


def name_without_numbers(text: str, span: Span) -> Span | None:
    """A name holds no digits: the longest stretch of the NAME ``span`` between its digit-bearing
    words, trimmed; ``None`` when no stretch has a letter or the stretch is junk."""
    stretches, lo = [], span.start
    for m in _DIGIT_WORD.finditer(text, span.start, span.end):
        stretches.append((lo, m.start()))
        lo = m.end()
    stretches.append((lo, span.end))
    trimmed = [t for t in (trim_edges(text, a, b) for a, b in stretches) if t and _LETTER.search(text[t[0]:t[1]])]
    if not trimmed:
        return None
    start, end = max(trimmed, key=lambda t: t[1] - t[0])
    if is_junk(text, start, end, span.label):
        return None
    return Span(start, end, span.label, span.score, span.source)


def filter_spans(
    dialogue: Dialogue,
    index: int,
    spans: Sequence[Span],
    *,
    policy: str = "recall_first",
    anchor_vocab: frozenset[str] | None = None,
) -> list[Span]:
    """The spans of message ``index`` that survive the post-filter under ``policy``."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r}; use one of {', '.join(POLICIES)}")
    text = dialogue.messages[index].text
    previous = [m.text for m in dialogue.messages[max(0, index - 2) : index]]
    if anchor_vocab is None:
        anchor_vocab = anchor_words(dialogue.anchor)
    kept = []
    for span in spans:
        if (
            is_placeholder_span(text, span.start, span.end)
            or is_junk(text, span.start, span.end, span.label)
            or is_malformed_identifier(text, span.start, span.end, span.label)
        ):
            continue
        if (
            is_math_number(text, span.start, span.end, span.label, previous)
            or is_short_uncued_id(text, span.start, span.end, span.label)
            or is_month_without_birth_cue(text, span.start, span.end, span.label, previous)
        ):
            continue
        piece = text[span.start : span.end]
        if span.label in NEVER_NUMERIC and not _LETTER.search(piece):
            named = named_number_start(text, span.start)
            if named is None:
                continue
            span = Span(named, span.end, span.label, span.score, span.source)
        elif span.label == "NAME" and _DIGIT.search(piece):
            span = name_without_numbers(text, span)
            if span is None:
                continue
        elif (
            span.label == "AGE"
            and _DIGIT.search(piece)
            and not has_age_evidence(text, span.start, span.end, previous)
            and not has_pii_cue(text, span.start, span.end)
            and named_number_start(text, span.start) is None
        ):
            continue
        if (
            policy == "strict"
            and span.label in ("NAME", "LOCATION")
            and anchor_vocab
            and is_anchor_name(text[span.start : span.end], anchor_vocab)
        ):
            continue
        kept.append(span)
    return kept


def filter_dialogue(
    dialogue: Dialogue, spans: Sequence[Sequence[Span]], *, policy: str = "recall_first"
) -> list[list[Span]]:
    """Every message's ``spans`` through :func:`filter_spans`, then the dialogue's word-problem
    characters (:func:`pipeline.filters.name_filters.story_characters`) and the places of its
    maths problems (:func:`pipeline.filters.name_filters.story_places`: "A train leaves Chicago at
    60 miles per hour") dropped wherever they are named: whether "Mike" is a story's or a
    student's, or "Chicago" a problem's or someone's home, is known only from the whole dialogue."""
    vocab = anchor_words(dialogue.anchor)
    kept = [
        filter_spans(dialogue, k, found, policy=policy, anchor_vocab=vocab)
        for k, found in enumerate(spans)
    ]
    filters = POLICY_FILTERS[policy]
    characters = story_characters(dialogue, kept) if "name.story_characters" in filters else set()
    places = story_places(dialogue, kept) if "name.story_places" in filters else {}
    dropped = {label: set(words) for label, words in places.items()}
    dropped["NAME"] = dropped.get("NAME", set()) | characters
    if not any(dropped.values()):
        return kept
    return [
        [s for s in found if m.text[s.start : s.end].lower() not in dropped.get(s.label, ())]
        for m, found in zip(dialogue.messages, kept, strict=True)
    ]
