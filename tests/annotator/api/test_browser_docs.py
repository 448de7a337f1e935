"""The API's browsable page works in Chromium under the site's Content Security Policy: its
scripts are served locally, it reads the schema and lists every operation, and nothing is blocked."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_browsable_page_lists_the_operations_under_the_policy(live_server, browser_page):
    page = browser_page
    violations, errors = [], []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    response = page.goto(f"{live_server.url}/api/v1/docs/")
    assert response.status == 200 and "default-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector(".opblock")
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert len(paths) == 19 and any("/api/v1/projects/{slug}/imports/" in p for p in paths)
    assert not errors and not violations, violations + errors
