"""Structured spans completed: a PHONE, EMAIL, URL, ID_NUMBER or USERNAME span grows to the whole
value its pattern matches around it before it is replaced.

A partial span ("201-7788" of "(555) 201-7788", ") 123-4567" from a tagger) would otherwise leave
part of the identifier in the release ("(555)"), where the leak check, which looks only for what
was marked, cannot see it. Phones are matched with ``phonenumbers`` (possible numbers, the
project's region), the rest with the rules detector's own patterns. A span that cuts through a
value no pattern completes (its edge touches more of the same kind of characters) is still
replaced as it is, and reported so a person can look (reason ``incomplete``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import phonenumbers

from pipeline.detectors.rules import _EMAIL_RE, _HANDLE_RE, _ID_TOKEN_RE, _URL_RE, _trim
from pipeline.types import Span

COMPLETION_RULES = "completion-1"
STRUCTURED_LABELS = ("PHONE", "EMAIL", "URL", "ID_NUMBER", "USERNAME")
_WINDOW = 40  # characters either side searched for the whole value
# what a value of each label is made of: a span edge next to one of these cuts the value
_BODY = {
    "PHONE": re.compile(r"[\d()+\-.]"),
    "EMAIL": re.compile(r"[\w.+%@-]"),
    "URL": re.compile(r"[\w./:?=&%~#@-]"),
    "ID_NUMBER": re.compile(r"[A-Za-z\d-]"),
    "USERNAME": re.compile(r"[\w.@-]"),
}
_USERNAME_TOKEN_RE = re.compile(r"@?[A-Za-z0-9_][A-Za-z0-9_.\-]*[A-Za-z0-9_]|@?[A-Za-z0-9_]")


def _phones(text: str, region: str) -> Iterator[tuple[int, int]]:
    for m in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.POSSIBLE):
        yield m.start, m.end
    # a bracketed area code phonenumbers did not join ("(555) 201-7788" with odd spacing)
    for m in re.finditer(r"\(\d{2,4}\)\s?\d{3}[\s.-]?\d{4}\b", text):
        yield m.span()


def _regex(pattern: re.Pattern[str], trim: bool = False) -> Callable[[str, str], Iterator[tuple[int, int]]]:
    def find(text: str, region: str) -> Iterator[tuple[int, int]]:
        for m in pattern.finditer(text):
            yield _trim(text, m.start(), m.end()) if trim else m.span()

    return find


_FINDERS: dict[str, list[Callable[[str, str], Iterator[tuple[int, int]]]]] = {
    "PHONE": [_phones],
    "EMAIL": [_regex(_EMAIL_RE)],
    "URL": [_regex(_URL_RE, trim=True)],
    "ID_NUMBER": [_regex(_ID_TOKEN_RE)],
    "USERNAME": [_regex(_HANDLE_RE), _regex(_USERNAME_TOKEN_RE)],
}


def _cuts(text: str, start: int, end: int, label: str) -> bool:
    """Does ``start..end`` stop in the middle of a value (a body character on either side)?"""
    body = _BODY[label]
    before = start > 0 and bool(body.match(text[start - 1])) and text[start - 1] not in ".-"
    after = end < len(text) and bool(body.match(text[end])) and not (
        text[end] in ".-" and (end + 1 == len(text) or text[end + 1].isspace())
    )
    return before or after


def complete_span(text: str, span: Span, *, region: str = "US") -> tuple[Span, bool]:
    """``span`` grown to the whole structured value around it, and whether it is complete.

    Other labels come back as they are (complete). The grown span keeps the label, score and
    source; it only grows, never shrinks, and only by a match that overlaps the span.
    """
    if span.label not in _FINDERS:
        return span, True
    lo, hi = max(0, span.start - _WINDOW), min(len(text), span.end + _WINDOW)
    window = text[lo:hi]
    start, end = span.start, span.end
    for finder in _FINDERS[span.label]:
        for s, e in finder(window, region):
            s, e = s + lo, e + lo
            if s < end and start < e:
                start, end = min(start, s), max(end, e)
    grown = span if (start, end) == (span.start, span.end) else Span(
        start, end, span.label, span.score, span.source
    )
    return grown, not _cuts(text, start, end, span.label)
