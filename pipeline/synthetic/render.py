"""Segments, templates and chat-style noise: the small machinery every generated message goes through.

A message is built as a list of *segments* ``(text, label, tag)``. ``label`` is the gold PII label
(``None`` for plain text) and ``tag`` names a trap or a role ("fraction", "problem_character",
"placeholder") so that benchmarks can count what a detector should leave alone. Offsets are
computed only when the segments are joined, so no template ever writes a character offset by hand
and every gold span is exactly the PII string it labels.

Template syntax (compiled once, rendered many times):

- ``{slot}`` inserts the segments a context provides for ``slot`` (a list or a callable of the rng);
- ``{slot:lower}``, ``{slot:poss}``, ``{slot:cap}`` lower-case it, append a possessive ``'s`` outside
  the span, or capitalise its first letter; modifiers combine: ``{sname:lower:poss}``;
- ``{=hi|hey|hello}`` picks one alternative (an empty alternative is allowed: ``{=|!|!!}``).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from typing import Union

from pipeline.types import Span

Seg = tuple[str, Union[str, None], Union[str, None]]  # noqa: UP007 - a runtime alias
SlotValue = Union[Sequence[Seg], Callable[[random.Random], Sequence[Seg]]]  # noqa: UP007

KEEP_CASE = frozenset({"placeholder"})  # already-anonymised tokens keep their exact form
PUNCT_EDGE = " \t\n.,;:!?\"'()[]{}<>@#*"


def lit(text: str, tag: str | None = None) -> Seg:
    return (text, None, tag)


def pii(text: str, label: str, tag: str | None = None) -> Seg:
    return (text, label, tag)


@cache
def compile_template(template: str) -> tuple:
    """Parse a template into literal strings, ``("s", slot, mods)`` and ``("a", alternatives)``.

    Alternatives may nest and may contain slots: ``{=| in {city}|, near {hood}}``.
    """
    parts: list = []
    buf: list[str] = []
    i, n = 0, len(template)
    while i < n:
        c = template[i]
        if c != "{":
            if c == "}":
                raise ValueError(f"unbalanced '}}' in template {template!r}")
            buf.append(c)
            i += 1
            continue
        depth, j = 1, i + 1
        while j < n and depth:
            depth += {"{": 1, "}": -1}.get(template[j], 0)
            j += 1
        if depth:
            raise ValueError(f"unbalanced '{{' in template {template!r}")
        if buf:
            parts.append("".join(buf))
            buf = []
        body = template[i + 1 : j - 1]
        if body.startswith("="):
            parts.append(("a", tuple(compile_template(alt) for alt in _split_top(body[1:]))))
        else:
            name, *mods = body.split(":")
            parts.append(("s", name, tuple(mods)))
        i = j
    if buf:
        parts.append("".join(buf))
    return tuple(parts)


def _split_top(body: str) -> list[str]:
    """Split on ``|`` outside nested braces."""
    out, depth, start = [], 0, 0
    for k, c in enumerate(body):
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(body[start:k])
            start = k + 1
    out.append(body[start:])
    return out


def _apply_mods(segs: Sequence[Seg], mods: tuple[str, ...]) -> list[Seg]:
    out = list(segs)
    for mod in mods:
        if mod == "lower":
            out = [(t.lower(), lab, tag) if len(t.lower()) == len(t) else (t, lab, tag) for t, lab, tag in out]
        elif mod == "cap" and out:
            t, lab, tag = out[0]
            out[0] = (t[:1].upper() + t[1:], lab, tag)
        elif mod == "poss" and out:
            out.append(("'s", None, None))
        elif mod == "upper":
            out = [(t.upper(), lab, tag) if len(t.upper()) == len(t) else (t, lab, tag) for t, lab, tag in out]
        else:
            raise KeyError(f"unknown template modifier {mod!r}")
    return out


def render(template: str, ctx: Mapping[str, SlotValue], rng: random.Random) -> list[Seg]:
    """Render one template against a slot context; unknown slots raise ``KeyError`` (a bug)."""
    out: list[Seg] = []
    _render_parts(compile_template(template), ctx, rng, out)
    return out


def _render_parts(parts: tuple, ctx: Mapping[str, SlotValue], rng: random.Random, out: list[Seg]) -> None:
    for part in parts:
        if isinstance(part, str):
            out.append((part, None, None))
        elif part[0] == "a":
            _render_parts(rng.choice(part[1]), ctx, rng, out)
        else:
            value = ctx[part[1]]
            segs = value(rng) if callable(value) else value
            out.extend(_apply_mods(segs, part[2]) if part[2] else segs)


def pick(templates: Sequence[str], ctx: Mapping[str, SlotValue], rng: random.Random) -> list[Seg]:
    return render(rng.choice(templates), ctx, rng)


# --------------------------------------------------------------------------------------------
# chat-style noise (applied to literal segments only, so gold spans are never disturbed)

_MISSPELL: dict[str, tuple[str, ...]] = {
    "you": ("u", "u", "yu"),
    "your": ("ur", "yor"),
    "you're": ("ur", "youre"),
    "are": ("r",),
    "okay": ("ok", "k", "okk", "oki"),
    "ok": ("k", "okk", "okie"),
    "because": ("bc", "cuz", "becuase", "becasue"),
    "don't": ("dont", "dnt"),
    "i'm": ("im", "i'm"),
    "I'm": ("im", "Im", "i'm"),
    "what": ("wat", "wut", "whta"),
    "please": ("pls", "plz"),
    "thanks": ("thx", "thnks", "tanks", "ty"),
    "really": ("rly", "realy"),
    "know": ("kno", "knw"),
    "right": ("rite", "rigth"),
    "the": ("teh", "th"),
    "that": ("tht", "taht"),
    "think": ("thnk", "thikn"),
    "answer": ("anwser", "answr", "ansewr"),
    "divide": ("devide", "divid"),
    "multiply": ("multipy", "mutiply"),
    "fraction": ("fracton", "fration"),
    "equation": ("equasion", "eqaution"),
    "minus": ("minis", "mins"),
    "probably": ("prolly", "probaly"),
    "going": ("goin",),
    "want": ("wanna",),
    "sorry": ("sry", "sory", "soz"),
    "tomorrow": ("tmrw", "tomorow", "2morrow"),
    "tonight": ("tonite",),
    "homework": ("hw", "homwork"),
    "message": ("msg",),
    "number": ("numbr", "#"),
    "problem": ("prob", "problm"),
    "understand": ("undrstand", "understnad"),
    "confused": ("confusd", "confussed"),
    "wait": ("w8", "wiat"),
    "yes": ("ya", "yea", "yess", "yep"),
    "see": ("c",),
    "great": ("gr8",),
    "before": ("b4",),
    "with": ("w/", "wit"),
    "to": ("2", "too"),
    "for": ("4", "fr"),
    "got": ("gotta", "gt"),
}
_WORD = re.compile(r"[A-Za-z']+")
_MISSPELL_RE = re.compile(
    r"(?<![A-Za-z'])(?:" + "|".join(sorted((re.escape(w) for w in _MISSPELL), key=len, reverse=True)) + r")(?![A-Za-z'])",
    re.IGNORECASE,
)


def chat_noise(segs: list[Seg], rng: random.Random, level: float, *, words: bool = True) -> list[Seg]:
    """Misspell words, drop capitals and punctuation the way hurried students type.

    Only untagged literal segments are touched; a segment that carries a gold label or a trap tag
    keeps its exact text (but may be lower-cased with the whole message, as real chat is).
    ``words=False`` keeps the spelling (tutors type carefully but not always with capitals).
    """
    if level <= 0:
        return segs
    out: list[Seg] = []
    for text, label, tag in segs:
        if words and label is None and tag is None and text:
            def swap(m: re.Match, _rng=rng) -> str:
                word = m.group()
                alts = _MISSPELL.get(word) or _MISSPELL.get(word.lower())
                if alts and _rng.random() < level:
                    return _rng.choice(alts)
                return word

            text = _MISSPELL_RE.sub(swap, text)
            if rng.random() < level * 0.15:
                text = _typo(text, rng)
        out.append((text, label, tag))
    if rng.random() < level * 1.4:
        out = [
            (t.lower(), lab, tag) if tag not in KEEP_CASE and len(t.lower()) == len(t) else (t, lab, tag)
            for t, lab, tag in out
        ]
    if out and rng.random() < level:
        t, lab, tag = out[-1]
        if lab is None and tag is None and t.endswith((".", "!")) and len(t) > 1:
            out[-1] = (t[:-1], lab, tag)
    return out


def _typo(text: str, rng: random.Random) -> str:
    """Swap two neighbouring letters of one longer word."""
    words = [m for m in _WORD.finditer(text) if len(m.group()) >= 5]
    if not words:
        return text
    m = rng.choice(words)
    i = rng.randrange(m.start() + 1, m.end() - 2)
    return text[:i] + text[i + 1] + text[i] + text[i + 2 :]


# --------------------------------------------------------------------------------------------
# joining

def assemble(
    segs: Iterable[Seg], *, keep: Callable[[str, str | None], str | None] | None = None
) -> tuple[str, tuple[Span, ...], list[dict]]:
    """Join segments into ``(text, gold spans, trap records)``.

    ``keep(label, tag)`` maps a segment's label to the label it gets under the active policy
    (``None`` drops it); by default every label is kept.
    """
    parts: list[str] = []
    spans: list[Span] = []
    traps: list[dict] = []
    pos = 0
    for text, label, tag in segs:
        if not text:
            continue
        end = pos + len(text)
        final = keep(label, tag) if (keep is not None and label is not None) else label
        if final is not None:
            spans.append(Span(pos, end, final, source="synthetic"))
        if tag is not None:
            traps.append({"start": pos, "end": end, "kind": tag})
        parts.append(text)
        pos = end
    return "".join(parts), tuple(spans), traps


def check_span_text(text: str, span: Span) -> str:
    """The span's text, after checking it is in range and trimmed of spaces and edge punctuation."""
    span.check(text)
    piece = text[span.start : span.end]
    if piece != piece.strip() or not piece:
        raise ValueError(f"span {span} has surrounding white space: {piece!r}")
    first_ok = span.label == "PHONE" and piece[0] in "(+"
    if (piece[0] in PUNCT_EDGE and not first_ok) or piece[-1] in PUNCT_EDGE:
        raise ValueError(f"span {span} starts or ends with punctuation: {piece!r}")
    if piece.lower().endswith("'s") and span.label == "NAME":
        raise ValueError(f"span {span} includes a possessive: {piece!r}")
    return piece
