"""A real HTTP receiver on 127.0.0.1 (a thread) that answers with the status codes it is given and
records what it got; and loopback allowed for webhooks, as a deployment would allow a network."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Receiver:
    url: str
    answers: list[int] = field(default_factory=list)  # status codes to answer, in turn; then 200
    got: list[dict] = field(default_factory=list)


@pytest.fixture
def receiver():
    state = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 -- http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state.got.append({"path": self.path, "headers": dict(self.headers), "body": body,
                              "at": time.monotonic()})
            self.send_response(state.answers.pop(0) if state.answers else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/blindspot?k=1"
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def loopback_allowed(settings):
    """The test receiver's network, allowed explicitly (nothing else is)."""
    settings.BLINDSPOT_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]


@pytest.fixture
def hook_for(members):
    """A hook of ``project`` (created directly: registration's own checks are tested apart)."""
    from annotator.models import Webhook, WebhookEvent

    def make(project, url, events=tuple(WebhookEvent.values)):
        return Webhook.objects.create(project=project, url=url, events=list(events), secret="whsec_s3cret",
                                      site_url="http://testserver", created_by=members["admin"])

    return make
