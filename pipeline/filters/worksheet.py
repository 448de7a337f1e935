"""Worksheet characters: the people a quoted worksheet question is about ("Which equation shows that
Priya's answer is incorrect?", "What method does Dev use?", "according to Rosa's rules").
Tutoring platforms paste the question into the chat; its characters are content, not PII. Whether
a name is one is decided for the whole dialogue by
:func:`pipeline.filters.name_filters.story_characters`, which keeps anyone spoken to or heard from
anywhere.
"""

from __future__ import annotations

import re

from pipeline.filters import register

# what a worksheet says its characters made or did ("Jason's answer", "Petes model", "Timothy's rules")
_TASK_NOUN = (
    r"(?:answers?|rules?|models?|methods?|strateg(?:y|ies)|solutions?|work|equations?|"
    r"expressions?|claims?|statements?|patterns?|graphs?|tables?|reasoning|steps?|mistakes?|"
    r"errors?|drawings?|diagrams?|number\s+lines?)"
)
# a question that opens on what it asks for, "Which equation …", "What method …" (never "What did
# you …", "Which of …", "Which one …"): the form of a worksheet's question, not of a question put
# to someone
_QUIZ_OPENING_RE = re.compile(
    r"^\W*(?:which|what)\s+(?!(?:did|do|does|is|are|was|were|can|could|should|would|will|you|we|"
    r"i|if|of|about|else|happened|happens|one|ones|way|time)\b)[a-z]+\b",
    re.IGNORECASE,
)
_AUXILIARY_BEFORE_RE = re.compile(r"\b(?:does|did|do|would|will|should|can|could)\s+$", re.IGNORECASE)
# a worksheet's frame around a character's work: "according to Rosa's rules", "represented
# by Pete's model", "described as Marqui's ray"
_FRAME_BEFORE_RE = re.compile(
    r"\b(?:according\s+to|represented\s+by|described\s+as|shown\s+by|modell?ed\s+by)\s+$",
    re.IGNORECASE,
)
# a verdict on a character's work: "Priya's answer is incorrect", "Rosa's rule could be that …"
_VERDICT_AFTER_RE = re.compile(
    rf"^\s*{_TASK_NOUN}\s+(?:(?:is|was|are|were)\s+(?:not\s+)?(?:correct|incorrect|right|wrong|"
    r"true|false|reasonable|unreasonable)\b|(?:could|might|must|may)\s+be\b)",
    re.IGNORECASE,
)


def _possessive_rest(name: str, after: str) -> str | None:
    """What follows a possessive name ("'s answer …" → " answer …", and a plural-looking name
    without its apostrophe, "Petes model" → " model"), or ``None`` when the name is no possessive."""
    m = re.match(r"['’]s?(?=\s)", after)
    if m:
        return after[m.end() :]
    if name.lower().endswith("s") and re.match(rf"\s+{_TASK_NOUN}\b", after, re.IGNORECASE):
        return after
    return None


@register("name.worksheet_character", "1")
def is_worksheet_character(before: str, name: str, after: str) -> bool:
    """Is the name, in its sentence ``before`` + ``name`` + ``after``, a character a worksheet's
    question is about? A question that opens on what it asks for with the name as the owner of
    some work or the subject of its verb ("Which equation shows that Jason's answer is
    incorrect?", "What method does Dev use?"); the work in a worksheet's frame ("according to
    Timothy's rules", "described as Marqui's ray"); or a verdict on it ("Rosa's rule could be
    that …", "Priya's answer is incorrect"). Tutoring platforms quote these. Who the dialogue
    speaks to or hears from is decided elsewhere for the whole dialogue."""
    rest = _possessive_rest(name, after)
    owner_of_work = rest is not None and bool(re.match(rf"\s*{_TASK_NOUN}\b", rest, re.IGNORECASE))
    if "?" in after and _QUIZ_OPENING_RE.match(before) and (
        owner_of_work or _AUXILIARY_BEFORE_RE.search(before)
    ):
        return True
    if rest is None:
        return False
    return bool(_FRAME_BEFORE_RE.search(before)) or bool(_VERDICT_AFTER_RE.match(rest))
