"""Invitations: a project admin invites someone by e-mail or with a one-time link; accepting it
joins the project with the invited role, creating the account first when the person has none.

A link is a random token; only its hash is stored (``selectors.invitations.token_hash``). It works
once, until it expires (``BLINDSPOT_INVITATION_DAYS``), and accepting it locks its row, so two
tabs cannot both use it. An invitation never grants more than the project's admin role, and only
a project admin (or a superuser) creates one. Every step is audited."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from annotator.access import has_role
from annotator.models import Invitation, Project, Role
from annotator.models.corpus import ROLE_RANK
from annotator.selectors.invitations import invitation_by_token, invitation_state, token_hash
from annotator.services.audit import audit_record
from annotator.services.projects import membership_set

REFUSED = {
    "unknown": "This invitation link is not valid. Ask the project's admin for a new one.",
    "used": "This invitation link has already been used. Ask the project's admin for a new one.",
    "expired": "This invitation link has expired. Ask the project's admin for a new one.",
}


class InvitationError(ValueError):
    """An invitation refused (who may invite, which role, a link that no longer works)."""


def invitation_create(*, project: Project, role: str, by, email: str = "",
                      link_for: Callable[[str], str]) -> tuple[Invitation, str]:
    """A new invitation and its link (``link_for(token)``); e-mailed when ``email`` is given.

    Returns the link too: shown once to the admin who asked for it, never stored."""
    if not has_role(by, project, Role.ADMIN):
        raise InvitationError(f"Only an admin of {project.name} can invite people to it.")
    if role not in Role.values:
        raise InvitationError(f"{role!r} is not a role; an invitation grants one of {', '.join(Role.values)}.")
    token = secrets.token_urlsafe(32)
    expires = timezone.now() + timedelta(days=settings.BLINDSPOT_INVITATION_DAYS)
    with transaction.atomic():
        invitation = Invitation.objects.create(project=project, role=role, email=email, created_by=by,
                                               token_hash=token_hash(token), expires_at=expires)
        audit_record(user=by, action="invitation.create", obj=invitation, project=project, role=role,
                     email=email, expires_at=expires.isoformat())
    link = link_for(token)
    if email:
        send_mail(subject=f"You are invited to {project.name} on Blindspot",
                  message=(f"{by.get_username()} invites you to annotate in {project.name} as "
                           f"{Role(role).label}.\n\nOpen this link to join (it works once, until "
                           f"{expires:%Y-%m-%d %H:%M} UTC):\n{link}\n"),
                  from_email=None, recipient_list=[email])
    return invitation, link


def invitation_accept(*, token: str, user, new_account: bool = False) -> Invitation:
    """Use the link: ``user`` joins the project with the invited role (or keeps a higher one they
    already hold: an invitation never demotes). Refused, with the reason, when used or expired."""
    with transaction.atomic():
        invitation = invitation_by_token(token, lock=True)
        state = invitation_state(invitation)
        if state != "open":
            raise InvitationError(REFUSED[state])
        project = invitation.project
        current = project.memberships.filter(user=user, active=True).values_list("role", flat=True).first()
        if current is None or ROLE_RANK[current] < ROLE_RANK[invitation.role]:
            membership_set(project=project, user=user, role=invitation.role, by=invitation.created_by)
        invitation.used_at, invitation.used_by = timezone.now(), user
        invitation.save(update_fields=["used_at", "used_by"])
        audit_record(user=user, action="invitation.accept", obj=invitation, project=project,
                     member=user.get_username(), role=invitation.role, kept=current, new_account=new_account)
    return invitation


def invitation_signup(*, token: str, form) -> Invitation:
    """Create the account a valid ``SignupForm`` describes and accept the invitation with it, as
    one: a link that no longer works creates no account."""
    with transaction.atomic():
        user = form.save()
        return invitation_accept(token=token, user=user, new_account=True)
