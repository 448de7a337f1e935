"""Invitations: a project admin invites someone by e-mail or with a one-time link; accepting it
joins the project with the invited role, creating the account first when the person has none.

A link is a random token; only its hash is stored (``selectors.invitations.token_hash``). It works
once, until it expires (``BLINDSPOT_INVITATION_DAYS``), and accepting it locks its row, so two
tabs cannot both use it. An invitation never grants more than the project's admin role, and only
a project admin (or a superuser) creates one.

A link carries its sender's authority, so it works only while the sender is still an active admin
of the project: removing an admin closes the links they handed out (they could otherwise open
their own link and be admin again). An admin revokes an open invitation from the People page. An
invitation sent to an address joins only the account with that address (a link forwarded from
that mailbox to someone else's account does not), and a new account made from it gets that
address. Every step is audited."""

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
    "revoked": "This invitation link was revoked. Ask the project's admin for a new one.",
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


def invitation_revoke(*, invitation: Invitation, by) -> Invitation:
    """Close an open invitation: its link no longer works (an accepted one is left as it is)."""
    if not has_role(by, invitation.project, Role.ADMIN):
        raise InvitationError(f"Only an admin of {invitation.project.name} can revoke its invitations.")
    with transaction.atomic():
        invitation = Invitation.objects.select_for_update().get(pk=invitation.pk)
        state = invitation_state(invitation)
        if state != "open":
            raise InvitationError(REFUSED[state])
        invitation.revoked_at = timezone.now()
        invitation.save(update_fields=["revoked_at"])
        audit_record(user=by, action="invitation.revoke", obj=invitation, project=invitation.project,
                     role=invitation.role, email=invitation.email)
    return invitation


def _check_acceptable(invitation: Invitation | None, user) -> None:
    """Refuse a link that no longer works, whose sender is no longer an active admin of the
    project (admin being the highest role, the role it grants is never above theirs), or that was
    sent to another address."""
    state = invitation_state(invitation)
    if state != "open":
        raise InvitationError(REFUSED[state])
    sender, project = invitation.created_by, invitation.project
    if sender is None or not sender.is_active or not has_role(sender, project, Role.ADMIN):
        raise InvitationError(f"Whoever sent this link is no longer an admin of {project.name}, so it no "
                              "longer works. Ask one of its admins for a new one.")
    if invitation.email and invitation.email.casefold() != (user.email or "").casefold():
        raise InvitationError(f"This invitation is for {invitation.email}. Log in with the account that has "
                              "that address, or ask the project's admin to invite this account's address.")


def invitation_accept(*, token: str, user, new_account: bool = False) -> Invitation:
    """Use the link: ``user`` joins the project with the invited role (or keeps a higher one they
    already hold: an invitation never demotes). Refused, with the reason, when it no longer works
    or is not for ``user`` (``_check_acceptable``)."""
    with transaction.atomic():
        invitation = invitation_by_token(token, lock=True)
        _check_acceptable(invitation, user)
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
    one: a link that no longer works creates no account. An invitation sent to an address gives
    the account that address, whatever the form said."""
    with transaction.atomic():
        invitation = invitation_by_token(token)
        if invitation is not None and invitation.email:
            form.instance.email = invitation.email
        user = form.save()
        return invitation_accept(token=token, user=user, new_account=True)
