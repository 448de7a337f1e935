"""Reads of API tokens: a user's own, for their account page."""

from __future__ import annotations

from django.http import Http404
from django.utils import timezone

from annotator.models import ApiToken


def user_tokens(user) -> list[tuple[ApiToken, str]]:
    """The user's tokens, newest first, each with its state: active, expired or revoked."""
    now = timezone.now()
    return [(t, "revoked" if t.revoked_at else "expired" if t.expires_at and t.expires_at <= now else "active")
            for t in ApiToken.objects.filter(user=user)]


def user_token(user, token_id: int) -> ApiToken:
    """One of the user's own tokens; anybody else's is 404."""
    token = ApiToken.objects.filter(pk=token_id, user=user).first()
    if token is None:
        raise Http404("No such token of yours.")
    return token
