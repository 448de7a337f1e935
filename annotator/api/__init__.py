"""The HTTP API for pipelines, under ``/api/v1/`` (docs/api.md): django-ninja, because it gives an
OpenAPI 3 document and a browsable page from the endpoints' own type hints, with little code
between a request and the services the pages call.

Every endpoint needs ``Authorization: Bearer <token>`` (``manage.py api_token``), is throttled per
token, and checks the role through :mod:`annotator.access`, as the pages do."""

from __future__ import annotations

from django.views.decorators.http import require_GET
from ninja import NinjaAPI

from annotator.api import exports, projects, reports, runs
from annotator.api.common import BearerToken, TokenThrottle, error_handlers

api = NinjaAPI(
    title="Blindspot API", version="1", urls_namespace="api", auth=BearerToken(), throttle=[TokenThrottle()],
    openapi_url="/schema/", docs_url="/docs/", docs_decorator=require_GET,
    description="Imports, detector runs, assignment plans, reports, exports and releases for pipelines. "
                "See docs/api.md.",
)
error_handlers(api)
for area in (projects, runs, reports, exports):
    api.add_router("", area.router)
