""""Get X for this user" helpers: the one place that enforces roles, membership and ownership.

Views never look objects up by id themselves; they call these, which raise 404 for things the
user may not know exist and 403 for things they know of but may not touch.
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.http import Http404

from annotator.models import Assignment, Membership, Project, Role
from annotator.models.corpus import ROLE_RANK


def role_in(user, project: Project) -> str | None:
    """The user's role in ``project`` (superusers are admins everywhere), or None (a removed member too)."""
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return Role.ADMIN
    cache = getattr(user, "_blindspot_roles", None)
    if cache is None:
        cache = user._blindspot_roles = {}
    if project.pk not in cache:
        cache[project.pk] = (
            Membership.objects.filter(project=project, user=user, active=True).values_list("role", flat=True).first()
        )
    return cache[project.pk]


def has_role(user, project: Project, role: str) -> bool:
    current = role_in(user, project)
    return current is not None and ROLE_RANK[current] >= ROLE_RANK[role]


def projects_for(user):
    qs = Project.objects.all()
    return qs if user.is_superuser else qs.filter(memberships__user=user, memberships__active=True).distinct()


def project_for(user, slug: str, role: str = Role.ANNOTATOR) -> Project:
    """The project ``slug`` if ``user`` holds at least ``role`` in it: 404 for outsiders, 403 for too-low roles."""
    project = Project.objects.filter(slug=slug).first()
    if project is None or role_in(user, project) is None:
        raise Http404("No such project.")
    if not has_role(user, project, role):
        raise PermissionDenied(f"This page needs the {Role(role).label} role in {project.name}.")
    return project


def assignment_for(user, public_id) -> Assignment:
    """An annotator's own assignment; anybody else's is 404 (ids are random UUIDs besides)."""
    assignment = (
        Assignment.objects.select_related("project", "message", "message__dialogue")
        .filter(public_id=public_id, annotator=user)
        .first()
    )
    if assignment is None or role_in(user, assignment.project) is None:
        raise Http404("No such item in your queue.")
    return assignment
