"""Fixtures of the API tests: a client per role that sends its own bearer token."""

from __future__ import annotations

import pytest
from django.test import Client

ROLES = ("admin", "adjudicator", "annotator", "outsider")


def bearer(user) -> Client:
    from annotator.services.api_tokens import token_create

    _, secret = token_create(user=user, name="test")
    client = Client(headers={"Authorization": f"Bearer {secret}"})
    client.secret = secret
    return client


@pytest.fixture
def api(members) -> dict[str, Client]:
    """A token client for admin, adjudicator, annotator and outsider (a member of no project), and
    ``anonymous`` without one."""
    return {**{who: bearer(members[who]) for who in ROLES}, "anonymous": Client()}


def post_json(client: Client, url: str, body: dict | None = None, **headers):
    return client.post(url, body or {}, content_type="application/json", headers=headers)
