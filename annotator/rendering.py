"""Turn text plus spans into escaped HTML with coloured highlights (used by every span view)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

DEFAULT_COLOR = "#fde68a"


@dataclass(frozen=True)
class Mark:
    start: int
    end: int
    label: str
    css: str = "span"
    attrs: Mapping[str, str] | None = None


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
        out.append(escape(text[pos:m.start]))
        extra = "".join(format_html(' {}="{}"', k, v) for k, v in (m.attrs or {}).items())
        out.append(format_html(
            '<mark class="{}" data-label="{}" data-start="{}" data-end="{}"{}>{}'
            '<span class="tag" aria-hidden="true">{}</span></mark>',
            m.css, m.label, m.start, m.end, mark_safe(extra),
            text[m.start:m.end], m.label,
        ))
        pos = m.end
    out.append(escape(text[pos:]))
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
