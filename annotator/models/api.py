"""What the HTTP API keeps: personal access tokens (only their hash) and the idempotency keys of
the requests that started jobs."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotator.models.fields import JSONField


class ApiToken(models.Model):
    """A personal access token: ``bs_<prefix>_<secret>`` is shown once; only its SHA-256 is kept,
    the prefix finds the row. Revoked or expired tokens stay, so the list says what happened."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:  # the throttle keys requests by this: one bucket per token
        return f"token {self.prefix}"


class IdempotencyKey(models.Model):
    """The answer to the first POST that carried ``Idempotency-Key: key`` for this user; the same
    key on the same route is answered with it again instead of starting a second job."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=200)
    route = models.CharField(max_length=300)
    request_hash = models.CharField(max_length=64, blank=True,
                                    help_text="SHA-256 of the first request's body: a replay must send the same.")
    status = models.PositiveSmallIntegerField()
    body = JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="idempotency_key_unique_per_user")]

    def __str__(self) -> str:
        return f"{self.key} ({self.route})"
