"""The workspace's panel on the project dashboard: the annotator's queue, the admin's plans."""

from __future__ import annotations

from django import template

from annotator import access
from annotator import selectors_workspace as sel
from annotator.models import AssignmentPlan, Role

register = template.Library()


@register.inclusion_tag("workspace/_panel.html", takes_context=True)
def workspace_panel(context):
    project = context["project"]
    user = context["request"].user
    is_admin = access.role_in(user, project) == Role.ADMIN
    out = {"project": project, "is_admin": is_admin, "mine": sel.queue_progress(user, project)}
    if is_admin:
        out["plan"] = AssignmentPlan.objects.filter(project=project).first()
        out["stats"] = sel.annotator_stats(project)
    return out
