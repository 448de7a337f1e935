"""Projects and their members: every membership write goes through here (the People page, the
``add_member`` command, invitations and the Django admin alike), so each is audited and keeps the
member's role groups in step.

Membership changes in one project are serialised on the project's row (``_locked``), so two admins
demoting each other at once cannot leave a project without an admin, and a change made from a
page that showed an older role (``expected``) is refused instead of silently overwriting."""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.db import transaction
from django.utils.text import slugify

from annotator.models import Membership, Project, Role
from annotator.services.audit import audit_record

ROLE_GROUPS = {Role.ANNOTATOR: "Annotator", Role.ADJUDICATOR: "Adjudicator", Role.ADMIN: "Admin"}


class MembershipError(ValueError):
    """A membership change refused; the message says why and what to do instead."""


class MembershipConflict(MembershipError):
    """Someone else changed the membership since the page was shown."""


def project_create(*, name: str, slug: str = "", user=None, **fields) -> Project:
    project = Project(name=name, slug=slug or slugify(name)[:80], **fields)
    project.full_clean()
    with transaction.atomic():
        project.save()
        if user is not None:  # a superuser too: the members page lists who made it
            membership_set(project=project, user=user, role=Role.ADMIN, by=user)
        audit_record(user=user, action="project.create", obj=project, project=project)
    return project


def role_groups_sync(user) -> None:
    """The user's role groups are exactly those of the roles they hold in some project.

    The groups carry Django-admin rights and project creation (the Admin group), so a role
    taken away in the last project that gave it must take its group away too.
    """
    held = set(Membership.objects.filter(user=user, active=True).values_list("role", flat=True))
    wanted = {ROLE_GROUPS[Role(r)] for r in held}
    user.groups.remove(*Group.objects.filter(name__in=set(ROLE_GROUPS.values()) - wanted))
    user.groups.add(*(Group.objects.get_or_create(name=name)[0] for name in sorted(wanted)))


def _role(role: str) -> Role:
    """One of the project roles, or a clear refusal (nothing above admin exists to grant)."""
    if role not in Role.values:
        raise MembershipError(f"{role!r} is not a role; choose one of {', '.join(Role.values)}.")
    return Role(role)


def _locked(project: Project, user) -> Membership | None:
    """The user's membership, locked, after locking the project's row (one change at a time per project)."""
    list(Project.objects.select_for_update().filter(pk=project.pk).values_list("pk", flat=True))
    return Membership.objects.select_for_update().filter(project=project, user=user).first()


def _another_active_admin(project_id: int, user) -> bool:
    """Whether someone besides ``user`` is an admin of the project who can log in (a deactivated
    account manages nothing)."""
    return (Membership.objects.filter(project=project_id, role=Role.ADMIN, active=True, user__is_active=True)
            .exclude(user=user).exists())


def projects_only_admin_of(user) -> list[str]:
    """Names of the projects whose only active admin ``user`` is, their rows locked (call inside a
    transaction): switching the account off would leave them with nobody to manage their people."""
    held = Membership.objects.filter(user=user, role=Role.ADMIN, active=True).values("project_id")
    projects = list(Project.objects.select_for_update().filter(pk__in=held).order_by("pk").values_list("pk", "name"))
    return [name for pk, name in projects if not _another_active_admin(pk, user)]


def _keep_an_admin(membership: Membership, new_role: str | None) -> None:
    """Refuse to demote or remove a project's last active admin: nobody could manage its people after."""
    if not membership.active or membership.role != Role.ADMIN or new_role == Role.ADMIN:
        return
    if not _another_active_admin(membership.project_id, membership.user_id):
        raise MembershipError(f"{membership.user.username} is the last admin of {membership.project.name}: "
                              "make someone else admin first.")


def _check_expected(membership: Membership, expected: str | None) -> None:
    if expected is not None and membership.role != expected:
        raise MembershipConflict(
            f"Someone changed {membership.user.username}'s role to {membership.get_role_display()} "
            "meanwhile; nothing was saved. Check the list and try again.")


def membership_set(*, project: Project, user, role: str, by=None) -> Membership:
    """Give ``user`` ``role`` in ``project``, adding them (or adding them back) if need be."""
    role = _role(role)
    with transaction.atomic():
        membership = _locked(project, user)
        if membership is None:
            membership = Membership(project=project, user=user, role=role)
        else:
            _keep_an_admin(membership, role)
            membership.role, membership.active = role, True
        membership.save()
        if not membership.pseudonym:
            n = Membership.objects.filter(project=project).count()
            membership.pseudonym = f"A{n:02d}"
            membership.save(update_fields=["pseudonym"])
        role_groups_sync(user)
        audit_record(user=by, action="membership.set", obj=membership, project=project,
                     member=user.username, role=role)
    return membership


def membership_role_set(*, project: Project, user, role: str, by, expected: str | None = None) -> Membership:
    """Change a current member's role; ``expected`` is the role the page showed (a conflict if it moved)."""
    role = _role(role)
    with transaction.atomic():
        membership = _locked(project, user)
        if membership is None or not membership.active:
            raise MembershipError(f"{user.username} is not a member of {project.name}.")
        _check_expected(membership, expected)
        if membership.role == role:
            return membership
        _keep_an_admin(membership, role)
        was, membership.role = membership.role, role
        membership.save(update_fields=["role"])
        role_groups_sync(user)
        audit_record(user=by, action="membership.role_set", obj=membership, project=project,
                     member=user.username, role=role, was=was)
    return membership


def membership_remove(*, project: Project, user, by, expected: str | None = None) -> Membership:
    """Take ``user`` out of ``project``: no access from now on; the row and its pseudonym stay, so
    their past annotations are still attributed in exports and reports. Their account is untouched
    (``accounts.user_active_set`` is the staff's switch for that)."""
    with transaction.atomic():
        membership = _locked(project, user)
        if membership is None or not membership.active:
            raise MembershipError(f"{user.username} is not a member of {project.name}.")
        _check_expected(membership, expected)
        _keep_an_admin(membership, None)
        membership.active = False
        membership.save(update_fields=["active"])
        role_groups_sync(user)
        audit_record(user=by, action="membership.remove", obj=membership, project=project,
                     member=user.username, role=membership.role)
    return membership
