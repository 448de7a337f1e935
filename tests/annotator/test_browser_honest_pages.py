"""Honest pages in Chromium: what only a browser sees. Every main page loads
with a clean console (no favicon 404, no Content Security Policy refusal, no failed request), and
a refused action's toast shows non-Latin-1 text as it was written."""

from __future__ import annotations

import pytest

from annotator.models import AdjudicationItem, DetectorRun, Dialogue, Message
from tests.annotator.helpers import msg

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NON_LATIN1 = "Jośko’s"


def _watch(page) -> list[str]:
    """Everything that would show as red in the console: errors, uncaught exceptions, failed loads.
    Not a request the test's next ``goto`` cut short (``net::ERR_ABORTED``): the browser asks for
    the favicon after the page is idle, and on a loaded machine the next page can start first. A
    favicon that is missing still fails as a 404, one the policy refuses as a console error."""
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("response", lambda r: problems.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None)
    page.on("requestfailed",
            lambda r: problems.append(f"failed {r.url}: {r.failure}") if r.failure != "net::ERR_ABORTED" else None)
    return problems


def _login(page, live_server, username: str, next_url: str = "/p/test/") -> None:
    page.goto(f"{live_server.url}/accounts/login/?next={next_url}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", f"pw-{username}")
    page.click("form button.primary")
    page.wait_for_url(f"{live_server.url}{next_url}")


def _main_pages(project) -> list[str]:
    dialogue = Dialogue.objects.filter(project=project).order_by("pk").first()
    run = DetectorRun.objects.filter(project=project).first()
    item = AdjudicationItem.objects.filter(project=project).first()
    pages = ["/", "/p/test/", "/p/test/settings/", "/p/test/members/", "/p/test/import/",
             "/p/test/dialogues/", f"/p/test/dialogues/{dialogue.pk}/", "/p/test/runs/",
             f"/p/test/runs/{run.pk}/", "/p/test/tagger/", "/p/test/assignments/", "/p/test/adjudication/",
             "/p/test/reports/agreement/", "/p/test/reports/detectors/", "/p/test/reports/circularity/",
             "/p/test/exports/"]
    return pages + ([f"/p/test/adjudication/{item.pk}/"] if item else [])


def test_the_main_pages_load_with_a_clean_console(live_server, browser_page, members, computed):
    page = browser_page
    problems = _watch(page)
    _login(page, live_server, "admin")
    for url in _main_pages(computed["project"]):
        page.goto(f"{live_server.url}{url}")
        page.wait_for_load_state("networkidle")
        assert page.locator("link[rel=icon]").count() == 1, url
    assert problems == []


def test_a_refusal_toast_shows_non_latin1_text(live_server, browser_page, members, computed):
    page = browser_page
    item = AdjudicationItem.objects.filter(project=computed["project"], status=AdjudicationItem.Status.OPEN).first()
    _login(page, live_server, "adjudicator")
    page.goto(f"{live_server.url}/p/test/adjudication/{item.pk}/")
    page.wait_for_load_state("networkidle")
    page.evaluate("""([url, version, label]) => htmx.ajax("POST", url,
                       {values: {version: version, span: "0:4:" + label}, swap: "none"})""",
                  [f"/p/test/adjudication/{item.pk}/decide/", item.version, NON_LATIN1])
    toast = page.locator("#toast")
    toast.wait_for(state="visible")
    assert NON_LATIN1 in toast.inner_text()


def test_the_dialogue_page_keeps_a_message_s_line_breaks(live_server, browser_page, members, corpus):
    page = browser_page
    message = msg(corpus, "d1", 1)
    Message.objects.filter(pk=message.pk).update(text="first line\nsecond line\n\n<b>not bold</b>")
    _login(page, live_server, "adjudicator")
    page.goto(f"{live_server.url}/p/test/dialogues/{message.dialogue_id}/")
    text = page.locator("ol.transcript li").nth(1).locator(".text")
    assert text.inner_text() == "first line\nsecond line\n\n<b>not bold</b>"
    assert text.locator("b").count() == 0
