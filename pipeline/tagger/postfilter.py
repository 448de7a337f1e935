"""The maths-aware post-filter: what data alone does not teach the tagger.

Applied to the tagger's spans of one message, with the dialogue around it:

- a span holding digits (other than an e-mail, URL or username) is dropped when it is maths —
  part of an equation, fraction, calculation, time, amount of money or measurement
  (:func:`pipeline.maths.in_math_context`), or a bare number answering a maths question from the
  messages before, unless they asked for a personal detail (phone, id, age …), or a reference
  into the material ("page 49", "problem 12"), or an arithmetic run ("40-60-80-100");
- an age ("I'm 12 years old") survives the measurement rule unless the message is a calculation
  (another number or an operator beside it) — ``N years old`` is both a quantity and an age;
- a span of only numbers is a NAME, SCHOOL or COURSE only as the number of a capitalised name
  right before it, which then joins the span ("IS 384", "MTH 250"); otherwise ("Uh-huh. 58.",
  "there are 83 adults") it is dropped;
- a number is an AGE only with evidence of one: "I'm 12", "turning 9", "12 years old", an age
  word in the message ("birthday", "old"), a question about age just before, a PII cue, or a
  capitalised name right before it (a mislabelled "IS 70"); "I got 15" and "this is 13" are
  answers;
- already-anonymised placeholders (``Student A``, ``[STUDENT]``) and spans inside them are not
  PII;
- under the ``strict`` policy a name that occurs in the dialogue's anchor text (the word problem)
  is a problem character and is dropped; under ``recall_first`` it stays (potential PII).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.maths import (
    has_pii_cue,
    in_math_context,
    is_placeholder,
)
from pipeline.types import Dialogue, Span

POLICIES = ("strict", "recall_first")
TEXTUAL_LABELS = frozenset({"EMAIL", "URL", "USERNAME"})
_DIGIT = re.compile(r"\d")
_AGE_UNIT = re.compile(r"\s*-?\s*(?:years?|yrs?|y/?o|months?)\b", re.IGNORECASE)
_FILLER = r"(?:um+|uh+|hm+|no|yes|yeah|ok|okay|so|oh|well|i|think|it|is|it's|its|it’s|the|answer|" \
    r"going|to|be|maybe|like|equals|is it|i got|got|was|=|:|,)"
_BARE_NUMBER = re.compile(
    rf"^\s*(?:{_FILLER}\s*)*[$£€]?\s*[\d.,:/%\s-]*\d[\d.,:/%\s-]*[a-zA-Z]{{0,3}}[\s.!?]*$",
    re.IGNORECASE,
)
_REFERENCE_BEFORE = re.compile(
    r"\b(?:page|pages|pg|p\.|chapter|ch\.|lesson|problem|question|exercise|section|unit|step|"
    r"slide|worksheet|level|row|column|line|box|part|grade)\s*#?\s*$",
    re.IGNORECASE,
)
_NUMBER_RUN = re.compile(r"\d+(?:\.\d+)?")
_ASKS_AGE = re.compile(
    r"\b(?:how old are (?:you|u)|your age|ur age|(?:you|u) turn|(?:your|ur) (?:birthday|bday)|"
    r"when were (?:you|u) born)",
    re.IGNORECASE,
)
_AGE_CUE_BEFORE = re.compile(
    r"\b(?:i'?m|i’m|im|i am|(?:he|she)(?:'s|’s| is)|turn(?:s|ed|ing)?)"
    r"\s+(?:only\s+|just\s+|almost\s+|nearly\s+)?$",
    re.IGNORECASE,
)
_AGE_WORDS = re.compile(r"\b(?:old|age[ds]?|birthday|b-?day|born)\b", re.IGNORECASE)
NEVER_NUMERIC = frozenset({"NAME", "SCHOOL", "COURSE"})
_LETTER = re.compile(r"[^\W\d_]")
_NAME_BEFORE = re.compile(r"(?<![\w.])[A-Z][A-Za-z]*\.?\s+$")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_OPERATOR = re.compile(r"[+*/×÷=^<>]|\d\s*[xX-]\s*\d")
_PLACEHOLDER_BEFORE = re.compile(
    r"(?:student|teacher|tutor|speaker|person|parent|child|kid|pupil|learner|user|participant)"
    r"[\s_\-]?$",
    re.IGNORECASE,
)


def anchor_words(anchor: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(anchor))


def is_placeholder_span(text: str, start: int, end: int) -> bool:
    """The span is, or sits inside, an anonymisation placeholder."""
    piece = text[start:end]
    if is_placeholder(piece):
        return True
    # "[STUDENT]" tagged without its brackets, or "A" of "Student A"
    lo = start - 1 if start > 0 and text[start - 1] in "[<{(" else start
    hi = end + 1 if end < len(text) and text[end] in "]>})" else end
    if (lo, hi) != (start, end) and is_placeholder(text[lo:hi]):
        return True
    before = text[max(0, start - 14) : start]
    m = _PLACEHOLDER_BEFORE.search(before)
    return bool(m and is_placeholder(before[m.start() :] + piece))


def _asks_for_pii(before: Sequence[str]) -> bool:
    """One of the messages before asks for a personal detail (phone, id, age, birthday …)."""
    return any(
        has_pii_cue(t, len(t), len(t), window=len(t)) or _ASKS_AGE.search(t) for t in before if t
    )


def is_reference(text: str, start: int) -> bool:
    """``page 49``, ``problem 12``, ``lesson 3``: a place in the material, not a person."""
    return bool(_REFERENCE_BEFORE.search(text[max(0, start - 16) : start]))


def is_number_sequence(piece: str) -> bool:
    """Skip counting and number patterns: four or more numbers with a constant difference
    (``40-60-80-100``, ``3, 6, 9, 12``). Phone and card numbers are not arithmetic runs."""
    nums = [float(x) for x in _NUMBER_RUN.findall(piece)]
    if len(nums) < 4:
        return False
    steps = {round(b - a, 6) for a, b in zip(nums, nums[1:], strict=False)}
    return len(steps) == 1 and 0 not in steps


def is_math_number(
    text: str, start: int, end: int, label: str, previous: Sequence[str] = ()
) -> bool:
    """Should a digit-bearing span be read as maths rather than PII?

    ``previous``: the messages just before (a bare number answers them: maths unless they asked
    for a personal detail).
    """
    if label in TEXTUAL_LABELS or not _DIGIT.search(text[start:end]):
        return False
    if is_number_sequence(text[start:end]):
        return True
    if is_reference(text, start) and not has_pii_cue(text, start, end, weak=False):
        return True
    if in_math_context(text, start, end):
        if label != "AGE" or not _AGE_UNIT.match(text, end):
            return True
        rest = text[:start] + " " + text[end:]
        return bool(_DIGIT.search(rest) or _OPERATOR.search(text))
    if isinstance(previous, str):
        previous = (previous,)
    return bool(
        _BARE_NUMBER.match(text)
        and not has_pii_cue(text, start, end)
        and not _asks_for_pii(previous)
    )


def has_age_evidence(text: str, start: int, end: int, previous: Sequence[str] = ()) -> bool:
    """Does anything mark the number ``text[start:end]`` as somebody's age?"""
    return bool(
        _AGE_CUE_BEFORE.search(text[max(0, start - 24) : start])
        or _AGE_UNIT.match(text, end)
        or _AGE_WORDS.search(text)
        or any(_ASKS_AGE.search(t) for t in previous if t)
    )


def named_number_start(text: str, start: int) -> int | None:
    """Where the capitalised word right before a number starts ("IS 384", "MTH 250"), or None."""
    lo = max(0, start - 24)
    m = _NAME_BEFORE.search(text[lo:start])
    return lo + m.start() if m else None


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
        if is_placeholder_span(text, span.start, span.end):
            continue
        if is_math_number(text, span.start, span.end, span.label, previous):
            continue
        piece = text[span.start : span.end]
        if span.label in NEVER_NUMERIC and not _LETTER.search(piece):
            named = named_number_start(text, span.start)
            if named is None:
                continue
            span = Span(named, span.end, span.label, span.score, span.source)
        elif (
            span.label == "AGE"
            and _DIGIT.search(piece)
            and not has_age_evidence(text, span.start, span.end, previous)
            and not has_pii_cue(text, span.start, span.end)
            and named_number_start(text, span.start) is None
        ):
            continue
        if policy == "strict" and span.label == "NAME" and anchor_vocab:
            words = [w.lower() for w in _WORD.findall(text[span.start : span.end])]
            if words and all(w in anchor_vocab for w in words):
                continue
        kept.append(span)
    return kept
