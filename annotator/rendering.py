"""Turn text plus spans into escaped HTML with coloured highlights (used by every span view).

Text is rendered as runs, ``<span class="run" data-from data-to>``, that carry the code-point
offsets of their characters: the browser's DOM is not the stored text (its HTML parser turns CRLF
and CR into LF and drops NUL; JavaScript counts UTF-16 units), so the workspace and adjudication
scripts map a selection to offsets from a run's own offset, never from ``textContent``
(static/js/offsets.js). The names differ from a mark's ``data-start``/``data-end`` on purpose.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

DEFAULT_COLOR = "#fde68a"


@dataclass(frozen=True)
class Mark:
    start: int
    end: int
    label: str
    css: str = "span"
    attrs: Mapping[str, str] | None = None


# What the HTML parser would not keep as it is: CR or CRLF (it becomes LF), NUL (dropped), other C0
# controls and DEL (invisible). Each gets a run of its own with a visible stand-in, so that the DOM
# text of every other run is exactly the stored text. Imports no longer let them in; old rows may.
_OPAQUE = re.compile(r"\r\n?|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _stand_in(chars: str) -> str:
    if chars.startswith("\r"):
        return "\n"
    return "\u2421" if chars == "\x7f" else chr(0x2400 + ord(chars))  # the Control Pictures block


def text_runs(text: str, start: int = 0, end: int | None = None) -> SafeString:
    """``text[start:end]`` as escaped runs carrying their code-point offsets in ``text``."""
    end = len(text) if end is None else end
    out: list[str] = []
    pos = start
    for m in _OPAQUE.finditer(text, start, end):
        if m.start() > pos:
            out.append(format_html('<span class="run" data-from="{}" data-to="{}">{}</span>',
                                   pos, m.start(), text[pos:m.start()]))
        out.append(format_html('<span class="run ctl" data-from="{}" data-to="{}" title="{}">{}</span>',
                               m.start(), m.end(), " ".join(f"U+{ord(c):04X}" for c in m.group()),
                               _stand_in(m.group())))
        pos = m.end()
    if pos < end:
        out.append(format_html('<span class="run" data-from="{}" data-to="{}">{}</span>', pos, end, text[pos:end]))
    return mark_safe("".join(out))


def layers(marks: Sequence[Mark]) -> list[int]:
    """Each mark's underline layer (by position in ``marks``): the lowest layer free of every mark
    that overlaps it so far, in start order, so overlapping marks never share a layer."""
    ends: list[int] = []  # the end of the last mark placed on each layer
    out = [0] * len(marks)
    for i in sorted(range(len(marks)), key=lambda i: (marks[i].start, -marks[i].end)):
        m = marks[i]
        layer = next((k for k, e in enumerate(ends) if e <= m.start), len(ends))
        if layer == len(ends):
            ends.append(m.end)
        ends[layer] = m.end
        out[i] = layer
    return out


def overlapping(marks: Sequence[Mark]) -> list[list[int]]:
    """For every mark (by position), the positions of the other marks that share a character with it."""
    order = sorted(range(len(marks)), key=lambda i: (marks[i].start, -marks[i].end))
    out: list[list[int]] = [[] for _ in marks]
    for n, i in enumerate(order):
        for j in order[n + 1:]:
            if marks[j].start >= marks[i].end:
                break
            out[i].append(j)
            out[j].append(i)
    for o in out:
        o.sort()
    return out


def context(text: str, start: int, end: int, width: int = 24) -> dict[str, str]:
    """``text[start:end]`` with up to ``width`` characters either side (cut at a space where one is
    near, "…" where text is left out), so a list entry says where its span sits in the message."""
    before, after = text[max(0, start - width):start], text[end:end + width]
    if start > width:
        cut = before.find(" ")
        before = "…" + (before[cut + 1:] if 0 <= cut < width // 2 else before)
    if end + width < len(text):
        cut = after.rfind(" ")
        after = (after[:cut] if cut > width // 2 else after) + "…"
    return {"before": before, "text": text[start:end], "after": after}


def highlight(text: str, marks: Iterable[Mark], colors: Mapping[str, str] | None = None) -> SafeString:
    """Marks become ``<mark>`` elements, overlapping ones included: a mark inside another nests in
    it, and a mark that crosses another's edge is split into parts (same attributes, the later ones
    ``data-part="cont"``, the label tag on the last only). Each carries ``data-layer`` (see
    :func:`layers`) so overlapping marks get stacked underlines, and ``data-overlaps`` (how many
    others it overlaps) when it has company. Empty marks and marks past the text are left out. The
    text between boundaries is :func:`text_runs`, so the runs' offset contract is unchanged.

    A mark's colour comes from its ``data-label`` through the project's label stylesheet
    (:func:`label_stylesheet`), never a style attribute, which the Content Security Policy refuses;
    ``colors`` is accepted for the callers' sake and not needed.
    """
    marks = [m for m in marks if 0 <= m.start < m.end <= len(text)]
    layer, company = layers(marks), overlapping(marks)
    starts: dict[int, list[int]] = {}
    for i, m in enumerate(marks):
        starts.setdefault(m.start, []).append(i)
    bounds = sorted({0, len(text), *(m.start for m in marks), *(m.end for m in marks)})
    out: list[str] = []
    stack: list[int] = []  # open <mark>s, outermost first
    opened = [0] * len(marks)

    def open_(i: int) -> None:
        m = marks[i]
        extra = "".join(format_html(' {}="{}"', k, v) for k, v in (m.attrs or {}).items())
        if company[i]:
            extra += format_html(' data-overlaps="{}"', len(company[i]))
        if opened[i]:
            extra += ' data-part="cont"'
        opened[i] += 1
        out.append(format_html('<mark class="{}" data-label="{}" data-start="{}" data-end="{}" data-layer="{}"{}>',
                               m.css, m.label, m.start, m.end, layer[i], mark_safe(extra)))

    for here, nxt in zip(bounds, [*bounds[1:], None], strict=True):
        reopen: list[int] = []
        ending = [n for n, i in enumerate(stack) if marks[i].end == here]
        if ending:  # close down to the outermost mark that ends here; reopen the others above it
            cut = ending[0]
            for i in reversed(stack[cut:]):
                if marks[i].end == here:
                    out.append(format_html('<span class="tag" aria-hidden="true">{}</span>', marks[i].label))
                out.append("</mark>")
            reopen = [i for i in stack[cut:] if marks[i].end != here]
            del stack[cut:]
        for i in sorted(reopen + starts.get(here, []), key=lambda i: (-marks[i].end, marks[i].start, i)):
            open_(i)
            stack.append(i)
        if nxt is not None:
            out.append(text_runs(text, here, nxt))
    return mark_safe("".join(out))


def taxonomy_colors(taxonomy: Iterable[Mapping]) -> dict[str, str]:
    """Label -> colour; a colour that is not ``#rrggbb`` (saved before it was validated) falls back."""
    from annotator.models.corpus import is_color

    return {d["label"]: d["color"] if is_color(d.get("color")) else DEFAULT_COLOR for d in taxonomy}


def _css_string(value: str) -> str:
    """``value`` as the inside of a quoted CSS string: anything but [A-Za-z0-9_-] as a hex escape."""
    return "".join(c if (c.isascii() and (c.isalnum() or c in "_-")) else f"\\{ord(c):x} " for c in value)


def label_stylesheet(taxonomy: Iterable[Mapping]) -> str:
    """The project's label colours as CSS: every element with ``data-label="X"`` gets ``--c``.

    Served by ``annotator.views.styles.label_styles`` so that no page needs an inline style; only
    ``#rrggbb`` colours are written (see :func:`taxonomy_colors`), and labels are escaped.
    """
    rules = [f"[data-label] {{ --c: {DEFAULT_COLOR}; }}"]
    rules += [f'[data-label="{_css_string(str(label))}"] {{ --c: {color}; }}'
              for label, color in taxonomy_colors(taxonomy).items()]
    return "\n".join(rules) + "\n"
