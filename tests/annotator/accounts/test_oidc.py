"""Optional OpenID Connect login against a tiny local provider (token, userinfo and JWKS endpoints
on a stdlib HTTP server, RS256-signed ID tokens): a person logs in, gets an account with no role,
and joins a project only when invited. Off by default; on from the environment."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import clear_url_caches
from jwt.algorithms import RSAAlgorithm

from annotator.models import AuditEvent, Membership, Role

pytestmark = pytest.mark.django_db

CLIENT_ID, CLIENT_SECRET = "blindspot", "provider-secret"


class Provider:
    """The provider's side of the code flow; ``claims`` is what userinfo says about the person."""

    def __init__(self):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.jwk = {**json.loads(RSAAlgorithm.to_jwk(self.key.public_key())), "kid": "k1", "alg": "RS256"}
        self.nonce = None
        self.claims = {"sub": "u-123", "email": "sso.person@example.org", "email_verified": True}
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def id_token(self) -> str:
        now = int(time.time())
        claims = {"iss": self.url, "sub": self.claims["sub"], "aud": CLIENT_ID, "nonce": self.nonce,
                  "iat": now, "exp": now + 300}
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "k1"})

    def handler(self):
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def send(self, status: int, body: dict):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/jwks":
                    return self.send(200, {"keys": [provider.jwk]})
                if self.path == "/userinfo" and self.headers.get("Authorization") == "Bearer at-1":
                    return self.send(200, provider.claims)
                return self.send(401, {"error": "invalid_token"})

            def do_POST(self):
                form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                ok = (self.path == "/token" and form.get("code") == ["code-1"]
                      and form.get("client_id") == [CLIENT_ID] and form.get("client_secret") == [CLIENT_SECRET])
                if not ok:
                    return self.send(400, {"error": "invalid_grant"})
                return self.send(200, {"id_token": provider.id_token(), "access_token": "at-1",
                                       "token_type": "Bearer"})

            def log_message(self, *args):
                pass

        return Handler

    def environment(self) -> dict[str, str]:
        return {"OIDC_RP_CLIENT_ID": CLIENT_ID, "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
                "OIDC_OP_AUTHORIZATION_ENDPOINT": f"{self.url}/authorize",
                "OIDC_OP_TOKEN_ENDPOINT": f"{self.url}/token", "OIDC_OP_USER_ENDPOINT": f"{self.url}/userinfo",
                "OIDC_OP_JWKS_ENDPOINT": f"{self.url}/jwks"}


def settings_from(env: dict[str, str]) -> subprocess.CompletedProcess:
    """Import the real settings in a fresh process with only ``env`` (settings read it at import)."""
    code = ("import json, annotator.settings as s; print(json.dumps({k: getattr(s, k, None) for k in "
            "('BLINDSPOT_OIDC', 'AUTHENTICATION_BACKENDS', 'OIDC_OP_TOKEN_ENDPOINT', 'OIDC_RP_SIGN_ALGO')}))")
    base = {"PATH": os.environ.get("PATH", ""), "BLINDSPOT_ENV_FILE": "", "DEBUG": "1"}
    return subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
                          timeout=60)


@pytest.fixture
def provider():
    p = Provider()
    thread = threading.Thread(target=p.server.serve_forever, daemon=True)
    thread.start()
    yield p
    p.server.shutdown()
    p.server.server_close()


def _reload_urls():
    import annotator.urls

    importlib.reload(annotator.urls)
    clear_url_caches()


@pytest.fixture
def oidc_on(provider, settings):
    """The settings the environment gives (``settings_from`` proves the mapping), and the URLs."""
    for name, value in provider.environment().items():
        setattr(settings, name, value)
    settings.BLINDSPOT_OIDC, settings.OIDC_RP_SIGN_ALGO = True, "RS256"
    settings.OIDC_RP_SCOPES, settings.OIDC_REQUIRE_VERIFIED_EMAIL = "openid email profile", True
    settings.OIDC_USERNAME_ALGO = "annotator.services.accounts.oidc_username"
    settings.LOGIN_REDIRECT_URL_FAILURE = "/accounts/login/?sso=failed"
    settings.AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend",
                                        "annotator.services.accounts.OIDCBackend"]
    _reload_urls()
    yield provider
    settings.BLINDSPOT_OIDC = False
    _reload_urls()


def sso_login(provider: Provider, next_url: str = "") -> tuple[Client, object]:
    client = Client()
    start = client.get("/oidc/authenticate/" + (f"?next={next_url}" if next_url else ""))
    where = urlparse(start["Location"])
    assert start["Location"].startswith(provider.url + "/authorize?")
    query = parse_qs(where.query)
    assert query["client_id"] == [CLIENT_ID] and "openid" in query["scope"][0]
    provider.nonce = query["nonce"][0]
    return client, client.get(f"/oidc/callback/?code=code-1&state={query['state'][0]}")


def test_off_by_default_and_on_from_the_environment(client, provider):
    assert "single sign-on" not in client.get("/accounts/login/").content.decode()
    assert client.get("/oidc/authenticate/").status_code == 404
    on = settings_from(provider.environment())
    assert on.returncode == 0, on.stderr
    values = json.loads(on.stdout)
    assert values["BLINDSPOT_OIDC"] and values["OIDC_RP_SIGN_ALGO"] == "RS256"
    assert values["OIDC_OP_TOKEN_ENDPOINT"] == f"{provider.url}/token"
    assert "annotator.services.accounts.OIDCBackend" in values["AUTHENTICATION_BACKENDS"]
    half = settings_from({"OIDC_RP_CLIENT_ID": CLIENT_ID})
    assert half.returncode != 0 and "needs OIDC_RP_CLIENT_SECRET" in half.stderr
    assert json.loads(settings_from({}).stdout)["BLINDSPOT_OIDC"] is False


def test_a_person_logs_in_gets_no_role_until_invited(oidc_on, project, members):
    assert "Log in with single sign-on" in Client().get("/accounts/login/").content.decode()
    client, done = sso_login(oidc_on)
    assert done.status_code == 302 and done["Location"] == "/"
    user = get_user_model().objects.get(email="sso.person@example.org")
    assert user.username == "sso.person" and not user.has_usable_password()
    assert not Membership.objects.filter(user=user).exists() and not user.groups.exists()
    assert AuditEvent.objects.filter(action="user.create_oidc", details__member="sso.person").exists()
    assert client.get(f"/p/{project.slug}/").status_code == 404  # no role: the project is not there
    from annotator.services.invitations import invitation_create

    _, token = invitation_create(project=project, role=Role.ANNOTATOR, by=members["admin"], link_for=str)
    assert client.post(f"/invitations/{token}/").status_code == 302
    assert client.get(f"/p/{project.slug}/").status_code == 200
    again, done = sso_login(oidc_on)  # the next login finds the same account
    assert get_user_model().objects.filter(email="sso.person@example.org").count() == 1


def test_an_unverified_address_does_not_log_in(oidc_on):
    oidc_on.claims["email_verified"] = False
    client, done = sso_login(oidc_on)
    assert done["Location"] == "/accounts/login/?sso=failed"
    assert not get_user_model().objects.filter(email="sso.person@example.org").exists()
    assert "did not log you in" in client.get(done["Location"]).content.decode()


def test_a_staff_account_with_the_same_address_is_never_taken_over(oidc_on, django_user_model):
    root = django_user_model.objects.create_superuser("root", email="sso.person@example.org", password="pw")
    client, done = sso_login(oidc_on)
    assert int(client.session["_auth_user_id"]) != root.pk
