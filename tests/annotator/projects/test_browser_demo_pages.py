"""After ``demo_setup`` every project page shows content: a new user sees the tool working.

Chromium logs in as the demo's admin, adjudicator and an annotator, opens every page the project
navigation links to (and the report tabs those pages link to) and finds no empty-state message
where the demo has data, no server error and no Content Security Policy violation.
"""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The empty states of the templates (grep 'class="empty' and "yet" in templates/), each of which
# the demo has the data to avoid. "No trained version yet" (Tagger page) is not here: the demo
# trains a tagger only with --train-tagger, which this test leaves out to stay fast.
EMPTY_STATES = (
    "No agreement report yet", "Nothing computed yet", "No circularity report yet",
    "No finished detector run to check yet", "No gold set or no finished detector run",
    "No runs yet", "No exports yet", "No members yet", "No plans yet", "No assignment plan yet",
    "No assignments yet", "Nothing waits for adjudication",
    "No item has been adjudicated yet", "No dialogues", "No breakdown", "No spans.",
    "not merged into gold yet", "no agreement report yet", "No annotator marked anything",
)
# Only annotators have a queue in the demo (the admin and the adjudicator label nothing).
ANNOTATOR_EMPTY_STATES = ("Nothing is assigned to you", "No items.")
DOWNLOAD = re.compile(r"\.(csv|json|jsonl|css)$")


@pytest.fixture
def demo(db):
    call_command("demo_setup")


def _login(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/?next=/p/demo/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", "blindspot-demo")
    page.click("form button.primary")
    page.wait_for_url(f"{live_server.url}/p/demo/")


def _links(page, selector: str) -> list[str]:
    hrefs = page.eval_on_selector_all(selector, "els => els.map(e => e.getAttribute('href'))")
    return [h for h in hrefs if h and h.startswith("/p/demo/") and not DOWNLOAD.search(h)]


@pytest.mark.parametrize(("username", "at_least"), [("admin", 12), ("adjudicator", 6), ("annotator1", 2)])
def test_every_demo_page_shows_content_for_the_role(live_server, browser_page, demo, username,
                                                     at_least):
    page = browser_page
    violations, errors = [], []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    _login(page, live_server, username)
    todo = _links(page, "nav.projnav a")
    seen: set[str] = set()
    problems = []
    while todo:
        href = todo.pop(0)
        if href in seen:
            continue
        seen.add(href)
        response = page.goto(f"{live_server.url}{href}")
        page.wait_for_load_state("networkidle")
        if response is None or response.status >= 400:
            problems.append(f"{href}: HTTP {response.status if response else 'none'}")
            continue
        text = page.inner_text("main") if page.locator("main").count() else page.inner_text("body")
        empty = EMPTY_STATES + (ANNOTATOR_EMPTY_STATES if username.startswith("annotator") else ())
        problems += [f"{href}: “{s}”" for s in empty if s in text]
        todo += _links(page, "main a[href^='/p/demo/reports/']")  # the report tabs
    assert len(seen) >= at_least, sorted(seen)
    assert not problems, problems
    assert not violations and not errors, (violations, errors)
