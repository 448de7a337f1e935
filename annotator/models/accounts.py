"""Invitations: how people join a project without anyone typing their username into a command."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.corpus import Project, Role


class Invitation(models.Model):
    """A one-time link to join ``project`` with ``role``, sent by e-mail or handed over.

    Only the token's SHA-256 is stored: the link itself exists only in the e-mail or on the
    inviting admin's screen, so a database reader cannot use an open invitation."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.ANNOTATOR)
    email = models.EmailField(blank=True, help_text="Where the link was sent; empty for a link handed over.")
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="+")
    revoked_at = models.DateTimeField(null=True, blank=True, help_text="Revoked by an admin: the link no longer works.")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=models.Q(role__in=Role.values), name="invitation_role_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.get_role_display()} in {self.project} for {self.email or 'a link'}"
