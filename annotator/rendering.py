"""Turn text plus spans into escaped HTML with coloured highlights (used by every span view).

Text is rendered as runs, ``<span class="run" data-from data-to>``, that carry the code-point
offsets of their characters: the browser's DOM is not the stored text (its HTML parser turns CRLF
and CR into LF and drops NUL; JavaScript counts UTF-16 units), so the workspace and adjudication
scripts map a selection to offsets from a run's own offset, never from ``textContent``
(static/js/offsets.js). The names differ from a mark's ``data-start``/``data-end`` on purpose.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
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


def highlight(text: str, marks: Iterable[Mark], colors: Mapping[str, str] | None = None) -> SafeString:
    """Non-overlapping marks become ``<mark>`` elements; overlapping later ones are skipped.

    A mark's colour comes from its ``data-label`` through the project's label stylesheet
    (:func:`label_stylesheet`), never a style attribute, which the Content Security Policy refuses;
    ``colors`` is accepted for the callers' sake and not needed.
    """
    out: list[str] = []
    pos = 0
    for m in sorted(marks, key=lambda m: (m.start, -m.end)):
        if m.start < pos or m.end > len(text):
            continue
        out.append(text_runs(text, pos, m.start))
        extra = "".join(format_html(' {}="{}"', k, v) for k, v in (m.attrs or {}).items())
        out.append(format_html(
            '<mark class="{}" data-label="{}" data-start="{}" data-end="{}"{}>{}'
            '<span class="tag" aria-hidden="true">{}</span></mark>',
            m.css, m.label, m.start, m.end, mark_safe(extra),
            text_runs(text, m.start, m.end), m.label,
        ))
        pos = m.end
    out.append(text_runs(text, pos))
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
