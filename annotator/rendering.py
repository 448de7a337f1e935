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
    """Non-overlapping marks become ``<mark>`` elements; overlapping later ones are skipped."""
    colors = colors or {}
    out: list[str] = []
    pos = 0
    for m in sorted(marks, key=lambda m: (m.start, -m.end)):
        if m.start < pos or m.end > len(text):
            continue
        out.append(escape(text[pos:m.start]))
        extra = "".join(format_html(' {}="{}"', k, v) for k, v in (m.attrs or {}).items())
        out.append(format_html(
            '<mark class="{}" data-label="{}" data-start="{}" data-end="{}" style="--c:{}"{}>{}'
            '<span class="tag" aria-hidden="true">{}</span></mark>',
            m.css, m.label, m.start, m.end, colors.get(m.label, "#fde68a"), mark_safe(extra),
            text[m.start:m.end], m.label,
        ))
        pos = m.end
    out.append(escape(text[pos:]))
    return mark_safe("".join(out))


def taxonomy_colors(taxonomy: Iterable[Mapping]) -> dict[str, str]:
    """Label -> colour; a colour that is not ``#rrggbb`` (saved before it was validated) falls back."""
    from annotator.models.corpus import is_color

    return {d["label"]: d["color"] if is_color(d.get("color")) else DEFAULT_COLOR for d in taxonomy}
