from __future__ import annotations

from django.contrib.auth.models import Group
from django.db import transaction
from django.utils.text import slugify

from annotator.models import Membership, Project, Role
from annotator.services.audit import audit_record

ROLE_GROUPS = {Role.ANNOTATOR: "Annotator", Role.ADJUDICATOR: "Adjudicator", Role.ADMIN: "Admin"}


def project_create(*, name: str, slug: str = "", user=None, **fields) -> Project:
    project = Project(name=name, slug=slug or slugify(name)[:80], **fields)
    project.full_clean()
    with transaction.atomic():
        project.save()
        if user is not None and not user.is_superuser:
            membership_set(project=project, user=user, role=Role.ADMIN, by=user)
        audit_record(user=user, action="project.create", obj=project, project=project)
    return project


def _groups_sync(user) -> None:
    """The user's role groups are exactly those of the roles they hold in some project.

    The groups carry Django-admin rights and project creation (the Admin group), so a role
    taken away in the last project that gave it must take its group away too.
    """
    held = set(Membership.objects.filter(user=user).values_list("role", flat=True))
    wanted = {ROLE_GROUPS[Role(r)] for r in held}
    user.groups.remove(*Group.objects.filter(name__in=set(ROLE_GROUPS.values()) - wanted))
    user.groups.add(*(Group.objects.get_or_create(name=name)[0] for name in sorted(wanted)))


def membership_set(*, project: Project, user, role: str, by=None) -> Membership:
    """Give ``user`` ``role`` in ``project``; their auth groups follow (see ``_groups_sync``)."""
    with transaction.atomic():
        membership, _ = Membership.objects.update_or_create(
            project=project, user=user, defaults={"role": role}
        )
        if not membership.pseudonym:
            n = Membership.objects.filter(project=project).count()
            membership.pseudonym = f"A{n:02d}"
            membership.save(update_fields=["pseudonym"])
        _groups_sync(user)
        audit_record(user=by, action="membership.set", obj=membership, project=project,
                     member=user.username, role=role)
    return membership
