"""Blindspot's middleware: the Content Security Policy on every response (django-csp), Django's
debug pages included; and what a request does while the message broker is away."""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import asdict

from csp.constants import HEADER, UNSAFE_INLINE
from csp.middleware import CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.contrib import messages
from django.db import DatabaseError

from annotator.dispatch import redispatch_undelivered, undelivered_in_request
from annotator.selectors.figures import one_revision

logger = logging.getLogger(__name__)


class PolicyEverywhereMiddleware(CSPMiddleware):
    """django-csp sends no policy with 404 and 500 responses while DEBUG is on, so that Django's
    technical error pages, which carry inline style and script, render. Those pages get the
    project's policy here, with inline style and script allowed and nothing else widened: no
    response leaves without a policy, and the debug pages stay readable. Placed above WhiteNoise
    in MIDDLEWARE so that static files carry the policy too."""

    def process_response(self, request, response):
        if settings.DEBUG and response.status_code in (404, 500) and HEADER not in response:
            parts = self.get_policy_parts(request=request, response=response)
            parts.update = {**(parts.update or {}), "style-src": [UNSAFE_INLINE], "script-src": [UNSAFE_INLINE]}
            response[HEADER] = build_policy(**asdict(parts))
        return super().process_response(request, response)


class BrokerAwayMiddleware:
    """While the broker is away: tell whoever started a job that it is queued but not yet with the
    workers (the job and its record are saved; the page answers, never a 500), and on page views
    (at most every :attr:`SWEEP_EVERY` seconds per process) send recorded tasks again, so jobs go
    on soon after the broker is back even without ``celery beat``."""

    SWEEP_EVERY = 15.0
    NOTICE = ("Queued; the workers are unreachable just now (the message broker does not answer). "
              "Nothing is lost: it is sent to them as soon as the broker is back.")

    def __init__(self, get_response):
        self.get_response = get_response
        self._next_sweep = 0.0
        self._lock = threading.Lock()

    def __call__(self, request):
        undelivered_in_request(reset=True)
        self._maybe_sweep()
        response = self.get_response(request)
        if undelivered_in_request(reset=True) and hasattr(request, "_messages"):
            messages.warning(request, self.NOTICE)
            if getattr(request, "htmx", False):  # a partial: say it now, too
                response.headers.setdefault("HX-Trigger", json.dumps({"blindspot:notice": self.NOTICE}))
        return response

    def _maybe_sweep(self) -> None:
        from annotator.celery import app

        if app.conf.task_always_eager:  # no broker: nothing is ever undelivered
            return
        now = time.monotonic()
        with self._lock:
            if now < self._next_sweep:
                return
            self._next_sweep = now + self.SWEEP_EVERY
        try:
            redispatch_undelivered()
        except DatabaseError:  # the page itself will say what is wrong with the database
            logger.exception("Could not sweep undelivered tasks")


class OneRevisionMiddleware:
    """A GET or HEAD request reads each project's revision once, however many cached figures its
    page shows (:func:`annotator.selectors.figures.one_revision`); other methods write, and read
    it afresh after their writes."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method not in ("GET", "HEAD"):
            return self.get_response(request)
        with one_revision():
            return self.get_response(request)
