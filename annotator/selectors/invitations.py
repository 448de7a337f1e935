"""Invitations, read: the open ones of a project, and the one a link's token names."""

from __future__ import annotations

import hashlib

from django.utils import timezone

from annotator.models import Invitation, Project


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def invitations_open(project: Project):
    """Invitations of ``project`` not used and not expired, newest first."""
    return (Invitation.objects.filter(project=project, used_at__isnull=True, revoked_at__isnull=True,
                                      expires_at__gt=timezone.now())
            .select_related("created_by"))


def invitation_open(project: Project, invitation_id: int) -> Invitation | None:
    """One open invitation of ``project`` by id (None when it is another project's, or closed)."""
    return invitations_open(project).filter(pk=invitation_id).first()


def invitation_by_token(token: str, *, lock: bool = False) -> Invitation | None:
    """The invitation a link names (used or expired ones too: the page says which), or None."""
    qs = Invitation.objects.select_related("project")
    if lock:
        qs = qs.select_for_update(of=("self",))
    return qs.filter(token_hash=token_hash(token)).first()


def invitation_state(invitation: Invitation | None) -> str:
    """``"open"``, or why the link no longer works: ``"unknown"``, ``"used"``, ``"revoked"``,
    ``"expired"``."""
    if invitation is None:
        return "unknown"
    if invitation.used_at is not None:
        return "used"
    if invitation.revoked_at is not None:
        return "revoked"
    if invitation.expires_at <= timezone.now():
        return "expired"
    return "open"
