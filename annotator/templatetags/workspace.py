"""The workspace's panel on the project dashboard: the annotator's queue, the admin's plans."""

from __future__ import annotations

from functools import lru_cache

from django import template
from django.utils.html import format_html
from django.utils.safestring import mark_safe

from annotator import access
from annotator.models import AssignmentPlan, Role
from annotator.selectors import workspace as sel
from annotator.selectors.keymap import key_name
from annotator.templatetags.blindspot import render_markdown

register = template.Library()


@register.inclusion_tag("workspace/_panel.html", takes_context=True)
def workspace_panel(context):
    project = context["project"]
    user = context["request"].user
    is_admin = access.role_in(user, project) == Role.ADMIN
    out = {"project": project, "is_admin": is_admin, "mine": sel.queue_progress(user, project)}
    if is_admin:
        out["plan"] = AssignmentPlan.objects.filter(project=project).first()
        out["stats"] = sel.annotator_stats(project, use_cache=True)
    return out


@lru_cache(maxsize=64)
def _guidelines(text: str) -> str:
    return render_markdown(text)


@register.simple_tag
def guidelines_html(project):
    """The project's guidelines as HTML, rendered once per text (the item page shows them on every item)."""
    return mark_safe(_guidelines(project.guidelines or ""))  # render_markdown escapes raw HTML


@register.simple_tag
def kbd(action):
    """The key of a workspace command as a hint on its button, from the one keymap."""
    return format_html("<kbd>{}</kbd>", key_name(action))


register.simple_tag(key_name, name="kbd_name")  # the same key as plain text (a title, a placeholder)
