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


def membership_set(*, project: Project, user, role: str, by=None) -> Membership:
    """Give ``user`` ``role`` in ``project`` and the matching auth group (for Django admin rights)."""
    with transaction.atomic():
        membership, _ = Membership.objects.update_or_create(
            project=project, user=user, defaults={"role": role}
        )
        if not membership.pseudonym:
            n = Membership.objects.filter(project=project).count()
            membership.pseudonym = f"A{n:02d}"
            membership.save(update_fields=["pseudonym"])
        group, _ = Group.objects.get_or_create(name=ROLE_GROUPS[Role(role)])
        user.groups.add(group)
        audit_record(user=by, action="membership.set", obj=membership, project=project,
                     member=user.username, role=role)
    return membership
