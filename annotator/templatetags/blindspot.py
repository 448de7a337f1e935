from __future__ import annotations

import markdown as md
from django import template
from django.utils.safestring import mark_safe

register = template.Library()


@register.filter
def render_markdown(text: str) -> str:
    """Guidelines are written by project admins; raw HTML in them is escaped, not rendered."""
    converter = md.Markdown(extensions=["sane_lists", "tables"], output_format="html")
    converter.preprocessors.deregister("html_block")
    converter.inlinePatterns.deregister("html")
    return mark_safe(converter.convert(text or ""))


@register.filter
def percent(part, whole) -> int:
    try:
        return int(round(100 * float(part) / float(whole))) if float(whole) else 0
    except (TypeError, ValueError):
        return 0
