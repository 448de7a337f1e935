"""Personal access tokens for the HTTP API: create (the secret is returned once), authenticate
(audited as last use), revoke; the API's throttles; and idempotency keys, so a retried POST does
not start a second job.

The throttles count in fixed windows with the cache's atomic increment (Redis ``INCR`` in
production), so concurrent requests of one token cannot all read the same count and all pass.
Invalid tokens are counted per client address, and an address over its budget is refused before
any token it sends is looked up; reaching the budget is audited once per address and window (the
refused requests are not, so a guesser cannot fill the audit table)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotator.models import ApiToken, IdempotencyKey
from annotator.services.audit import audit_record

TOKEN_START = "bs_"
# last use is written at most this often per token: every request would be a write otherwise
LAST_USED_EVERY = timedelta(seconds=60)


class TokenError(ValueError):
    """A token cannot be made as asked; the message is for the person asking."""


class IdempotencyConflict(ValueError):
    """The key was already used for another request."""


class IdempotencyMismatch(IdempotencyConflict):
    """The key's first request had another body: a replay must repeat it exactly."""


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def token_create(*, user, name: str = "", expires_days: int | None = None, by=None) -> tuple[ApiToken, str]:
    """A new token of ``user``: the row, and the secret to show once (never stored)."""
    if expires_days is not None and expires_days < 1:
        raise TokenError("A token expires after at least one day (or leave the expiry out).")
    if not user.is_active:
        raise TokenError(f"{user.username}'s account is deactivated.")
    prefix = secrets.token_hex(4)
    secret = f"{TOKEN_START}{prefix}_{secrets.token_urlsafe(32)}"
    expires = timezone.now() + timedelta(days=expires_days) if expires_days else None
    with transaction.atomic():
        token = ApiToken.objects.create(user=user, name=name[:100], prefix=prefix, token_hash=_digest(secret),
                                        expires_at=expires)
        audit_record(user=by or user, action="api_token.create", obj=token, owner=user.username, name=token.name,
                     expires_at=expires.isoformat() if expires else None)
    return token, secret


def token_authenticate(secret: str) -> ApiToken | None:
    """The live token ``secret`` names (not revoked, not expired, its user active), its last use
    recorded; None for anything else."""
    parts = secret.split("_")
    if len(parts) < 3 or not secret.startswith(TOKEN_START):
        return None
    token = ApiToken.objects.select_related("user").filter(prefix=parts[1]).first()
    now = timezone.now()
    if token is None or not hmac.compare_digest(token.token_hash, _digest(secret)):
        return None
    if token.revoked_at or (token.expires_at and token.expires_at <= now) or not token.user.is_active:
        return None
    if token.last_used_at is None or token.last_used_at < now - LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def rate_hit(key: str, seconds: int) -> tuple[int, int]:
    """Count one request against ``key`` in the current window of ``seconds``: the count so far
    (this one included) and the seconds until the window ends."""
    now = time.time()
    window, left = f"{key}:{int(now // seconds)}", max(1, int(seconds - now % seconds))
    cache.add(window, 0, seconds)
    try:
        return cache.incr(window), left
    except ValueError:  # the window's counter expired between add and incr
        cache.set(window, 1, seconds)
        return 1, left


def _failures_key(address: str) -> str:
    return f"blindspot:api-token-failures:{address}"


def api_address_wait(address: str) -> int | None:
    """Seconds ``address`` must wait because it sent too many invalid tokens, or None."""
    seconds = settings.BLINDSPOT_API_FAILURE_WINDOW_SECONDS
    now = time.time()
    count = cache.get(f"{_failures_key(address)}:{int(now // seconds)}", 0)
    if count < settings.BLINDSPOT_API_FAILURES_PER_ADDRESS:
        return None
    return max(1, int(seconds - now % seconds))


def api_token_failed(*, address: str) -> None:
    """Count an invalid token sent from ``address``; audited once, when the budget is reached."""
    seconds, limit = settings.BLINDSPOT_API_FAILURE_WINDOW_SECONDS, settings.BLINDSPOT_API_FAILURES_PER_ADDRESS
    count, _ = rate_hit(_failures_key(address), seconds)
    if count == limit:
        audit_record(user=None, action="api.auth_throttled", address=address, failures=count, seconds=seconds)


def token_revoke(*, token: ApiToken, by) -> ApiToken:
    """Revoke one of ``by``'s own tokens (a revoked one stays revoked)."""
    if token.revoked_at is None:
        with transaction.atomic():
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            audit_record(user=by, action="api_token.revoke", obj=token, name=token.name)
    return token


def idempotent_claim(*, user, key: str, route: str, request_hash: str) -> IdempotencyKey | None:
    """Claim ``key`` for this request: None when it is new (the caller answers, then
    :func:`idempotent_record`), else the stored answer of the earlier request. Refused
    (:class:`IdempotencyConflict`) when the key was used on another route, or its first request
    is still being answered (a concurrent twin must not start a second job); and
    (:class:`IdempotencyMismatch`) when the first request's body (``request_hash``) was another:
    answering it with the first job would hide that the second was never started."""
    try:
        with transaction.atomic():
            IdempotencyKey.objects.create(user=user, key=key, route=route[:300], request_hash=request_hash,
                                          status=0, body={})
        return None
    except IntegrityError:
        stored = IdempotencyKey.objects.get(user=user, key=key)
    if stored.route != route[:300]:
        raise IdempotencyConflict(f"The Idempotency-Key {key!r} was already used for {stored.route}.")
    if not stored.status:
        raise IdempotencyConflict(f"A request with the Idempotency-Key {key!r} is still being answered; "
                                  "ask again in a moment.")
    if stored.request_hash != request_hash:
        raise IdempotencyMismatch(f"The Idempotency-Key {key!r} was already used for another request to this "
                                  "URL, with another body; use a new key for a new request.")
    return stored


def idempotent_record(*, user, key: str, status: int, body: dict[str, Any]) -> None:
    """Keep the answer of the request that claimed ``key``."""
    IdempotencyKey.objects.filter(user=user, key=key).update(status=status, body=body)


def idempotent_release(*, user, key: str) -> None:
    """The claiming request was refused: the key is free again, for a corrected retry."""
    IdempotencyKey.objects.filter(user=user, key=key, status=0).delete()
