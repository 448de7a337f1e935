"""The Content Security Policy on every response (django-csp), Django's debug pages included."""

from __future__ import annotations

from dataclasses import asdict

from csp.constants import HEADER, UNSAFE_INLINE
from csp.middleware import CSPMiddleware
from csp.utils import build_policy
from django.conf import settings


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
