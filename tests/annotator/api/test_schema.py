"""The OpenAPI document: valid OpenAPI 3, and every endpoint of the API's URLconf is in it, with
its methods, the bearer scheme and the error answers; the browsable page is served locally."""

from __future__ import annotations

import re

import pytest
from django.urls import get_resolver
from openapi_spec_validator import validate

from tests.annotator.security.test_role_matrix import walk

pytestmark = pytest.mark.django_db
NOT_ENDPOINTS = {"openapi-json", "openapi-view", "api-root"}


def api_paths() -> set[str]:
    """Every API endpoint's path in OpenAPI's spelling (``{slug}``), from the URL resolver."""
    return {"/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
            for route, name, ns in walk(get_resolver().url_patterns) if ns == "api" and name not in NOT_ENDPOINTS}


def test_the_schema_is_valid_openapi_3_and_lists_every_path(client):
    response = client.get("/api/v1/schema/")
    assert response.status_code == 200
    schema = response.json()
    validate(schema)
    assert schema["openapi"].startswith("3.")
    assert set(schema["paths"]) == api_paths() and len(api_paths()) == 15


def test_every_operation_needs_the_bearer_token_and_documents_its_refusals(client):
    schema = client.get("/api/v1/schema/").json()
    assert schema["components"]["securitySchemes"]["BearerToken"] == {"type": "http", "scheme": "bearer"}
    operations = [(path, method, op) for path, item in schema["paths"].items() for method, op in item.items()]
    assert len(operations) == 19  # GET and POST on runs, exports, agreement and circularity
    for path, method, op in operations:
        assert op["security"] == [{"BearerToken": []}], (path, method)
        assert "401" in op["responses"] and op.get("description"), (path, method)
        if "{slug}" in path:
            assert {"403", "404"} <= set(op["responses"]), (path, method)


def test_the_browsable_page_serves_its_own_scripts(client):
    page = client.get("/api/v1/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in html and "cdn" not in html.lower()
    assert "/api/v1/schema/" in html
